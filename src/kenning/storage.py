"""Persistent embedded storage: one SQLite database in the index directory.

Why SQLite: a commit is one transaction, so a crash or Ctrl-C mid-index leaves the last committed state
intact, and WAL mode lets searches in other processes read a consistent snapshot while a writer works.

Layout:
- `sources`: one row per indexed file (path, size, mtime, content hash) for incremental re-indexing.
- `chunks`: the retrievable pieces with their raw text and provenance. Ids are never reused.
- `segments` + `postings`: immutable inverted-index segments, with per-field term frequencies and
  token positions (positions are read only for phrase queries). Each commit that adds chunks writes a new
  segment; deleting a chunk only removes it from the `live` bitmap, and segments are merged (dropping
  dead postings) when there are too many. Because a segment never changes, readers cache its postings
  by segment id without ever invalidating them.
- `embeddings`: one vector per (hash of the embedded text, embedder fingerprint), so re-indexing embeds
  only new text and a section that moved, or reappears in another file, is never embedded again.
- `vocabulary`: folded surface words with document frequencies, for spelling suggestions.
- `meta`: schema version, analyzer settings, the `live` bitmap, the commit generation and time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyroaring import BitMap

SCHEMA_VERSION = 3
DB_NAME = "index.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    collection TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    indexed_at REAL NOT NULL,
    n_chunks INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    doc_key TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    start_line INTEGER,
    end_line INTEGER,
    page INTEGER,
    time REAL,
    meta TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    text_hash TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks(source_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_key);
CREATE TABLE IF NOT EXISTS segments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    n_docs INTEGER NOT NULL,
    doc_ids BLOB NOT NULL,
    title_lens BLOB NOT NULL,
    body_lens BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    text_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (text_hash, fingerprint)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vocabulary (word TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS postings (
    segment_id INTEGER NOT NULL,
    term TEXT NOT NULL,
    ids BLOB NOT NULL,
    tf_title BLOB NOT NULL,
    tf_body BLOB NOT NULL,
    pos_title BLOB NOT NULL,
    pos_body BLOB NOT NULL,
    PRIMARY KEY (segment_id, term)
) WITHOUT ROWID;
"""


_SOURCE_COLS = "id, path, collection, kind, size, mtime_ns, content_hash, indexed_at, n_chunks"


def embedding_text(title: str, body: str) -> str:
    """What an embedder sees for a chunk: its heading path, then its text."""
    return f"{title}\n{body}" if title else body


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class StorageError(Exception):
    """The index directory cannot be used; the message says why and what to do."""


@dataclass
class SourceRow:
    id: int
    path: str
    collection: str
    kind: str
    size: int
    mtime_ns: int
    content_hash: str
    indexed_at: float
    n_chunks: int


@dataclass
class ChunkRow:
    id: int
    source_id: int
    ordinal: int
    doc_key: str
    title: str
    body: str
    start_line: int | None
    end_line: int | None
    page: int | None
    time: float | None
    meta: dict
    content_hash: str
    path: str = ""


@dataclass
class SegmentData:
    """An immutable segment's per-document lengths, aligned with its sorted doc ids."""

    id: int
    doc_ids: np.ndarray
    title_lens: np.ndarray
    body_lens: np.ndarray


@dataclass
class Snapshot:
    """What one committed generation of the index looks like to a reader."""

    generation: int
    live: BitMap
    segment_ids: tuple[int, ...]
    analyzer: dict
    last_commit: float | None


