"""Sources (indexed files) and chunks in SQLite."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from types import NoneType

from kenning.store.compact import DAMAGED_TEXT, pack_text, unpack_text
from kenning.store.errors import IndexDamaged, StorageError, decoding
from kenning.store.records import (
    ChunkGroup,
    ChunkHead,
    ChunkRow,
    SourceRow,
    embedding_text,
    meta_json,
    text_hash,
)
from kenning.store.sqlite.connection import batches, marks

_SOURCE_COLS = "id, path, collection, kind, size, mtime_ns, content_hash, indexed_at, n_chunks"
_CHUNK_COLS = (
    "c.id, c.source_id, c.ordinal, c.doc_key, c.title, c.body, c.start_line, c.end_line, c.page,"
    " c.time, c.meta, c.content_hash, s.path"
)


class SqliteDocuments:
    """The Documents protocol over the `sources` and `chunks` tables (mixed into SqliteStore)."""

    conn: object

    # ----------------------------------------------------------------------------- sources
    def source_by_path(self, path: str) -> SourceRow | None:
        row = self.conn.execute(f"SELECT {_SOURCE_COLS} FROM sources WHERE path=?", (path,)).fetchone()
        return SourceRow(*row) if row else None

    def sources_by_paths(self, paths: Sequence[str]) -> dict[str, SourceRow]:
        """The sources of those paths that have one, by path (one query a batch, not one a path)."""
        found = {}
        for batch in batches(list(paths)):
            sql = f"SELECT {_SOURCE_COLS} FROM sources WHERE path IN ({marks(len(batch))})"
            found.update((row[1], SourceRow(*row)) for row in self.conn.execute(sql, batch))
        return found

    def sources(self) -> list[SourceRow]:
        return [SourceRow(*r) for r in self.conn.execute(f"SELECT {_SOURCE_COLS} FROM sources ORDER BY path")]

    def upsert_source(
        self, path: str, kind: str, size: int, mtime_ns: int, content_hash: str, collection: str
    ) -> int:
        self._require_txn()
        existing = self.source_by_path(path)
        now = time.time()
        if existing:
            self.conn.execute(
                "UPDATE sources SET kind=?, size=?, mtime_ns=?, content_hash=?, indexed_at=?, collection=?"
                " WHERE id=?",
                (kind, size, mtime_ns, content_hash, now, collection, existing.id),
            )
            return existing.id
        cur = self.conn.execute(
            "INSERT INTO sources(path, kind, size, mtime_ns, content_hash, indexed_at, collection)"
            " VALUES (?,?,?,?,?,?,?)",
            (path, kind, size, mtime_ns, content_hash, now, collection),
        )
        return int(cur.lastrowid)

    def touch_source(self, source_id: int, size: int, mtime_ns: int, collection: str) -> None:
        self._require_txn()
        self.conn.execute(
            "UPDATE sources SET size=?, mtime_ns=?, collection=? WHERE id=?",
            (size, mtime_ns, collection, source_id),
        )

    def set_source_chunk_count(self, source_id: int, n: int) -> None:
        self._require_txn()
        self.conn.execute("UPDATE sources SET n_chunks=? WHERE id=?", (n, source_id))

    def delete_source(self, source_id: int) -> list[int]:
        """Remove a source and its chunks; returns the removed chunk ids."""
        self._require_txn()
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE source_id=?", (source_id,))]
        self._remove_substrings(ids)
        self.conn.execute("DELETE FROM chunks WHERE source_id=?", (source_id,))
        self.conn.execute("DELETE FROM sources WHERE id=?", (source_id,))
        return ids

    def collections(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT collection, COUNT(*) FROM sources GROUP BY collection"))

    def collection_chunks(self) -> dict[str, int]:
        """Chunks per collection."""
        return dict(
            self.conn.execute(
                "SELECT s.collection, COUNT(c.id) FROM sources s JOIN chunks c ON c.source_id = s.id"
                " GROUP BY s.collection"
            )
        )

    def rename_collection(self, old: str, new: str) -> int:
        """Files of collection `old` now belong to `new` (glossary groups scoped to it follow)."""
        self._require_txn()
        moved = self.conn.execute("UPDATE sources SET collection=? WHERE collection=?", (new, old)).rowcount
        self.conn.execute("UPDATE glossary_groups SET scope=? WHERE scope=?", (new, old))
        return moved

    # ----------------------------------------------------------------------------- chunks
    def chunk_hashes(self, source_id: int) -> list[tuple[int, str]]:
        return list(
            self.conn.execute(
                "SELECT id, content_hash FROM chunks WHERE source_id=? ORDER BY ordinal", (source_id,)
            )
        )

    def insert_chunk(self, source_id: int, ordinal: int, chunk, content_hash: str) -> int:
        self._require_txn()
        cur = self.conn.execute(
            "INSERT INTO chunks(source_id, ordinal, doc_key, title, body, start_line, end_line, page, time,"
            " meta, content_hash, text_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                source_id,
                ordinal,
                chunk.doc_key,
                chunk.title,
                pack_text(chunk.body),
                chunk.start_line,
                chunk.end_line,
                chunk.page,
                chunk.time,
                meta_json(chunk.meta),
                content_hash,
                text_hash(embedding_text(chunk.title, chunk.body)),
            ),
        )
        if self.substring_index_enabled():
            self._add_substrings([(cur.lastrowid, chunk.title, chunk.body)])
        return int(cur.lastrowid)

    def restore_source(self, row: SourceRow) -> None:
        self._require_txn()
        self.conn.execute(
            f"INSERT INTO sources({_SOURCE_COLS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                row.id,
                row.path,
                row.collection,
                row.kind,
                row.size,
                row.mtime_ns,
                row.content_hash,
                row.indexed_at,
                row.n_chunks,
            ),
        )

    def restore_chunk(self, row: ChunkRow) -> None:
        """A chunk under its own id (AUTOINCREMENT then continues after the largest id)."""
        self._require_txn()
        self.conn.execute(
            "INSERT INTO chunks(id, source_id, ordinal, doc_key, title, body, start_line, end_line, page,"
            " time, meta, content_hash, text_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row.id,
                row.source_id,
                row.ordinal,
                row.doc_key,
                row.title,
                pack_text(row.body),
                row.start_line,
                row.end_line,
                row.page,
                row.time,
                json.dumps(row.meta, default=str),
                row.content_hash,
                text_hash(embedding_text(row.title, row.body)),
            ),
        )
        if self.substring_index_enabled():
            self._add_substrings([(row.id, row.title, row.body)])

    def move_chunk(self, chunk_id: int, ordinal: int, chunk) -> None:
        """An unchanged chunk of a changed file: update its position and time, keep its id and
        postings."""
        self._require_txn()
        self.conn.execute(
            "UPDATE chunks SET ordinal=?, start_line=?, end_line=?, page=?, time=? WHERE id=?",
            (ordinal, chunk.start_line, chunk.end_line, chunk.page, chunk.time, chunk_id),
        )

    def retime_chunks(self, source_id: int, old_time: float, new_time: float) -> None:
        """Chunks of a source whose time was the file's old modification time take the new one."""
        self._require_txn()
        self.conn.execute(
            "UPDATE chunks SET time=? WHERE source_id=? AND abs(time - ?) < 0.000001",
            (new_time, source_id, old_time),
        )

    def delete_chunks(self, ids: list[int]) -> None:
        self._require_txn()
        self._remove_substrings(ids)
        for batch in batches(ids):
            self.conn.execute(f"DELETE FROM chunks WHERE id IN ({marks(len(batch))})", list(batch))

    @decoding("a chunk row")
    def _chunk_rows(self, where: str, params) -> list[ChunkRow]:
        rows = self.conn.execute(
            f"SELECT {_CHUNK_COLS} FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {where}", params
        )
        return [_chunk_row(r) for r in rows]

    def chunks_by_ids(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for batch in batches(list(ids)):
            for row in self._chunk_rows(f"c.id IN ({marks(len(batch))})", list(batch)):
                out[row.id] = row
        return out

    def chunk_heads(self, ids: Sequence[int]) -> dict[int, ChunkHead]:
        out: dict[int, ChunkHead] = {}
        for batch in batches(list(ids)):
            for row in self.conn.execute(
                "SELECT c.id, c.doc_key, c.title, s.path, c.start_line, c.end_line, c.page, c.time"
                f" FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.id IN ({marks(len(batch))})",
                list(batch),
            ):
                _check_types(row, _HEAD_TYPES)
                out[row[0]] = ChunkHead(*row[1:])
        return out

    def chunk_groups(self, ids: Sequence[int]) -> dict[int, ChunkGroup]:
        """Conversation and message ids of the message-log chunks among `ids`; others are absent."""
        out: dict[int, ChunkGroup] = {}
        for batch in batches(list(ids)):
            for cid, conversation, messages in self.conn.execute(
                "SELECT id, json_extract(meta, '$.conversation'), json_extract(meta, '$.message_ids')"
                f" FROM chunks WHERE id IN ({marks(len(batch))})"
                " AND json_extract(meta, '$.message_ids') IS NOT NULL",
                list(batch),
            ):
                with decoding(f"chunk {cid}'s message ids"):
                    message_ids = json.loads(messages)
                if not isinstance(message_ids, list):
                    raise IndexDamaged(f"chunk {cid}'s message ids are not a list")
                out[cid] = ChunkGroup(conversation, message_ids)
        return out

    def chunks_of_doc(self, doc_key: str) -> list[ChunkRow]:
        return self._chunk_rows("c.doc_key=? ORDER BY c.source_id, c.ordinal", (doc_key,))

    def chunk_texts(self, ids: Sequence[int]) -> list[str]:
        """Title and body of chunks (before they are deleted, to keep the vocabulary exact)."""
        out = []
        for batch in batches(list(ids)):
            out.extend(
                f"{t}\n{unpack_text(b)}"
                for t, b in self.conn.execute(
                    f"SELECT title, body FROM chunks WHERE id IN ({marks(len(batch))})", list(batch)
                )
            )
        return out

    def iter_chunk_texts(self) -> Iterator[tuple[int, str, str]]:
        """(id, title, body) of every chunk, by id."""
        for chunk_id, title, body in self.conn.execute("SELECT id, title, body FROM chunks ORDER BY id"):
            yield chunk_id, title, unpack_text(body)


def _body(chunk_id: int, stored) -> str:
    """A chunk's body as stored (plain or compressed: .compact); damaged bytes are a clear error."""
    try:
        return unpack_text(stored)
    except DAMAGED_TEXT as exc:
        raise StorageError(
            f"chunk {chunk_id}'s stored text is damaged ({exc}): run `kenning verify`, then `kenning repair`"
        ) from exc


_OPTIONAL_INT, _OPTIONAL_NUMBER = (int, NoneType), (int, float, NoneType)
# id, source, ordinal, doc key, title, body (checked by _body), lines, page, time
_CHUNK_TYPES = (int, int, int, str, str, None, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_NUMBER)
# id, doc key, title, path, lines, page, time
_HEAD_TYPES = (int, str, str, str, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_INT, _OPTIONAL_NUMBER)


def _check_types(r: tuple, types: tuple) -> None:
    """Each column of a chunk's row of the type kenning writes, else IndexDamaged: an index folder
    may come from anyone, and a line number that is a blob would fail far from here."""
    for value, kind in zip(r, types, strict=False):
        if kind is not None and not isinstance(value, kind):
            raise IndexDamaged(f"chunk {r[0]!r} holds a {type(value).__name__} where kenning writes {kind}")


def _chunk_row(r: tuple) -> ChunkRow:
    """A chunks row as a ChunkRow, checked (_check_types)."""
    _check_types(r, _CHUNK_TYPES)
    meta = json.loads(r[10])
    if not isinstance(meta, dict):
        raise IndexDamaged(f"chunk {r[0]}'s metadata is not a JSON object")
    return ChunkRow(*r[:5], _body(r[0], r[5]), *r[6:10], meta, r[11], r[12])
