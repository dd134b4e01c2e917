"""The embedded store: one SQLite database per index directory, WAL mode, one transaction per commit."""

from kenning.store.sqlite.connection import DB_NAME
from kenning.store.sqlite.schema import SCHEMA_VERSION
from kenning.store.sqlite.store import SqliteStore

__all__ = ["DB_NAME", "SCHEMA_VERSION", "SqliteStore"]
