"""Sources (indexed files) and chunks in PostgreSQL.

Titles and bodies are kept as UTF-8 bytes (bytea), not `text`: PostgreSQL's text refuses a NUL
character and an unpaired surrogate, which a file can hold and the embedded store keeps; bytea keeps
every character, and PostgreSQL compresses large values itself (TOAST). The front matter is also
kept folded in `facets` (jsonb) for the indexed filters (.filters).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence

from kenning.store.postgres.filters import facets_of
from kenning.store.records import (
    ChunkGroup,
    ChunkHead,
    ChunkRow,
    SourceRow,
    embedding_text,
    meta_json,
    text_hash,
)

_SOURCE_COLS = "id, path, collection, kind, size, mtime_ns, content_hash, indexed_at, n_chunks"
_CHUNK_COLS = (
    "c.id, c.source_id, c.ordinal, c.doc_key, c.title, c.body, c.start_line, c.end_line, c.page,"
    " c.time, c.meta, c.content_hash, s.path"
)
PAGE = 2000  # rows per page when streaming a whole table (keyset pages: no long-held cursor)


def to_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def to_text(data) -> str:
    return bytes(data).decode("utf-8", "surrogatepass")


class PostgresDocuments:
    """The Documents protocol over the `sources` and `chunks` tables."""

    conn: object

    # ----------------------------------------------------------------------------- sources
    def source_by_path(self, path: str) -> SourceRow | None:
        row = self.conn.execute(f"SELECT {_SOURCE_COLS} FROM sources WHERE path = %s", (path,)).fetchone()
        return SourceRow(*row) if row else None

    def sources_by_paths(self, paths: Sequence[str]) -> dict[str, SourceRow]:
        """The sources of those paths that have one, by path (one round trip, not one a path)."""
        rows = self.conn.execute(f"SELECT {_SOURCE_COLS} FROM sources WHERE path = ANY(%s)", (list(paths),))
        return {row[1]: SourceRow(*row) for row in rows}

    def sources(self) -> list[SourceRow]:
        rows = self.conn.execute(f'SELECT {_SOURCE_COLS} FROM sources ORDER BY path COLLATE "C"')
        return [SourceRow(*r) for r in rows]

    def upsert_source(
        self, path: str, kind: str, size: int, mtime_ns: int, content_hash: str, collection: str
    ) -> int:
        self._require_txn()
        return int(
            self._one(
                "INSERT INTO sources(path, kind, size, mtime_ns, content_hash, indexed_at, collection)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET kind = excluded.kind,"
                " size = excluded.size, mtime_ns = excluded.mtime_ns, content_hash = excluded.content_hash,"
                " indexed_at = excluded.indexed_at, collection = excluded.collection RETURNING id",
                (path, kind, size, mtime_ns, content_hash, time.time(), collection),
            )
        )

    def touch_source(self, source_id: int, size: int, mtime_ns: int, collection: str) -> None:
        self._require_txn()
        self.conn.execute(
            "UPDATE sources SET size = %s, mtime_ns = %s, collection = %s WHERE id = %s",
            (size, mtime_ns, collection, source_id),
        )

    def set_source_chunk_count(self, source_id: int, n: int) -> None:
        self._require_txn()
        self.conn.execute("UPDATE sources SET n_chunks = %s WHERE id = %s", (n, source_id))

    def delete_source(self, source_id: int) -> list[int]:
        """Remove a source and its chunks; returns the removed chunk ids."""
        self._require_txn()
        ids = [
            r[0]
            for r in self.conn.execute("SELECT id FROM chunks WHERE source_id = %s ORDER BY id", (source_id,))
        ]
        self._remove_substrings(ids)
        self.conn.execute("DELETE FROM chunks WHERE source_id = %s", (source_id,))
        self.conn.execute("DELETE FROM sources WHERE id = %s", (source_id,))
        return ids

    def collections(self) -> dict[str, int]:
        return dict(
            self.conn.execute("SELECT collection, count(*) FROM sources GROUP BY collection").fetchall()
        )

    def collection_chunks(self) -> dict[str, int]:
        return dict(
            self.conn.execute(
                "SELECT s.collection, count(c.id) FROM sources s JOIN chunks c ON c.source_id = s.id"
                " GROUP BY s.collection"
            ).fetchall()
        )

    def rename_collection(self, old: str, new: str) -> int:
        self._require_txn()
        moved = self.conn.execute(
            "UPDATE sources SET collection = %s WHERE collection = %s", (new, old)
        ).rowcount
        self.conn.execute("UPDATE glossary_groups SET scope = %s WHERE scope = %s", (new, old))
        return moved

    # ----------------------------------------------------------------------------- chunks
    def chunk_hashes(self, source_id: int) -> list[tuple[int, str]]:
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT id, content_hash FROM chunks WHERE source_id = %s ORDER BY ordinal", (source_id,)
            )
        ]

    def insert_chunk(self, source_id: int, ordinal: int, chunk, content_hash: str) -> int:
        self._require_txn()
        meta = meta_json(chunk.meta)
        chunk_id = int(
            self._one(
                "INSERT INTO chunks(source_id, ordinal, doc_key, title, body, start_line, end_line, page,"
                " time, meta, facets, content_hash, text_hash)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (
                    source_id,
                    ordinal,
                    chunk.doc_key,
                    to_bytes(chunk.title),
                    to_bytes(chunk.body),
                    chunk.start_line,
                    chunk.end_line,
                    chunk.page,
                    chunk.time,
                    meta,
                    facets_of(json.loads(meta)),
                    content_hash,
                    text_hash(embedding_text(chunk.title, chunk.body)),
                ),
            )
        )
        if self.substring_index_enabled():
            self._add_substrings([(chunk_id, chunk.title, chunk.body)])
        return chunk_id

    def restore_source(self, row: SourceRow) -> None:
        self._require_txn()
        self.conn.execute(
            f"INSERT INTO sources({_SOURCE_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
        self.conn.execute(
            "SELECT setval(pg_get_serial_sequence('sources', 'id'),"
            " greatest(%s, (SELECT max(id) FROM sources)))",
            (row.id,),
        )

    def restore_chunk(self, row: ChunkRow) -> None:
        """A chunk under its own id; the id sequence moves past it, so new chunks never reuse one."""
        self._require_txn()
        meta = json.dumps(row.meta, default=str)
        self.conn.execute(
            "INSERT INTO chunks(id, source_id, ordinal, doc_key, title, body, start_line, end_line, page,"
            " time, meta, facets, content_hash, text_hash)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                row.id,
                row.source_id,
                row.ordinal,
                row.doc_key,
                to_bytes(row.title),
                to_bytes(row.body),
                row.start_line,
                row.end_line,
                row.page,
                row.time,
                meta,
                facets_of(json.loads(meta)),
                row.content_hash,
                text_hash(embedding_text(row.title, row.body)),
            ),
        )
        self.conn.execute("SELECT setval('chunk_ids', greatest(%s, nextval('chunk_ids')))", (row.id,))
        if self.substring_index_enabled():
            self._add_substrings([(row.id, row.title, row.body)])

    def move_chunk(self, chunk_id: int, ordinal: int, chunk) -> None:
        self._require_txn()
        self.conn.execute(
            "UPDATE chunks SET ordinal = %s, start_line = %s, end_line = %s, page = %s, time = %s"
            " WHERE id = %s",
            (ordinal, chunk.start_line, chunk.end_line, chunk.page, chunk.time, chunk_id),
        )

    def retime_chunks(self, source_id: int, old_time: float, new_time: float) -> None:
        self._require_txn()
        self.conn.execute(
            "UPDATE chunks SET time = %s WHERE source_id = %s AND abs(time - %s) < 0.000001",
            (new_time, source_id, old_time),
        )

    def delete_chunks(self, ids: list[int]) -> None:
        self._require_txn()
        self._remove_substrings(ids)
        self.conn.execute("DELETE FROM chunks WHERE id = ANY(%s)", (_ids(ids),))

    def _chunk_rows(self, where: str, params) -> list[ChunkRow]:
        rows = self.conn.execute(
            f"SELECT {_CHUNK_COLS} FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {where}", params
        )
        return [
            ChunkRow(*r[:4], to_text(r[4]), to_text(r[5]), *r[6:10], json.loads(r[10]), r[11], r[12])
            for r in rows
        ]

    def chunks_by_ids(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        return {row.id: row for row in self._chunk_rows("c.id = ANY(%s)", (_ids(ids),))}

    def chunk_heads(self, ids: Sequence[int]) -> dict[int, ChunkHead]:
        out: dict[int, ChunkHead] = {}
        for row in self.conn.execute(
            "SELECT c.id, c.doc_key, c.title, s.path, c.start_line, c.end_line, c.page, c.time"
            " FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.id = ANY(%s)",
            (_ids(ids),),
        ):
            out[row[0]] = ChunkHead(row[1], to_text(row[2]), *row[3:])
        return out

    def chunk_groups(self, ids: Sequence[int]) -> dict[int, ChunkGroup]:
        """Conversation and message ids of the message-log chunks among `ids`; others are absent."""
        out: dict[int, ChunkGroup] = {}
        for cid, meta in self.conn.execute(
            "SELECT id, meta FROM chunks WHERE id = ANY(%s) AND meta LIKE '%%message_ids%%'", (_ids(ids),)
        ):
            data = json.loads(meta)
            if data.get("message_ids") is not None:
                out[cid] = ChunkGroup(data.get("conversation"), data["message_ids"])
        return out

    def chunks_of_doc(self, doc_key: str) -> list[ChunkRow]:
        return self._chunk_rows("c.doc_key = %s ORDER BY c.source_id, c.ordinal", (doc_key,))

    def chunk_texts(self, ids: Sequence[int]) -> list[str]:
        rows = self.conn.execute("SELECT title, body FROM chunks WHERE id = ANY(%s)", (_ids(ids),))
        return [f"{to_text(t)}\n{to_text(b)}" for t, b in rows]

    def iter_chunk_texts(self) -> Iterator[tuple[int, str, str]]:
        """(id, title, body) of every chunk, by id."""
        for chunk_id, title, body in self._chunk_pages("id, title, body"):
            yield chunk_id, to_text(title), to_text(body)

    def _chunk_pages(self, columns: str) -> Iterator[tuple]:
        """Every chunk's `columns` (the first is its id), by id, a page at a time."""
        after = -1
        while True:
            rows = self.conn.execute(
                f"SELECT {columns} FROM chunks WHERE id > %s ORDER BY id LIMIT %s", (after, PAGE)
            ).fetchall()
            yield from rows
            if len(rows) < PAGE:
                return
            after = rows[-1][0]


def _ids(ids: Sequence[int]) -> list[int]:
    """Chunk ids as plain ints for a bigint[] parameter (numpy integers do not adapt)."""
    return [int(i) for i in ids]
