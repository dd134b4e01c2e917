"""SqliteStore: the Store protocol on one SQLite database in the index directory."""

from __future__ import annotations

from kenning.store.sql import SqlDocuments, SqlEntities, SqlGlossary
from kenning.store.sqlite.connection import SqliteConnection
from kenning.store.sqlite.filters import SqliteFilters
from kenning.store.sqlite.integrity import SqliteIntegrity
from kenning.store.sqlite.postings import SqlitePostings
from kenning.store.sqlite.substrings import SqliteSubstrings
from kenning.store.sqlite.vectors import SqliteVectors


class SqliteStore(
    SqlDocuments,
    SqlitePostings,
    SqliteVectors,
    SqliteFilters,
    SqlGlossary,
    SqlEntities,
    SqliteIntegrity,
    SqliteSubstrings,
    SqliteConnection,
):
    """Everything one index keeps, in `DIR/index.db`: the shared SQL (kenning.store.sql) through
    SQLite's dialect, and SQLite's own modules beside it."""
