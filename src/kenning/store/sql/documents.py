"""Sources (indexed files) and chunks, in the `sources` and `chunks` tables of any SQL store.

Every row read back is checked: an index folder may come from anyone, and a line number that is a
blob would fail far from here (IndexDamaged names the row instead).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import astuple
from types import NoneType

from kenning.store.compact import DAMAGED_TEXT, DamagedText
from kenning.store.errors import IndexDamaged, StorageError, decoding
from kenning.store.records import (
    ChunkGroup,
    ChunkHead,
    ChunkRow,
    SourceRow,
    embedding_text,
    meta_json,
    read_meta,
    stored_meta_json,
    text_hash,
)
from kenning.store.sql.statements import SqlStatements
from kenning.store.text_blocks import BlockCache, body_in_block, plan_blocks

_SOURCE_COLS = "id, path, collection, kind, size, mtime_ns, content_hash, indexed_at, n_chunks"
# a chunk whose document is its file (most of them) keeps its document key empty: its file's path,
# read from `sources`, is the key (a chat log's windows, a note's sections each held the path again)
_DOC_KEY = "CASE WHEN c.doc_key = '' THEN s.path ELSE c.doc_key END"
_CHUNK_COLS = (
    f"c.id, c.source_id, c.ordinal, {_DOC_KEY}, c.title, c.start_line, c.end_line, c.page,"
    " c.time, c.meta, c.content_hash, s.path, {body}"
)
_HEAD_COLS = f"c.id, {_DOC_KEY}, c.title, s.path, c.start_line, c.end_line, c.page, c.time"
_WITH_SOURCE = "FROM chunks c JOIN sources s ON s.id = c.source_id"


def plain_ids(ids: Sequence[int]) -> list[int]:
    """Chunk ids as plain ints, as a driver binds them (numpy integers do not adapt)."""
    return [int(i) for i in ids]


class SqlDocuments(SqlStatements):
    """The Documents protocol. `_filter_columns` (kenning.store.sql.filters) adds the columns an
    engine's filter index keeps beside each chunk."""

    # ----------------------------------------------------------------------------- sources
    def source_by_path(self, path: str) -> SourceRow | None:
        row = self._run(f"SELECT {_SOURCE_COLS} FROM sources WHERE path = ?", (path,)).fetchone()
        return _source_row(row) if row else None

    def sources_by_paths(self, paths: Sequence[str]) -> dict[str, SourceRow]:
        rows = self._rows_in(f"SELECT {_SOURCE_COLS} FROM sources WHERE {{}}", "path", list(paths))
        return {row[1]: _source_row(row) for row in rows}

    def sources(self) -> list[SourceRow]:
        rows = self._run(f"SELECT {_SOURCE_COLS} FROM sources ORDER BY path{self.dialect.bytewise}")
        return [_source_row(r) for r in rows]

    def upsert_source(
        self, path: str, kind: str, size: int, mtime_ns: int, content_hash: str, collection: str
    ) -> int:
        self._require_txn()
        now = time.time()
        if self.dialect.returning:  # one statement, one round trip per indexed file
            return self._insert_id(
                "INSERT INTO sources(path, kind, size, mtime_ns, content_hash, indexed_at, collection)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET kind = excluded.kind,"
                " size = excluded.size, mtime_ns = excluded.mtime_ns, content_hash = excluded.content_hash,"
                " indexed_at = excluded.indexed_at, collection = excluded.collection",
                (path, kind, size, mtime_ns, content_hash, now, collection),
            )
        existing = self.source_by_path(path)
        if existing:
            self._run(
                "UPDATE sources SET kind = ?, size = ?, mtime_ns = ?, content_hash = ?, indexed_at = ?,"
                " collection = ? WHERE id = ?",
                (kind, size, mtime_ns, content_hash, now, collection, existing.id),
            )
            return existing.id
        return self._insert_id(
            "INSERT INTO sources(path, kind, size, mtime_ns, content_hash, indexed_at, collection)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (path, kind, size, mtime_ns, content_hash, now, collection),
        )

    def touch_source(self, source_id: int, size: int, mtime_ns: int, collection: str) -> None:
        self._require_txn()
        self._run(
            "UPDATE sources SET size = ?, mtime_ns = ?, collection = ? WHERE id = ?",
            (size, mtime_ns, collection, source_id),
        )

    def set_source_chunk_count(self, source_id: int, n: int) -> None:
        self._require_txn()
        self._run("UPDATE sources SET n_chunks = ? WHERE id = ?", (n, source_id))

    def delete_source(self, source_id: int) -> list[int]:
        self._require_txn()
        ids = [r[0] for r in self._run("SELECT id FROM chunks WHERE source_id = ? ORDER BY id", (source_id,))]
        self._remove_substrings(ids)
        blocks = self._blocks_of("source_id", [source_id])
        self._run("DELETE FROM chunks WHERE source_id = ?", (source_id,))
        self._drop_unused_blocks(blocks)
        self._run("DELETE FROM sources WHERE id = ?", (source_id,))
        return ids

    def collections(self) -> dict[str, int]:
        return dict(self._run("SELECT collection, count(*) FROM sources GROUP BY collection").fetchall())

    def collection_chunks(self) -> dict[str, int]:
        return dict(
            self._run(
                "SELECT s.collection, count(c.id) FROM sources s JOIN chunks c ON c.source_id = s.id"
                " GROUP BY s.collection"
            ).fetchall()
        )

    def rename_collection(self, old: str, new: str) -> int:
        self._require_txn()
        moved = self._run("UPDATE sources SET collection = ? WHERE collection = ?", (new, old)).rowcount
        self._run("UPDATE glossary_groups SET scope = ? WHERE scope = ?", (new, old))
        return moved

    def restore_source(self, row: SourceRow) -> None:
        self._require_txn()
        self._run(f"INSERT INTO sources({_SOURCE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", astuple(row))
        self.dialect.ids_follow(self.conn, "sources", row.id)

    # ----------------------------------------------------------------------------- chunks
    def chunk_hashes(self, source_id: int) -> list[tuple[int, str]]:
        rows = self._run(
            "SELECT id, content_hash FROM chunks WHERE source_id = ? ORDER BY ordinal", (source_id,)
        )
        return [tuple(r) for r in rows]

    def insert_chunks(
        self, source_id: int, items: Sequence[tuple], own_texts: Sequence[str] | None = None
    ) -> list[int]:
        """New chunks of one file, (ordinal, chunk, content hash) each, in one statement; their ids.
        Their bodies are stored together in compressed blocks (kenning.store.text_blocks).
        `own_texts`: each chunk's own text (kenning.store.records.own_text), when the caller has it."""
        self._require_txn()
        if not items:
            return []
        ids = self.dialect.new_ids(self.conn, "chunks", len(items))
        path = self._value("SELECT path FROM sources WHERE id = ?", (source_id,))
        self._write_chunks(source_id, path, ids, items, own_texts)
        return ids

    def restore_chunks(self, rows: Sequence[ChunkRow]) -> None:
        """Chunks copied from another store under their own ids (kenning.integrity.migrate); later
        new chunks' ids come after them. A file's rows that come together share blocks, as a write
        would have stored them."""
        self._require_txn()
        for source_id, run in itertools.groupby(rows, key=lambda r: r.source_id):
            chunks = list(run)
            items = [(r.ordinal, r, r.content_hash) for r in chunks]
            self._write_chunks(source_id, chunks[0].path, [r.id for r in chunks], items)
        if rows:
            self.dialect.ids_follow(self.conn, "chunks", max(r.id for r in rows))

    def _write_chunks(
        self, source_id: int, path: str | None, ids: list[int], items: Sequence[tuple], own_texts=None
    ) -> None:
        """Chunks of one file under the given ids, in one statement, their bodies in blocks."""
        bodies = self._stored_bodies(ids, [chunk.body for _, chunk, _ in items])
        names: list[str] = []
        rows = []
        for k, (ordinal, chunk, content_hash) in enumerate(items):
            own = own_texts[k] if own_texts is not None else None
            columns = {
                "id": ids[k],
                **self._chunk_columns(
                    source_id, ordinal, chunk, self._meta_text(chunk.meta), content_hash, path, own
                ),
                **bodies[k],
            }
            names = names or list(columns)
            rows.append([columns[name] for name in names])
        self._run_many(_insert("chunks", names), rows)
        if self.substring_index_enabled():
            self._add_substrings([(i, c.title, c.body) for i, (_, c, _) in zip(ids, items, strict=True)])

    def _meta_text(self, meta: dict) -> str:
        """A chunk's metadata as this index stores it (an index from before blocks: as written then)."""
        return stored_meta_json(meta) if self.text_blocks else meta_json(meta)

    def _stored_bodies(self, ids: list[int], bodies: list[str]) -> list[dict]:
        """Each body's columns: in a block written here (kenning.store.text_blocks), or in its row."""
        if not self.text_blocks:
            return [{"body": self.dialect.body_in(b)} for b in bodies]
        blocks, alone = plan_blocks(bodies)
        stored: list[dict] = [{} for _ in bodies]
        for i in alone:
            stored[i] = {"body": self.dialect.body_in(bodies[i]), "block": None, "block_start": None}
            stored[i]["block_end"] = None
        empty = self.dialect.body_in("")
        for block in blocks:
            members = [ids[i] for i in block.members]
            block_id = self._insert_id(
                "INSERT INTO text_blocks(first_chunk, last_chunk, data) VALUES (?, ?, ?)",
                (min(members), max(members), block.data),
            )
            for i, (start, end) in zip(block.members, block.spans, strict=True):
                stored[i] = {"body": empty, "block": block_id, "block_start": start, "block_end": end}
        return stored

    def _chunk_columns(
        self,
        source_id: int,
        ordinal: int,
        chunk,
        meta: str,
        content_hash: str,
        path: str | None,
        own: str | None = None,
    ) -> dict:
        """A chunk's row as column -> value (`chunk` a Chunk or a ChunkRow), its body's aside
        (`_stored_bodies`). `path`: its file's, which its document key is left empty for (_DOC_KEY).
        `own`: its own text, when the caller has it (`embedding_text`)."""
        return {
            "source_id": source_id,
            "ordinal": ordinal,
            # an index from before blocks (one this role may not upgrade) keeps an older kenning's rows
            "doc_key": "" if self.text_blocks and chunk.doc_key == path else chunk.doc_key,
            "title": self.dialect.text_in(chunk.title),
            "start_line": chunk.start_line,
            "end_line": chunk.end_line,
            "page": chunk.page,
            "time": chunk.time,
            "meta": meta,
            **self._filter_columns(meta),
            "content_hash": content_hash,
            "text_hash": text_hash(embedding_text(chunk.title, chunk.body, own)),
        }

    def move_chunk(self, chunk_id: int, ordinal: int, chunk) -> None:
        self._require_txn()
        self._run(
            "UPDATE chunks SET ordinal = ?, start_line = ?, end_line = ?, page = ?, time = ? WHERE id = ?",
            (ordinal, chunk.start_line, chunk.end_line, chunk.page, chunk.time, chunk_id),
        )

    def retime_chunks(self, source_id: int, old_time: float, new_time: float) -> None:
        self._require_txn()
        self._run(
            "UPDATE chunks SET time = ? WHERE source_id = ? AND abs(time - ?) < 0.000001",
            (new_time, source_id, old_time),
        )

    def delete_chunks(self, ids: list[int]) -> None:
        self._require_txn()
        self._remove_substrings(ids)
        blocks = self._blocks_of("id", plain_ids(ids))
        self._run_in("DELETE FROM chunks WHERE {}", "id", plain_ids(ids))
        self._drop_unused_blocks(blocks)

    @decoding("a chunk row")
    def _chunk_rows(self, where: str, params: Sequence) -> list[ChunkRow]:
        columns = _CHUNK_COLS.format(body=self._body_columns("c."))
        rows = self._run(f"SELECT {columns} {_WITH_SOURCE} WHERE {where}", params).fetchall()
        held = self._fetch_blocks(r[13] for r in rows)
        return [self._chunk_row(r, held) for r in rows]

    def _chunk_row(self, r: tuple, held: dict) -> ChunkRow:
        """A chunks row as a ChunkRow, checked (_check_types)."""
        row = (*r[:4], self.dialect.text_out(r[4]), self._body(r[0], *r[12:16], held=held), *r[5:9])
        _check_types(row, _CHUNK_TYPES)
        meta = json.loads(r[9])
        if not isinstance(meta, dict):
            raise IndexDamaged(f"chunk {r[0]}'s metadata is not a JSON object")
        return ChunkRow(*row, read_meta(meta), r[10], r[11])

    # ----------------------------------------------------------------------------- bodies
    text_blocks = False  # the index stores bodies in blocks (kenning.store.text_blocks); set on opening

    def _notice_text_blocks(self) -> None:
        """Called as each read or write starts: while this process has known the index not to store
        bodies in blocks, ask the engine (its connection's `_blocks_since_opened`) whether another
        process has upgraded it since."""
        if not self.text_blocks and self._blocks_since_opened():  # type: ignore[attr-defined]
            self.text_blocks = True

    def _body_columns(self, prefix: str = "") -> str:
        """The columns a body is read from: its row's, then its block's id and byte range."""
        if not self.text_blocks:  # an index from before blocks, read where it cannot be upgraded
            return f"{prefix}body, NULL, NULL, NULL"
        return f"{prefix}body, {prefix}block, {prefix}block_start, {prefix}block_end"

    @property
    def _block_cache(self) -> BlockCache:
        cache = self.__dict__.get("_blocks_read")
        if cache is None:
            cache = self.__dict__["_blocks_read"] = BlockCache()
        return cache

    def _load_blocks(self, block_ids: list[int]) -> dict[int, bytes]:
        """Stored (compressed) blocks by id."""
        rows = self._rows_in("SELECT id, data FROM text_blocks WHERE {}", "id", block_ids)
        return {int(block_id): data for block_id, data in rows}

    def _fetch_blocks(self, block_ids) -> dict[int, bytes]:
        """The blocks a batch of rows needs, read in one statement, for `_body(..., held=)`."""
        try:
            return self._block_cache.fetch(block_ids, self._load_blocks)
        except DAMAGED_TEXT:
            return {}  # each body whose block is damaged says so, naming its chunk (`_body`)

    def _body(self, chunk_id: int, stored, block=None, start=None, end=None, held=None) -> str:
        """A chunk's body as stored, in its row or in a block (`held`: blocks read for its batch);
        damaged bytes are a clear error."""
        try:
            if block is None:
                return self.dialect.body_out(stored)
            if not isinstance(block, int):
                raise DamagedText(f"its block id is a {type(block).__name__}")
            raw = held.get(block) if held else None
            if raw is None:
                raw = self._block_cache.get(block, self._load_blocks)
            return body_in_block(raw, start, end)
        except DAMAGED_TEXT as exc:
            raise StorageError(
                f"chunk {chunk_id}'s stored text is damaged ({exc}): run `kenning verify`, then"
                " `kenning repair`"
            ) from exc

    def _blocks_of(self, column: str, values: Sequence) -> list[int]:
        """The blocks holding the bodies of the chunks whose `column` is one of `values` (read
        before they are deleted)."""
        if not self.text_blocks:
            return []
        statement = "SELECT DISTINCT block FROM chunks WHERE {} AND block IS NOT NULL"
        return sorted({r[0] for r in self._rows_in(statement, column, values)})

    def _drop_unused_blocks(self, block_ids: list[int]) -> None:
        """Delete the blocks among `block_ids` that no chunk reads any more (only the ids a block was
        written for can read it, so the check reads those rows alone)."""
        self._run_in(
            "DELETE FROM text_blocks WHERE {} AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id BETWEEN"
            " text_blocks.first_chunk AND text_blocks.last_chunk AND c.block = text_blocks.id)",
            "id",
            block_ids,
        )

    def chunks_by_ids(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for condition, members in self.dialect.member_of("c.id", plain_ids(ids)):
            out.update((row.id, row) for row in self._chunk_rows(condition, members))
        return out

    def chunk_heads(self, ids: Sequence[int]) -> dict[int, ChunkHead]:
        ids = plain_ids(ids)
        return self._heads(ids, self._rows_in(f"SELECT {_HEAD_COLS} {_WITH_SOURCE} WHERE {{}}", "c.id", ids))

    def chunk_heads_and_groups(
        self, ids: Sequence[int]
    ) -> tuple[dict[int, ChunkHead], dict[int, ChunkGroup]]:
        """`chunk_heads` of `ids`, and the conversation and message ids of the message windows among
        them, in one statement: the dedup stage reads both, and a chat search's candidates are message
        windows of one file, whose groups it always needs."""
        window_meta = f"CASE WHEN {_window_meta('c.meta')} THEN c.meta END"
        ids = plain_ids(ids)
        rows = self._rows_in(f"SELECT {_HEAD_COLS}, {window_meta} {_WITH_SOURCE} WHERE {{}}", "c.id", ids)
        heads = self._heads(ids, [row[:-1] for row in rows])
        groups = {
            row[0]: group
            for row in rows
            if row[-1] is not None and (group := _group(row[0], row[-1])) is not None
        }
        return heads, groups

    def _heads(self, ids: list[int], rows: list) -> dict[int, ChunkHead]:
        """The heads of `ids` from their rows; a chunk asked for whose row, or whose file's, is not
        there is a damaged index (the searches ask only for live chunks)."""
        if self.dialect.converts_text:
            rows = [(*row[:2], self.dialect.text_out(row[2]), *row[3:]) for row in rows]
        _check_rows(rows, _HEAD_TYPES)
        heads = {row[0]: ChunkHead._make(row[1:]) for row in rows}
        if len(heads) < len(set(ids)):
            lost = min(set(ids) - set(heads))
            raise IndexDamaged(f"live chunk {lost} has no row, or its row names no indexed file")
        return heads

    def chunks_of_doc(self, doc_key: str) -> list[ChunkRow]:
        named = (
            self._chunk_rows("c.doc_key = ? ORDER BY c.source_id, c.ordinal", (doc_key,)) if doc_key else []
        )
        of_file = self._chunk_rows(
            "c.doc_key = '' AND c.source_id = (SELECT id FROM sources WHERE path = ?)"
            " ORDER BY c.source_id, c.ordinal",
            (doc_key,),
        )
        return (
            sorted([*named, *of_file], key=lambda r: (r.source_id, r.ordinal))
            if named and of_file
            else named or of_file
        )

    def chunk_texts(self, ids: Sequence[int]) -> list[str]:
        statement = f"SELECT id, title, {self._body_columns()} FROM chunks WHERE {{}}"
        rows = self._rows_in(statement, "id", plain_ids(ids))
        held = self._fetch_blocks(r[3] for r in rows)
        return [f"{self.dialect.text_out(r[1])}\n{self._body(r[0], *r[2:], held=held)}" for r in rows]

    def iter_chunk_texts(self) -> Iterator[tuple[int, str, str]]:
        rows = self.dialect.rows_by_id(self.conn, f"id, title, {self._body_columns()}")
        for chunk_id, title, *body in rows:
            yield chunk_id, self.dialect.text_out(title), self._body(chunk_id, *body)


def _insert(table: str, columns: dict) -> str:
    return f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _window_meta(column: str) -> str:
    """The condition that `column` holds a message window's metadata (the only kind whose group dedup
    reads), told apart without parsing it."""
    return f"({column} LIKE '%message_ids%' OR {column} LIKE '%\"messages\"%')"


def _group(cid: int, meta: str) -> ChunkGroup | None:
    """A message window's conversation and message ids, from its stored metadata; None for a chunk
    whose metadata only mentions messages."""
    with decoding(f"chunk {cid}'s metadata"):
        data = json.loads(meta)
    message_ids = read_meta(data).get("message_ids") if isinstance(data, dict) else None
    if message_ids is None:
        return None
    if not isinstance(message_ids, list):
        raise IndexDamaged(f"chunk {cid}'s message ids are not a list")
    return ChunkGroup(data.get("conversation"), message_ids)


_OPTIONAL_INT, _OPTIONAL_NUMBER = (int, NoneType), (int, float, NoneType)
# id, source, ordinal, doc key, title, body (checked by _body), lines, page, time
_CHUNK_TYPES = (int, int, int, str, str, None, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_NUMBER)
# id, doc key, title, path, lines, page, time
_HEAD_TYPES = (int, str, str, str, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_NUMBER)


def _check_rows(rows: list, types: tuple) -> None:
    """`_check_types` for a batch of rows: the few distinct column types among them are checked once
    each (a search reads twenty heads; checking each row's columns was a large share of that)."""
    for kinds in {tuple(map(type, row)) for row in rows}:
        if not all(kind is None or issubclass(got, kind) for got, kind in zip(kinds, types, strict=False)):
            for row in rows:
                _check_types(row, types)


# id, path, collection, kind, size, mtime, content hash, indexed at, chunks
_SOURCE_TYPES = (int, str, str, str, int, int, str, (int, float), _OPTIONAL_INT)


def _source_row(r: tuple) -> SourceRow:
    """A file's row as kenning writes it, else IndexDamaged (a count of text summed, a date of bytes)."""
    for value, kind in zip(r, _SOURCE_TYPES, strict=True):
        if not isinstance(value, kind):
            raise IndexDamaged(
                f"file {r[0]!r} holds a {type(value).__name__} where kenning writes {_named(kind)}"
            )
    return SourceRow(*r)


def _check_types(r: tuple, types: tuple) -> None:
    """Each column of a chunk's row of the type kenning writes, else IndexDamaged."""
    for value, kind in zip(r, types, strict=False):
        if kind is not None and not isinstance(value, kind):
            raise IndexDamaged(
                f"chunk {r[0]!r} holds a {type(value).__name__} where kenning writes {_named(kind)}"
            )


def _named(kind) -> str:
    """A type, or a tuple of types, as a message names them: "int or None"."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("None" if k is NoneType else k.__name__ for k in kinds)
