"""The PostgreSQL connection: connecting, creating the index's schema, transactions, snapshots, meta.

Why these rules:
- Writers to one index take one advisory lock per index (transaction-scoped), so commits are
  serialised exactly as the embedded store's single writer: the live bitmap and the generation are
  read-modified-written under the lock, and no commit is lost. A waiting writer says so, and gives up
  after KENNING_LOCK_TIMEOUT seconds with a message, like the embedded store.
- Readers use REPEATABLE READ, READ ONLY transactions inside `reading()`: every read sees one
  committed generation, never half of a commit (a torn read).
- A server in recovery (a streaming replica) is opened read-only: searching works, writing says why.
- Every statement is parameterised; the only names put into SQL are the schema (validated in
  .location) and the extension's schema as PostgreSQL reports it (quoted as identifiers).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pyroaring import BitMap

from kenning.store.base import lock_timeout
from kenning.store.compact import encode_posting_row_wide_ids
from kenning.store.errors import StorageError
from kenning.store.postgres.dialect import POSTGRES
from kenning.store.postgres.location import parse_location
from kenning.store.postgres.schema import ALL_TABLES, SCHEMA_VERSION, UPGRADES, statements
from kenning.store.sql import SqlCommits

LOG = logging.getLogger("kenning")
IDLE, IN_TRANSACTION = 0, 2  # psycopg.pq.TransactionStatus, without importing psycopg at module load
CONNECT_TIMEOUT = 10  # seconds


def _psycopg():
    try:
        import psycopg
    except ImportError as exc:  # an optional extra: the embedded store needs none of it
        raise StorageError(
            "a PostgreSQL store needs psycopg and pgvector: pip install 'kenning[postgres]'"
        ) from exc
    return psycopg


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class PostgresConnection(SqlCommits):
    """One index in one PostgreSQL schema: schema creation, transactions, snapshots and metadata."""

    dialect = POSTGRES

    directory = None  # a server index has no folder: nothing is written beside it

    def __init__(self, url: str, create: bool = True, rebuild_outdated: bool = False):
        """Connect and open the index in the URL's schema, creating it (and the `vector` extension
        when this role may) if `create`. `rebuild_outdated` has nothing to rebuild yet (one schema
        version so far); an index from a newer kenning is refused."""
        _psycopg()  # without the extra: the install hint, before anything else
        self.where = parse_location(url)
        self.location = self.where.shown
        self.schema = self.where.schema
        self._lock_key = int.from_bytes(
            hashlib.blake2b(f"kenning:{self.schema}".encode(), digest_size=8).digest(), "big", signed=True
        )
        self._in_txn = False
        self._substrings_on = None
        self._read_generation: int | None = None  # inside reading(): the snapshot's generation
        self._read_generation_seen: int | None = None  # the last one a read began at
        self.read_only: str | None = None
        self.conn = self._connect()
        try:
            self._open(create)
        except BaseException:
            self.conn.close()
            raise

    def _connect(self):
        psycopg = _psycopg()
        try:
            return psycopg.connect(self.where.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            raise StorageError(
                f"cannot connect to the PostgreSQL store {self.location}: {_first_line(exc)}"
            ) from exc

    def _usable(self) -> bool:
        return not self.conn.closed and not self.conn.broken

    def _reconnect(self) -> None:
        """A new connection after the old one was lost (the server restarted, a network blip, a
        replica promoted): a long-lived process such as `kenning serve` carries on with the next
        request instead of failing every one after."""
        LOG.warning("the connection to %s was lost; connecting again", self.location)
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - it is already gone
            pass
        self.conn = self._connect()
        self._set_search_path()
        self._register_vector()
        self._ef_search = None
        self.__dict__.pop(
            "_blocks_read", None
        )  # a replica promoted, a schema restored: block ids may come again

    def _begin(self, statement: str):
        """Start a transaction, connecting again once if the connection turns out to be lost."""
        psycopg = _psycopg()
        if not self._usable():
            self._reconnect()
        try:
            return self.conn.execute(statement)
        except psycopg.OperationalError:
            if self._usable():
                raise
            self._reconnect()
            return self.conn.execute(statement)

    def _open(self, create: bool) -> None:
        psycopg = _psycopg()
        if self._one("SELECT pg_is_in_recovery()"):
            self.read_only = f"{self.location} is a read-only replica (the server is in recovery)"
        elif self._one("SELECT current_setting('transaction_read_only')") == "on":
            self.read_only = f"{self.location} only allows read-only transactions"
        exists = self._one("SELECT to_regclass(%s) IS NOT NULL", (f'"{self.schema}".meta',))
        if not exists:
            if not create:
                raise StorageError(
                    f"no kenning index in schema {self.schema!r} at {self.location} "
                    "(run `kenning index PATH --store URL` first)"
                )
            if self.read_only:
                raise StorageError(
                    f"the index in schema {self.schema!r} needs to be created, but {self.read_only}"
                )
            try:
                self._create()
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StorageError(
                    f"cannot create the index in schema {self.schema!r} at {self.location}: "
                    f"{_first_line(exc)} (see the README's list of the privileges kenning needs)"
                ) from exc
        self._set_search_path()
        version = int(self._meta_raw("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"the index in schema {self.schema!r} at {self.location} was written by a newer kenning "
                f"(schema {version}; this one reads up to {SCHEMA_VERSION}): upgrade kenning"
            )
        if version < SCHEMA_VERSION and not self.read_only:
            version = self._upgrade()
        self.text_blocks = version >= 2  # an older index not upgraded reads and writes bodies in rows
        if version < 3:  # nor packs its rows' chunk ids (an older kenning would read them as damaged)
            self.posting_encoder = encode_posting_row_wide_ids
        self._register_vector()

    # ----------------------------------------------------------------------------- schema
    def _create(self) -> None:
        """The extension, the schema and its tables, under the index's lock (two processes creating
        the same index at once must not both run the DDL)."""
        from psycopg import sql

        psycopg = _psycopg()
        self.conn.execute("BEGIN")
        try:
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
            if not self._one("SELECT to_regclass(%s) IS NOT NULL", (f'"{self.schema}".meta',)):
                if not self._one("SELECT count(*) FROM pg_extension WHERE extname = 'vector'"):
                    try:
                        self.conn.execute("SAVEPOINT ext")
                        self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    except psycopg.errors.InsufficientPrivilege as exc:
                        self.conn.execute("ROLLBACK TO SAVEPOINT ext")
                        raise StorageError(
                            f"the pgvector extension is not installed in this database and this role may not "
                            f"install it ({_first_line(exc)}): ask an administrator to run "
                            "`CREATE EXTENSION vector;` in it once"
                        ) from exc
                if not self._one("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (self.schema,)):
                    # an administrator may have made the schema for a role that may not create one
                    self.conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
                self._set_search_path(local=True)
                for statement in statements():
                    self.conn.execute(statement)
                self._set_meta("schema_version", str(SCHEMA_VERSION))
                self._set_meta("generation", "0")
                self._set_meta("live", BitMap().serialize())
                self._set_meta("created", str(time.time()))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _upgrade(self) -> int:
        """Bring an older index's schema up to SCHEMA_VERSION (schema.UPGRADES), under the index's
        lock, in one transaction; the version it has after. A role that may not alter the tables
        (only their owner may) leaves it as it was: kenning reads and writes it as that version."""
        psycopg = _psycopg()
        self.conn.execute("BEGIN")
        try:
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
            version = int(self._meta_raw("schema_version") or 0)
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in UPGRADES.get(step, ()):
                    self.conn.execute(statement)
            if version < SCHEMA_VERSION:
                self._set_meta("schema_version", str(SCHEMA_VERSION))
            self.conn.execute("COMMIT")
            return SCHEMA_VERSION
        except psycopg.errors.InsufficientPrivilege as exc:
            self.conn.execute("ROLLBACK")
            LOG.info("the index %s stays at schema %s: %s", self.location, version, _first_line(exc))
            return version
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _blocks_since_opened(self) -> bool:
        return int(self._meta_raw("schema_version") or 0) >= 2

    def _set_search_path(self, local: bool = False) -> None:
        """The index's schema first, then the schemas holding the extensions it uses (vector, pg_trgm)."""
        from psycopg import sql

        homes = [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                " WHERE e.extname IN ('vector', 'pg_trgm')"
            )
        ]
        names = [self.schema, *(h for h in homes if h != self.schema), "public"]
        statement = sql.SQL("SET LOCAL search_path TO {}" if local else "SET search_path TO {}")
        self.conn.execute(
            statement.format(sql.SQL(", ").join(sql.Identifier(n) for n in dict.fromkeys(names)))
        )

    def _register_vector(self) -> None:
        from pgvector.psycopg import register_vector

        register_vector(self.conn)

    def _one(self, query: str, params=()):
        row = self.conn.execute(query, params).fetchone()
        return None if row is None else row[0]

    # ----------------------------------------------------------------------------- meta
    def _meta_raw(self, key: str):
        row = self.conn.execute("SELECT value, is_text FROM meta WHERE key = %s", (key,)).fetchone()
        if row is None or row[0] is None:
            return None
        return row[0].decode("utf-8") if row[1] else bytes(row[0])

    def _meta_keys(self) -> list[str]:
        return [r[0] for r in self.conn.execute('SELECT key FROM meta ORDER BY key COLLATE "C"')]

    def _set_meta(self, key: str, value) -> None:
        is_text = not isinstance(value, bytes | bytearray | memoryview)
        data = str(value).encode("utf-8") if is_text else bytes(value)
        self.conn.execute(
            "INSERT INTO meta(key, value, is_text) VALUES (%s, %s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value, is_text = excluded.is_text",
            (key, data, is_text),
        )

    def release_free_pages(self) -> int:
        """PostgreSQL's autovacuum reclaims what merges free; nothing to do inside the write."""
        self._require_txn()
        return 0

    # ----------------------------------------------------------------------------- transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic commit under the index's writer lock (see the module docstring)."""
        psycopg = _psycopg()
        if self.read_only:
            raise StorageError(f"cannot write the index: {self.read_only}; searching it still works")
        self._begin("BEGIN")
        self._in_txn = True
        self._substrings_on = None
        try:
            self._take_writer_lock()
            self._notice_text_blocks()
            yield
            if self._one("SELECT pg_current_xact_id_if_assigned() IS NOT NULL"):  # a no-op run keeps caches
                generation = int(self._meta_raw("generation") or 0) + 1
                self._set_meta("generation", str(generation))
                self._set_meta("last_commit", str(time.time()))
                self._read_generation_seen = generation  # blocks read while writing are of it
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self._usable() and self.conn.info.transaction_status != IDLE:
                self.conn.execute("ROLLBACK")
            if isinstance(exc, psycopg.errors.DiskFull):
                raise StorageError(
                    f"the PostgreSQL server holding {self.location} is out of disk ({_first_line(exc)}): "
                    "this run was rolled back and the index is as its last commit left it"
                ) from exc
            if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
                raise StorageError(f"cannot write the index at {self.location}: {_first_line(exc)}") from exc
            raise
        finally:
            self._in_txn = False

    def _take_writer_lock(self) -> None:
        psycopg = _psycopg()
        if self._one("SELECT pg_try_advisory_xact_lock(%s)", (self._lock_key,)):
            return
        wait = lock_timeout()
        LOG.warning(
            "the index %s in schema %s is being written by another process; waiting up to %g s for it",
            self.location,
            self.schema,
            wait,
        )
        try:
            if wait <= 0:
                raise psycopg.errors.LockNotAvailable("lock timeout 0")
            self.conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(wait * 1000)}ms",))
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
            self.conn.execute("SELECT set_config('lock_timeout', '0', true)")
        except psycopg.errors.LockNotAvailable as exc:
            raise StorageError(
                f"the index {self.location} (schema {self.schema}) is still being written by another "
                f"process after {wait:g} s; try again when it finishes, or set KENNING_LOCK_TIMEOUT"
            ) from exc

    @contextmanager
    def reading(self) -> Iterator[None]:
        if self._usable() and self.conn.info.transaction_status != IDLE:  # inside a write or a read
            yield
            return
        # the snapshot's generation comes back with BEGIN (one round trip, not two): a search asks
        # for it first, and it cannot change inside the transaction
        # (and its schema version, while this process knows it from before blocks: one more key)
        keys = "'generation'" if self.text_blocks else "'generation', 'schema_version'"
        cursor = self._begin(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
            f" SELECT key, value FROM meta WHERE key IN ({keys})"
        )
        cursor.nextset()  # past BEGIN's result to the SELECT's
        values = {key: bytes(value).decode() for key, value in cursor.fetchall() if value is not None}
        generation = int(values.get("generation", 0))
        if generation < (self._read_generation_seen or 0):  # the index went back (restored): so may block ids
            self.__dict__.pop("_blocks_read", None)
        self._read_generation = self._read_generation_seen = generation
        self._substrings_on = None
        if not self.text_blocks and int(values.get("schema_version", 0)) >= 2:
            self.text_blocks = True  # another process upgraded the index since this one opened it
        try:
            yield
        finally:
            self._read_generation = None
            if self._usable():
                self.conn.execute(
                    "COMMIT" if self.conn.info.transaction_status == IN_TRANSACTION else "ROLLBACK"
                )

    def generation(self) -> int:
        if self._read_generation is not None:
            return self._read_generation
        return int(self._meta_raw("generation") or 0)

    # ----------------------------------------------------------------------------- snapshots
    def size_on_disk(self) -> int:
        """Bytes of the index's tables, their indexes and TOAST data on the server."""
        return int(
            self._one(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname = ANY(%s)",
                (self.schema, list(ALL_TABLES)),
            )
        )
