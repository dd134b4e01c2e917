"""Storage behind protocols: what kenning keeps (documents, postings, vectors, filters, glossary,
commits) and the one place that knows how. Nothing outside this package holds SQL or a connection."""

from __future__ import annotations

import os

from kenning.store.protocols import (
    Commits,
    Documents,
    GlossaryTables,
    Integrity,
    MetadataFilters,
    Postings,
    Store,
    Vectors,
)
from kenning.store.records import (
    ChunkGroup,
    ChunkHead,
    ChunkRow,
    GlossaryGroupRow,
    GlossaryTermRow,
    RawPostings,
    SegmentData,
    SegmentPostings,
    Snapshot,
    SourceFacets,
    SourceRow,
    StorageError,
    embedding_text,
    text_hash,
)


def open_store(directory: str | os.PathLike, create: bool = True, rebuild_outdated: bool = False) -> Store:
    """The store of an index directory (the embedded SQLite store; a server store arrives later)."""
    from kenning.store.sqlite import SqliteStore

    return SqliteStore(directory, create=create, rebuild_outdated=rebuild_outdated)


__all__ = [
    "ChunkGroup",
    "ChunkHead",
    "ChunkRow",
    "Commits",
    "Documents",
    "GlossaryGroupRow",
    "GlossaryTables",
    "GlossaryTermRow",
    "Integrity",
    "MetadataFilters",
    "Postings",
    "RawPostings",
    "SegmentData",
    "SegmentPostings",
    "Snapshot",
    "SourceFacets",
    "SourceRow",
    "StorageError",
    "Store",
    "Vectors",
    "embedding_text",
    "open_store",
    "text_hash",
]