class Storage:
    """SQLite-backed storage for one index directory.

    Writers use `transaction()`; everything written inside it becomes visible atomically at its end.
    Readers use `read_snapshot()` inside `reading()` so that all their reads see one generation.
    """

    def __init__(self, directory: str | os.PathLike, create: bool = True, rebuild_outdated: bool = False):
        """Open (or create) the index in `directory`.

        An index written by an older kenning is refused with a clear message, or, with
        `rebuild_outdated` (what `kenning index --force` asks for), replaced by an empty one.
        """
        self.directory = Path(directory)
        self._in_txn = False
        db_path = self.directory / DB_NAME
        if not db_path.exists():
            if not create:
                raise StorageError(
                    f"no kenning index at {self.directory} (run `kenning index PATH` first, "
                    "or choose one with --index / KENNING_INDEX)"
                )
            self.directory.mkdir(parents=True, exist_ok=True)
        self._connect(db_path)
        version = self._meta_raw("schema_version") if self._has_meta_table() else None
        if version is not None and int(version) != SCHEMA_VERSION:
            if not rebuild_outdated:
                self.conn.close()
                raise StorageError(
                    f"index at {self.directory} was written by another kenning version (schema {version}, "
                    f"this one reads {SCHEMA_VERSION}): rebuild it with `kenning index PATH... --force`"
                )
            self.conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
            self._connect(db_path)
        self._ensure_schema()

    def _connect(self, db_path: Path) -> None:
        try:
            self.conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot open index database {db_path}: {exc}") from exc

    # ----------------------------------------------------------------------------- schema & meta
    def _ensure_schema(self) -> None:
        version = self._meta_raw("schema_version") if self._has_meta_table() else None
        if version is None:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                if self._meta_raw("schema_version") is None:
                    self._set_meta("schema_version", str(SCHEMA_VERSION))
                    self._set_meta("generation", "0")
                    self._set_meta("live", BitMap().serialize())
                    self._set_meta("created", str(time.time()))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def _has_meta_table(self) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        return row is not None

    def _meta_raw(self, key: str):
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def _set_meta(self, key: str, value) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def get_meta(self, key: str, default=None):
        value = self._meta_raw(key)
        return default if value is None else value

    def set_meta(self, key: str, value) -> None:
        self._require_txn()
        self._set_meta(key, value)

    # ----------------------------------------------------------------------------- transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic commit. On any exception (including KeyboardInterrupt) nothing is written."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StorageError(
                f"index at {self.directory} is locked by another writer ({exc}); try again when it finishes"
            ) from exc
        self._in_txn = True
        changes_before = self.conn.total_changes
        try:
            yield
            if self.conn.total_changes != changes_before:  # a no-op run keeps readers' caches valid
                generation = int(self._meta_raw("generation") or 0) + 1
                self._set_meta("generation", str(generation))
                self._set_meta("last_commit", str(time.time()))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        finally:
            self._in_txn = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A read transaction: every read inside sees the same committed generation."""
        if self._in_txn:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _require_txn(self) -> None:
        if not self._in_txn:
            raise RuntimeError("write outside a transaction")

    # ----------------------------------------------------------------------------- snapshot reads
    def read_snapshot(self) -> Snapshot:
        live_blob = self._meta_raw("live")
        segs = tuple(r[0] for r in self.conn.execute("SELECT id FROM segments ORDER BY id"))
        last = self._meta_raw("last_commit")
        return Snapshot(
            generation=int(self._meta_raw("generation") or 0),
            live=BitMap.deserialize(live_blob) if live_blob else BitMap(),
            segment_ids=segs,
            analyzer=json.loads(self._meta_raw("analyzer") or "{}"),
            last_commit=float(last) if last else None,
        )

    def generation(self) -> int:
        return int(self._meta_raw("generation") or 0)

    def load_segment(self, segment_id: int) -> SegmentData:
        row = self.conn.execute(
            "SELECT doc_ids, title_lens, body_lens FROM segments WHERE id=?", (segment_id,)
        ).fetchone()
        if row is None:
            raise StorageError(f"segment {segment_id} vanished (index changed during read)")
        return SegmentData(
            id=segment_id,
            doc_ids=np.frombuffer(row[0], dtype=np.uint32),
            title_lens=np.frombuffer(row[1], dtype=np.uint16),
            body_lens=np.frombuffer(row[2], dtype=np.uint16),
        )

    def load_postings(self, segment_id: int, terms: list[str]) -> dict[str, tuple[np.ndarray, ...]]:
        """(ids, tf_title, tf_body) per term present in the segment."""
        out = {}
        for start in range(0, len(terms), 500):
            batch = terms[start : start + 500]
            marks = ",".join("?" * len(batch))
            for term, ids, tft, tfb in self.conn.execute(
                f"SELECT term, ids, tf_title, tf_body FROM postings WHERE segment_id=? AND term IN ({marks})",
                (segment_id, *batch),
            ):
                out[term] = (
                    np.frombuffer(ids, dtype=np.uint32),
                    np.frombuffer(tft, dtype=np.uint16),
                    np.frombuffer(tfb, dtype=np.uint16),
                )
        return out

    def iter_segment_postings(self, segment_id: int):
        """Every posting row of a segment, with positions: (term, ids, tft, tfb, pos_title, pos_body)."""
        yield from self.conn.execute(
            "SELECT term, ids, tf_title, tf_body, pos_title, pos_body FROM postings WHERE segment_id=?",
            (segment_id,),
        )

    def load_positions(self, segment_id: int, term: str, field: str) -> np.ndarray | None:
        """A term's positions in one field of one segment, concatenated in posting order."""
        column = {"title": "pos_title", "body": "pos_body"}[field]
        row = self.conn.execute(
            f"SELECT {column} FROM postings WHERE segment_id=? AND term=?", (segment_id, term)
        ).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.uint32)

    # ----------------------------------------------------------------------------- sources & chunks
    def source_by_path(self, path: str) -> SourceRow | None:
        row = self.conn.execute(
            f"SELECT {_SOURCE_COLS} FROM sources WHERE path=?",
            (path,),
        ).fetchone()
        return SourceRow(*row) if row else None

    def sources(self) -> list[SourceRow]:
        rows = self.conn.execute(f"SELECT {_SOURCE_COLS} FROM sources ORDER BY path")
        return [SourceRow(*r) for r in rows]

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

    def collections(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT collection, COUNT(*) FROM sources GROUP BY collection"))

    def set_source_chunk_count(self, source_id: int, n: int) -> None:
        self.conn.execute("UPDATE sources SET n_chunks=? WHERE id=?", (n, source_id))

    def delete_source(self, source_id: int) -> list[int]:
        """Remove a source and its chunks; returns the removed chunk ids."""
        self._require_txn()
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE source_id=?", (source_id,))]
        self.conn.execute("DELETE FROM chunks WHERE source_id=?", (source_id,))
        self.conn.execute("DELETE FROM sources WHERE id=?", (source_id,))
        return ids

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
                chunk.body,
                chunk.start_line,
                chunk.end_line,
                chunk.page,
                chunk.time,
                json.dumps(chunk.meta, default=str),
                content_hash,
                text_hash(embedding_text(chunk.title, chunk.body)),
            ),
        )
        return int(cur.lastrowid)

    def move_chunk(self, chunk_id: int, ordinal: int, chunk) -> None:
        """An unchanged chunk that only moved: update its position, keep its id and postings."""
        self._require_txn()
        self.conn.execute(
            "UPDATE chunks SET ordinal=?, start_line=?, end_line=?, page=? WHERE id=?",
            (ordinal, chunk.start_line, chunk.end_line, chunk.page, chunk_id),
        )

    def delete_chunks(self, ids: list[int]) -> None:
        self._require_txn()
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            self.conn.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * len(batch))})", batch)

    _CHUNK_COLS = (
        "c.id, c.source_id, c.ordinal, c.doc_key, c.title, c.body, c.start_line, c.end_line, c.page,"
        " c.time, c.meta, c.content_hash, s.path"
    )

    def _chunk_rows(self, where: str, params) -> list[ChunkRow]:
        rows = self.conn.execute(
            f"SELECT {self._CHUNK_COLS} FROM chunks c JOIN sources s ON s.id = c.source_id WHERE {where}",
            params,
        )
        return [ChunkRow(*r[:10], json.loads(r[10]), r[11], r[12]) for r in rows]

    def chunks_by_ids(self, ids: list[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            for row in self._chunk_rows(f"c.id IN ({','.join('?' * len(batch))})", batch):
                out[row.id] = row
        return out

    def chunk_heads(self, ids: list[int]) -> dict[int, tuple]:
        """(doc_key, title, path, start_line, end_line, page, time) per id: what a ranked list shows
        without reading bodies or metadata."""
        out: dict[int, tuple] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in self.conn.execute(
                "SELECT c.id, c.doc_key, c.title, s.path, c.start_line, c.end_line, c.page, c.time"
                f" FROM chunks c JOIN sources s ON s.id = c.source_id WHERE c.id IN ({marks})",
                batch,
            ):
                out[row[0]] = row[1:]
        return out

    def chunk_groups(self, ids: list[int]) -> dict[int, tuple[str | None, list | None]]:
        """(conversation, message ids) of message-log chunks among `ids`; other chunks are absent."""
        out: dict[int, tuple] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for cid, conversation, messages in self.conn.execute(
                "SELECT id, json_extract(meta, '$.conversation'), json_extract(meta, '$.message_ids')"
                f" FROM chunks WHERE id IN ({marks}) AND json_extract(meta, '$.message_ids') IS NOT NULL",
                batch,
            ):
                out[cid] = (conversation, json.loads(messages))
        return out

    def chunks_of_doc(self, doc_key: str) -> list[ChunkRow]:
        return self._chunk_rows("c.doc_key=? ORDER BY c.source_id, c.ordinal", (doc_key,))

    # ----------------------------------------------------------------------------- segments
    def write_segment(self, doc_ids: np.ndarray, title_lens: np.ndarray, body_lens: np.ndarray, rows) -> int:
        """Write one immutable segment.

        `doc_ids` ascending; `rows` yields (term, ids, tf_title, tf_body, pos_title, pos_body) with ids
        ascending and each field's positions concatenated in posting order (tf positions per posting).
        """
        self._require_txn()
        cur = self.conn.execute(
            "INSERT INTO segments(created, n_docs, doc_ids, title_lens, body_lens) VALUES (?,?,?,?,?)",
            (
                time.time(),
                len(doc_ids),
                np.asarray(doc_ids, dtype=np.uint32).tobytes(),
                np.minimum(title_lens, 65535).astype(np.uint16).tobytes(),
                np.minimum(body_lens, 65535).astype(np.uint16).tobytes(),
            ),
        )
        seg_id = int(cur.lastrowid)
        self.conn.executemany(
            "INSERT INTO postings(segment_id, term, ids, tf_title, tf_body, pos_title, pos_body)"
            " VALUES (?,?,?,?,?,?,?)",
            (
                (
                    seg_id,
                    term,
                    np.asarray(ids, dtype=np.uint32).tobytes(),
                    np.asarray(tft, dtype=np.uint16).tobytes(),
                    np.asarray(tfb, dtype=np.uint16).tobytes(),
                    np.asarray(pt, dtype=np.uint32).tobytes(),
                    np.asarray(pb, dtype=np.uint32).tobytes(),
                )
                for term, ids, tft, tfb, pt, pb in rows
            ),
        )
        return seg_id

    def drop_segments(self, segment_ids: list[int]) -> None:
        self._require_txn()
        for seg in segment_ids:
            self.conn.execute("DELETE FROM postings WHERE segment_id=?", (seg,))
            self.conn.execute("DELETE FROM segments WHERE id=?", (seg,))

    def set_live(self, live: BitMap) -> None:
        self._require_txn()
        live.run_optimize()
        self._set_meta("live", live.serialize())

    def chunk_texts(self, ids: list[int]) -> list[str]:
        """Title and body of chunks (before they are deleted, to keep the vocabulary exact)."""
        out = []
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            out.extend(
                f"{t}\n{b}"
                for t, b in self.conn.execute(f"SELECT title, body FROM chunks WHERE id IN ({marks})", batch)
            )
        return out

    def apply_vocabulary(self, delta) -> None:
        self._require_txn()
        self.conn.executemany(
            "INSERT INTO vocabulary(word, df) VALUES (?, ?)"
            " ON CONFLICT(word) DO UPDATE SET df = df + excluded.df",
            [(w, n) for w, n in delta.items() if n],
        )
        self.conn.execute("DELETE FROM vocabulary WHERE df <= 0")

    def vocabulary(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT word, df FROM vocabulary"))

    # ----------------------------------------------------------------------------- embeddings
    def chunks_missing_vectors(self, fingerprint: str) -> list[tuple[str, str]]:
        """(text_hash, text) of live chunks whose text has no vector from this embedder yet."""
        rows = self.conn.execute(
            "SELECT c.text_hash, c.title, c.body FROM chunks c WHERE NOT EXISTS ("
            " SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.fingerprint = ?)"
            " GROUP BY c.text_hash",
            (fingerprint,),
        )
        return [(h, embedding_text(t, b)) for h, t, b in rows]

    def put_vectors(self, fingerprint: str, hashes: list[str], vectors: np.ndarray) -> None:
        self._require_txn()
        self.conn.executemany(
            "INSERT OR REPLACE INTO embeddings(text_hash, fingerprint, vector) VALUES (?,?,?)",
            [
                (h, fingerprint, np.asarray(v, dtype=np.float32).tobytes())
                for h, v in zip(hashes, vectors, strict=True)
            ],
        )

    def chunk_vectors(self, fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, float32 matrix) of every chunk that has a vector from this embedder."""
        ids, blobs = [], []
        for cid, blob in self.conn.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
            " ON e.text_hash = c.text_hash AND e.fingerprint = ? ORDER BY c.id",
            (fingerprint,),
        ):
            ids.append(cid)
            blobs.append(blob)
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
        return np.array(ids, dtype=np.int64), matrix

    def drop_orphan_vectors(self) -> int:
        """Vectors whose text no chunk holds any more (after deletions)."""
        self._require_txn()
        cur = self.conn.execute(
            "DELETE FROM embeddings WHERE text_hash NOT IN (SELECT text_hash FROM chunks)"
        )
        return cur.rowcount

    def count_vectors(self, fingerprint: str) -> int:
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM chunks c JOIN embeddings e"
                " ON e.text_hash = c.text_hash AND e.fingerprint = ?",
                (fingerprint,),
            ).fetchone()[0]
        )

    def count_terms(self) -> int:
        return int(self.conn.execute("SELECT COUNT(DISTINCT term) FROM postings").fetchone()[0])

    def counts(self) -> dict:
        n_sources = self.conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
        n_chunks = self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        n_docs = self.conn.execute("SELECT COUNT(DISTINCT doc_key) FROM chunks").fetchone()[0]
        n_segments = self.conn.execute("SELECT COUNT(*) FROM segments").fetchone()[0]
        return {"sources": n_sources, "chunks": n_chunks, "documents": n_docs, "segments": n_segments}

    def size_on_disk(self) -> int:
        return sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file())

    def close(self) -> None:
        self.conn.close()
