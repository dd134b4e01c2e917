"""The SQL that the SQLite and PostgreSQL stores share, written once and run through each store's
dialect (kenning.store.sql.dialect): placeholders, lists of values, new ids, stored text.

A store is these modules mixed together with its engine's own: its connection (opening, schema,
transactions, metadata rows), its dialect, and what only it has (SQLite's posting packs and FTS5
trigram table; PostgreSQL's COPY, pgvector HNSW and pg_trgm). A third SQL engine would be a dialect,
a connection and those few engine modules.
"""

from kenning.store.sql.commits import SqlCommits
from kenning.store.sql.dialect import Dialect
from kenning.store.sql.documents import SqlDocuments
from kenning.store.sql.entities import SqlEntities
from kenning.store.sql.filters import SqlFilters
from kenning.store.sql.glossary import SqlGlossary
from kenning.store.sql.integrity import SqlIntegrity
from kenning.store.sql.postings import SqlPostings
from kenning.store.sql.substrings import SqlSubstrings
from kenning.store.sql.vectors import SqlVectors

__all__ = [
    "Dialect",
    "SqlCommits",
    "SqlDocuments",
    "SqlEntities",
    "SqlFilters",
    "SqlGlossary",
    "SqlIntegrity",
    "SqlPostings",
    "SqlSubstrings",
    "SqlVectors",
]
