"""PostgresStore: the Store protocol on one schema of a PostgreSQL database with pgvector."""

from __future__ import annotations

from kenning.store.postgres.connection import PostgresConnection
from kenning.store.postgres.filters import PostgresFilters
from kenning.store.postgres.integrity import PostgresIntegrity
from kenning.store.postgres.postings import PostgresPostings
from kenning.store.postgres.substrings import PostgresSubstrings
from kenning.store.postgres.vectors import PostgresVectors, PostgresVectorSearch
from kenning.store.sql import SqlDocuments, SqlEntities, SqlGlossary


class PostgresStore(
    SqlDocuments,
    PostgresPostings,
    PostgresVectors,
    PostgresVectorSearch,
    PostgresFilters,
    SqlGlossary,
    SqlEntities,
    PostgresIntegrity,
    PostgresSubstrings,
    PostgresConnection,
):
    """Everything one index keeps, in one PostgreSQL schema: the shared SQL (kenning.store.sql)
    through PostgreSQL's dialect, and PostgreSQL's own modules beside it."""
