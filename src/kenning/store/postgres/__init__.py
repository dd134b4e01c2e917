"""The server store: one index per PostgreSQL schema, vectors in pgvector, same rankings as the
embedded store (kenning.store.postgres.schema). Needs the `postgres` extra (psycopg, pgvector)."""

from kenning.store.postgres.location import parse_location, redact
from kenning.store.postgres.schema import SCHEMA_VERSION
from kenning.store.postgres.store import PostgresStore

__all__ = ["SCHEMA_VERSION", "PostgresStore", "parse_location", "redact"]
