"""Storage behind protocols: what kenning keeps (documents, postings, vectors, filters, glossary,
commits) and the one place that knows how. Nothing outside this package holds SQL or a connection."""

from __future__ import annotations

import os

from kenning.store.errors import IndexDamaged, StorageError
from kenning.store.protocols import Store
from kenning.store.records import ChunkHead, ChunkRow  # what a reader of search results meets

# The embedded store is the default: its code loads with the package, as a compiled engine's does,
# so that opening an index reads the index and nothing else (the server store is an extra and loads
# on first use).
from kenning.store.sqlite import SqliteStore


def is_server_url(location) -> bool:
    """Whether an index location is a PostgreSQL URL (postgresql://...) rather than a folder."""
    return isinstance(location, str) and location.lower().startswith(("postgresql://", "postgres://"))


def open_store(location: str | os.PathLike, create: bool = True, rebuild_outdated: bool = False) -> Store:
    """The store of an index: a folder holds the embedded SQLite store; a `postgresql://` URL names
    a server store (kenning.store.postgres, the `postgres` extra)."""
    if is_server_url(location):
        from kenning.store.postgres import PostgresStore

        return PostgresStore(str(location), create=create, rebuild_outdated=rebuild_outdated)
    return SqliteStore(location, create=create, rebuild_outdated=rebuild_outdated)


__all__ = [
    "ChunkHead",
    "ChunkRow",
    "IndexDamaged",
    "StorageError",
    "Store",
    "is_server_url",
    "open_store",
]
