"""PostgresStore: the Store protocol on one schema of a PostgreSQL database with pgvector."""

from __future__ import annotations

from kenning.store.postgres.connection import PostgresConnection
from kenning.store.postgres.documents import PostgresDocuments
from kenning.store.postgres.entities import PostgresEntities
from kenning.store.postgres.filters import PostgresFilters
from kenning.store.postgres.glossary import PostgresGlossary
from kenning.store.postgres.integrity import PostgresIntegrity
from kenning.store.postgres.postings import PostgresPostings
from kenning.store.postgres.substrings import PostgresSubstrings
from kenning.store.postgres.vectors import PostgresVectors, PostgresVectorSearch


class PostgresStore(
    PostgresDocuments,
    PostgresPostings,
    PostgresVectors,
    PostgresVectorSearch,
    PostgresFilters,
    PostgresGlossary,
    PostgresEntities,
    PostgresIntegrity,
    PostgresSubstrings,
    PostgresConnection,
):
    """Everything one index keeps, in one PostgreSQL schema; each protocol's part in its own module."""
