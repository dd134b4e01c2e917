"""Embeddings in PostgreSQL, beyond the shared part (kenning.store.sql.vectors): one pgvector
`vector` per (hash of the embedded text, embedder fingerprint). pgvector keeps float32 components
exactly, so the vectors read back are the ones the embedder wrote and dense rankings match the
embedded store's."""

from __future__ import annotations

import hashlib
import os

import numpy as np

from kenning.store.postgres.dialect import to_text
from kenning.store.records import MissingText, embedding_text
from kenning.store.sql import SqlVectors


def as_array(vector) -> np.ndarray:
    """A pgvector value as float32 (the binary protocol hands out pgvector's Vector objects)."""
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float32)


class PostgresVectors(SqlVectors):
    """The Vectors protocol over the `embeddings` table."""

    def chunks_missing_vectors(self, fingerprint: str) -> list[MissingText]:
        grouped = self.conn.execute(
            "SELECT c.text_hash, array_agg(c.id ORDER BY c.id) FROM chunks c WHERE NOT EXISTS ("
            " SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.fingerprint = %s)"
            " GROUP BY c.text_hash ORDER BY c.text_hash",
            (fingerprint,),
        ).fetchall()
        statement = f"SELECT id, title, {self._body_columns()} FROM chunks WHERE {{}}"
        rows = self._rows_in(statement, "id", [ids[0] for _, ids in grouped])
        held = self._fetch_blocks(r[3] for r in rows)
        texts = {r[0]: embedding_text(to_text(r[1]), self._body(r[0], *r[2:], held=held)) for r in rows}
        return [MissingText(h, texts[ids[0]], tuple(ids)) for h, ids in grouped]

    def chunk_vectors(self, fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
        ids, rows = [], []
        with self.conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
                " ON e.text_hash = c.text_hash AND e.fingerprint = %s ORDER BY c.id",
                (fingerprint,),
            )
            for cid, vector in cur:
                ids.append(cid)
                rows.append(as_array(vector))
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        return np.array(ids, dtype=np.int64), np.vstack(rows).astype(np.float32, copy=False)

    def drop_orphan_vectors(self) -> int:
        self._require_txn()
        self.forget_vector_graph()
        return self.conn.execute(
            "DELETE FROM embeddings e"
            " WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash)"
        ).rowcount

    def vector_chunk_ids(self, fingerprint: str) -> np.ndarray:
        rows = self.conn.execute(
            "SELECT c.id FROM chunks c JOIN embeddings e ON e.text_hash = c.text_hash AND e.fingerprint = %s"
            " ORDER BY c.id",
            (fingerprint,),
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def vectors_of(self, fingerprint: str, chunk_ids) -> dict[int, np.ndarray]:
        with self.conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
                " ON e.text_hash = c.text_hash AND e.fingerprint = %s WHERE c.id = ANY(%s)",
                (fingerprint, [int(i) for i in chunk_ids]),
            )
            return {cid: as_array(v) for cid, v in cur}


# ---------------------------------------------------------------------------------------- vector search
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
HNSW_EF_SEARCH = int(os.environ.get("KENNING_PG_EF_SEARCH", "800"))  # pgvector allows up to 1000
BUILD_MEMORY = "1GB"  # maintenance_work_mem while building: a graph that fits builds several times faster


def vector_index_name(fingerprint: str) -> str:
    return "embeddings_hnsw_" + hashlib.blake2b(fingerprint.encode(), digest_size=6).hexdigest()


class PostgresVectorSearch:
    """The VectorSearch protocol: nearest neighbours from a pgvector HNSW index kept by the server.

    One partial index per embedder fingerprint, over `vector::vector(DIM)` (an index needs a fixed
    dimension; the column holds any). The server keeps it up to date with every insert and delete,
    and it lives with the data: a new process searches it at once, nothing is loaded or rebuilt.
    The fingerprint and the dimension are written into the SQL as literals (quoted by psycopg) so
    the planner can match the partial index; everything else is a parameter."""

    conn: object

    def vector_index_ready(self, fingerprint: str) -> bool:
        return bool(
            self._one(
                "SELECT to_regclass(%s) IS NOT NULL", (f'"{self.schema}".{vector_index_name(fingerprint)}',)
            )
        )

    def build_vector_index(self, fingerprint: str, dim: int) -> bool:
        """Create the fingerprint's HNSW index if it is missing (inside the writer's transaction);
        True when it was built now."""
        from psycopg import sql

        self._require_txn()
        if self.vector_index_ready(fingerprint):
            return False
        self.conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (BUILD_MEMORY,))
        self.conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON embeddings USING hnsw ((vector::vector({})) vector_cosine_ops)"
                " WITH (m = {}, ef_construction = {}) WHERE fingerprint = {}"
            ).format(
                sql.Identifier(vector_index_name(fingerprint)),
                sql.Literal(int(dim)),
                sql.Literal(HNSW_M),
                sql.Literal(HNSW_EF_CONSTRUCTION),
                sql.Literal(fingerprint),
            )
        )
        return True

    def nearest_chunks(
        self, fingerprint: str, query: np.ndarray, fetch: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """About the `fetch` chunks whose vectors are nearest the query's (cosine), best first, from
        the HNSW index: (chunk ids, cosine similarities)."""
        from psycopg import sql

        dim = len(query)
        width = min(1000, max(HNSW_EF_SEARCH, fetch))  # pgvector's limit is 1000
        if getattr(self, "_ef_search", None) != width:
            self.conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(width),))
            self._ef_search = width
        rows = self.conn.execute(
            sql.SQL(
                "SELECT c.id, n.distance FROM (SELECT text_hash,"
                " (vector::vector({dim})) <=> %s::vector({dim}) AS distance"
                " FROM embeddings WHERE fingerprint = {fp}"
                " ORDER BY (vector::vector({dim})) <=> %s::vector({dim}) LIMIT %s) n"
                " JOIN chunks c ON c.text_hash = n.text_hash ORDER BY n.distance, c.id"
            ).format(dim=sql.Literal(dim), fp=sql.Literal(fingerprint)),
            (np.asarray(query, dtype=np.float32), np.asarray(query, dtype=np.float32), int(fetch)),
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        return ids, 1.0 - np.array([r[1] for r in rows], dtype=np.float64)

    def cosines_of(self, fingerprint: str, query: np.ndarray, chunk_ids) -> dict[int, float]:
        """The query's cosine with each of these chunks' vectors, computed by the server: a few bytes
        per chunk cross the wire instead of its vector (those without one are absent)."""
        rows = self.conn.execute(
            "SELECT c.id, 1 - (e.vector <=> %s) FROM chunks c JOIN embeddings e"
            " ON e.text_hash = c.text_hash AND e.fingerprint = %s WHERE c.id = ANY(%s)",
            (np.asarray(query, dtype=np.float32), fingerprint, [int(i) for i in chunk_ids]),
        )
        return dict(rows.fetchall())
