"""The SQLite connection: opening and migrating the database, transactions, snapshots, metadata.

Why SQLite: a commit is one transaction, so a crash or Ctrl-C mid-index leaves the last committed state
intact, and WAL mode lets searches in other processes read a consistent snapshot while a writer works.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pyroaring import BitMap

from kenning.cachedir import tag_as_cache
from kenning.store.records import Snapshot, StorageError
from kenning.store.sqlite.schema import (
    MIGRATIONS,
    OLDEST_MIGRATABLE,
    SCHEMA_VERSION,
    TABLES,
    statements,
)

DB_NAME = "index.db"
BATCH = 500  # ids per `IN (...)` list: well under SQLite's limit on bound parameters


def batches(items: Sequence, size: int = BATCH) -> Iterator[Sequence]:
    """Consecutive slices of `items`, each short enough for one `IN (...)` list."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(n: int) -> str:
    """`?,?,?` for n bound parameters."""
    return ",".join("?" * n)


class SqliteConnection:
    """One index directory's database: schema, transactions, snapshots and metadata."""

    def __init__(self, directory: str | os.PathLike, create: bool = True, rebuild_outdated: bool = False):
        """Open (or create) the index in `directory`, migrating an older schema forward.

        An index too old to migrate is refused with a clear message, or, with `rebuild_outdated`
        (what `kenning index --force` asks for), replaced by an empty one. An index written by a newer
        kenning is always refused.
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
        version = self._stored_version()
        if version is not None and version > SCHEMA_VERSION:
            self.conn.close()
            raise StorageError(
                f"index at {self.directory} was written by a newer kenning (schema {version}; this one "
                f"reads up to {SCHEMA_VERSION}): upgrade kenning, or rebuild the index with --force"
            )
        if version is not None and version < OLDEST_MIGRATABLE:
            if not rebuild_outdated:
                self.conn.close()
                raise StorageError(
                    f"index at {self.directory} was written by an older kenning (schema {version}, "
                    f"this one reads {SCHEMA_VERSION}): rebuild it with `kenning index PATH... --force`"
                )
            self.conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
            self._connect(db_path)
            version = None
        tag_as_cache(self.directory)
        if version is None:
            self._create()
        elif version < SCHEMA_VERSION:
            self._migrate(version)

    def _connect(self, db_path: Path) -> None:
        try:
            self.conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot open index database {db_path}: {exc}") from exc

    # ----------------------------------------------------------------------------- schema
    def _stored_version(self) -> int | None:
        if not self._has_table("meta"):
            return None
        value = self._meta_raw("schema_version")
        return None if value is None else int(value)

    def _has_table(self, name: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        return row is not None

    def _create(self) -> None:
        with self._immediate():
            for statement in statements(TABLES):
                self.conn.execute(statement)
            if self._meta_raw("schema_version") is None:
                self._set_meta("schema_version", str(SCHEMA_VERSION))
                self._set_meta("generation", "0")
                self._set_meta("live", BitMap().serialize())
                self._set_meta("created", str(time.time()))

    def _migrate(self, version: int) -> None:
        """Step an older schema forward to SCHEMA_VERSION in one transaction."""
        with self._immediate():
            while version < SCHEMA_VERSION:
                MIGRATIONS[version](self.conn.execute)
                version += 1
            self._set_meta("schema_version", str(SCHEMA_VERSION))

    @contextmanager
    def _immediate(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # ----------------------------------------------------------------------------- meta
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

    def set_live(self, live: BitMap) -> None:
        self._require_txn()
        live.run_optimize()
        self._set_meta("live", live.serialize())

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
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    @property
    def in_transaction(self) -> bool:
        """Inside a write transaction (reads join it; writes belong to it)."""
        return self._in_txn

    def _require_txn(self) -> None:
        if not self._in_txn:
            raise RuntimeError("write outside a transaction")

    # ----------------------------------------------------------------------------- snapshots
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

    def counts(self) -> dict:
        one = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "sources": one("SELECT COUNT(*) FROM sources"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
            "documents": one("SELECT COUNT(DISTINCT doc_key) FROM chunks"),
            "segments": one("SELECT COUNT(*) FROM segments"),
        }

    def clear(self) -> None:
        """Empty every indexed file, chunk, segment and word (a forced rebuild); vectors and the
        glossary stay."""
        self._require_txn()
        for table in ("postings", "segments", "chunks", "sources", "vocabulary"):
            self.conn.execute(f"DELETE FROM {table}")
        self.set_live(BitMap())

    def size_on_disk(self) -> int:
        return sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file())

    def close(self) -> None:
        self.conn.close()
