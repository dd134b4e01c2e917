"""SqliteStore: the Store protocol on one SQLite database in the index directory."""

from __future__ import annotations

from kenning.store.sqlite.connection import SqliteConnection
from kenning.store.sqlite.documents import SqliteDocuments
from kenning.store.sqlite.entities import SqliteEntities
from kenning.store.sqlite.filters import SqliteFilters
from kenning.store.sqlite.glossary import SqliteGlossary
from kenning.store.sqlite.integrity import SqliteIntegrity
from kenning.store.sqlite.postings import SqlitePostings
from kenning.store.sqlite.substrings import SqliteSubstrings
from kenning.store.sqlite.vectors import SqliteVectors


class SqliteStore(
    SqliteDocuments,
    SqlitePostings,
    SqliteVectors,
    SqliteFilters,
    SqliteGlossary,
    SqliteEntities,
    SqliteIntegrity,
    SqliteSubstrings,
    SqliteConnection,
):
    """Everything one index keeps, in `DIR/index.db`; each protocol's part lives in its own module."""
