"""The SQLite connection: opening and migrating the database, transactions, snapshots, metadata.

Why SQLite: a commit is one transaction, so a crash or Ctrl-C mid-index leaves the last committed state
intact, and WAL mode lets searches in other processes read a consistent snapshot while a writer works.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from pyroaring import BitMap

from kenning.places.cachedir import tag_as_cache
from kenning.store.base import lock_timeout
from kenning.store.errors import StorageError
from kenning.store.sql import SqlCommits
from kenning.store.sqlite.dialect import SQLITE
from kenning.store.sqlite.schema import (
    MIGRATIONS,
    OLDEST_MIGRATABLE,
    READ_INDEXES,
    READS_UNCHANGED_FROM,
    SCHEMA_VERSION,
    TABLES,
    statements,
)

DB_NAME = "index.db"


def _log():
    """The `kenning` logger, for the rare notes a connection makes (a writer waiting for another):
    logging loads only then (~2 ms of a search process's start)."""
    import logging

    return logging.getLogger("kenning")


# SQLite's own page cache, per connection (its default is 2,000 KiB). Every page a query reads passes
# through it, the overflow pages of a long postings row included (the SQLite Python links here, 3.40,
# is built without SQLITE_DIRECT_OVERFLOW_READ), and each new slot is fresh memory, a page fault
# (a few microseconds): a new process's first query on a large index filled megabytes of it with
# pages kenning had already copied out and keeps in its own postings cache. A quarter of a megabyte
# holds the B-tree pages that term lookups come back to; first queries touched a third fewer pages
# and were no slower, nor were warm queries, re-indexes or builds (benchmarks/first_query_ab.py).
PAGE_CACHE_KIB = 256


def _why_not_writable(directory: Path, db_path: Path) -> str:
    probe = directory if not os.access(directory, os.W_OK) else db_path
    try:
        if os.statvfs(probe).f_flag & os.ST_RDONLY:
            return "a read-only file system"
    except OSError:
        pass
    return f"no permission to write {probe}"


def _connect_read_only(db_path: Path) -> sqlite3.Connection:
    """A read-only connection. A WAL database normally needs its -shm file, which a read-only folder
    cannot hold; when it is missing (the last writer closed cleanly) nobody can be writing, so the file
    is opened as immutable."""
    uri = f"file:{quote(str(db_path.absolute()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    return sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)


class SqliteConnection(SqlCommits):
    """One index directory's database: schema, transactions, snapshots and metadata."""

    dialect = SQLITE
    CONTENT_TABLES = (*SqlCommits.CONTENT_TABLES, "posting_packs")

    def __init__(self, directory: str | os.PathLike, create: bool = True, rebuild_outdated: bool = False):
        """Open (or create) the index in `directory`, migrating an older schema forward.

        An index too old to migrate is refused with a clear message, or, with `rebuild_outdated`
        (what `kenning index --force` asks for), replaced by an empty one. An index written by a newer
        kenning is always refused.
        """
        self.directory = Path(directory)
        self._in_txn = False
        self._reading = False  # inside reading(), outside any write
        self._read_generation: int | None = None  # inside reading(): the snapshot's, once read
        self.read_only: str | None = None  # why this index cannot be written, when it cannot
        db_path = self.directory / DB_NAME
        if not db_path.exists():
            if not create:
                raise StorageError(
                    f"no kenning index at {self.directory} (run `kenning index PATH` first, "
                    "or choose one with --index / KENNING_INDEX)"
                )
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot create an index in {self.directory}: {exc.strerror or exc}"
                ) from exc
        elif db_path.stat().st_size == 0:
            raise StorageError(
                f"{db_path} is empty (0 bytes): the index was truncated or never written; "
                "`kenning repair` rebuilds it from its source files"
            )
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
        if version is None and self._has_other_tables():
            self.conn.close()
            raise StorageError(f"{db_path} is an SQLite database but not a kenning index (no meta table)")
        if self.read_only:
            if version is None or version < READS_UNCHANGED_FROM:
                self.conn.close()
                raise StorageError(
                    f"index at {self.directory} needs to be {'created' if version is None else 'upgraded'}, "
                    f"but {self.read_only}"
                )
            self.text_blocks = self._has_table("text_blocks")
            return
        tag_as_cache(self.directory)
        if version is None:
            self._create()
        elif version < SCHEMA_VERSION:
            self._migrate(version)
        self.text_blocks = True
        self._add_read_indexes()

    def _connect(self, db_path: Path) -> None:
        """Open read-write; where the folder or the file cannot be written (permissions, a read-only
        file system), open read-only instead, so searching still works and writing says why not."""
        writable = os.access(self.directory, os.W_OK) and (
            not db_path.exists() or os.access(db_path, os.W_OK)
        )
        try:
            if writable:
                new = not db_path.exists()
                self.conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
                if new:  # only a new, empty database takes it: pages merges free go back to the disk
                    self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self.conn.execute("PRAGMA busy_timeout=30000")
            else:
                self.read_only = (
                    f"{self.directory} cannot be written ({_why_not_writable(self.directory, db_path)})"
                )
                self.conn = _connect_read_only(db_path)
            self.conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc):  # a first write holds it (SqliteConnection.transaction)
                raise StorageError(
                    f"the index at {self.directory} is held whole by another process writing it "
                    "(an index's first build is); it can be opened when that run ends"
                ) from exc
            raise StorageError(f"cannot open index database {db_path}: {exc}") from exc

    def _has_other_tables(self) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' LIMIT 1").fetchone() is not None
        )

    # ----------------------------------------------------------------------------- schema
    def _stored_version(self) -> int | None:
        if not self._has_table("meta"):
            return None
        value = self._meta_raw("schema_version")
        return None if value is None else int(value)

    def _blocks_since_opened(self) -> bool:
        return self._has_table("text_blocks")

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

    def _add_read_indexes(self) -> None:
        """The indexes that only speed reads up (schema.READ_INDEXES), where an index lacks them. A
        writer busy with the index is not waited for: the next opening adds them."""
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        missing = [statement for name, statement in READ_INDEXES.items() if name not in have]
        if not missing:
            return
        self.conn.execute("PRAGMA busy_timeout=100")
        try:
            with self._immediate():
                for statement in missing:
                    self.conn.execute(statement)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
        finally:
            self.conn.execute("PRAGMA busy_timeout=30000")

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

    def _meta_keys(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT key FROM meta ORDER BY key")]

    def _set_meta(self, key: str, value) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def release_free_pages(self) -> int:
        """Give the pages a merge or a deletion freed back to the file system (an index created with
        incremental auto-vacuum; older ones keep their free pages for later writes). Inside the
        write's transaction. Returns how many pages went. Python's sqlite3 steps the pragma once per
        call, and each step frees one page, hence the loop."""
        self._require_txn()
        if self.conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
            return 0
        free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        for _ in range(free):
            self.conn.execute("PRAGMA incremental_vacuum(1)")
        return free

    # ----------------------------------------------------------------------------- transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic commit. On any exception (including KeyboardInterrupt) nothing is written.

        A second writer waits for the first (saying so on the `kenning` logger) for up to
        KENNING_LOCK_TIMEOUT seconds (default 60), then fails with a message. A full disk rolls the
        run back: the index stays as its last commit left it.
        """
        if self.read_only:
            raise StorageError(f"cannot write the index: {self.read_only}; searching it still works")
        first = self._journal_for_first_write()
        try:
            self._begin_writing()
        except BaseException:
            if first:
                self._back_to_wal()
            raise
        self._in_txn = True
        self._substrings_on = None  # another process may have turned the substring index on
        self._notice_text_blocks()
        changes_before = self.conn.total_changes
        try:
            yield
            if self.conn.total_changes != changes_before:  # a no-op run keeps readers' caches valid
                generation = int(self._meta_raw("generation") or 0) + 1
                self._set_meta("generation", str(generation))
                self._set_meta("last_commit", str(time.time()))
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self.__dict__.pop("_marks_by_segment", None)  # SqlitePostings: its segments are gone
            self.__dict__.pop("_blocks_read", None)  # text blocks: a rolled-back block's id comes again
            full_disk = (
                isinstance(exc, OSError) and exc.errno == errno.ENOSPC
            )  # spill files (kenning.indexing.spill)
            if full_disk or isinstance(exc, sqlite3.OperationalError) and "full" in str(exc):
                raise StorageError(
                    f"the disk holding {self.directory} is full ({exc}): this run was rolled back and the "
                    "index is as its last commit left it; free some space and run again"
                ) from exc
            raise
        finally:
            self._in_txn = False
            if first:
                self._back_to_wal()

    def _journal_for_first_write(self) -> bool:
        """An index's first content is written with a rollback journal, not the write-ahead log:
        pages added to a database need no journal, where the WAL took every page of the build and
        its checkpoint then copied them all into the database (6.1 of 80.8 s building 1M chunks,
        and the index's size again on disk meanwhile). True when the journal was switched (only
        when no chunk is stored yet and no other connection is open: SQLite refuses otherwise);
        readers that come meanwhile are told the index is being built (`_connect`)."""
        if self.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None:
            if self.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self._back_to_wal()  # a first write could not switch back: a reader held the index
            return False
        try:
            return self.conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
        except sqlite3.OperationalError:
            return False

    def _back_to_wal(self) -> None:
        """The write-ahead log again after a first write (readers read beside later writers). Should
        a reader hold the database just then, the next connection to open it switches it back."""
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            _log().debug("the index at %s keeps a rollback journal until reopened: %s", self.directory, exc)

    def _begin_writing(self) -> None:
        self.conn.execute("PRAGMA busy_timeout=0")
        try:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StorageError(f"cannot write the index at {self.directory}: {exc}") from exc
            wait = lock_timeout()
            _log().warning(
                "the index at %s is being written by another process; waiting up to %g s for it",
                self.directory,
                wait,
            )
            self.conn.execute(f"PRAGMA busy_timeout={int(wait * 1000)}")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StorageError(
                    f"the index at {self.directory} is still being written by another process after "
                    f"{wait:g} s ({exc}); try again when it finishes, or set KENNING_LOCK_TIMEOUT"
                ) from exc
        finally:
            self.conn.execute("PRAGMA busy_timeout=30000")

    @contextmanager
    def reading(self) -> Iterator[None]:
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        self._substrings_on = None
        self._notice_text_blocks()
        self._reading, self._read_generation = True, None
        try:
            yield
        finally:
            self._reading, self._read_generation = False, None
            self.conn.execute("COMMIT")

    def generation(self) -> int:
        """The committed generation; inside reading() read once, since a read transaction sees one
        snapshot (a search asked for it twice, a statement each)."""
        if not self._reading:
            return super().generation()
        if self._read_generation is None:
            self._read_generation = super().generation()
        return self._read_generation

    # ----------------------------------------------------------------------------- snapshots
    def size_on_disk(self) -> int:
        return sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file())
