"""Embeddings in PostgreSQL: one pgvector `vector` per (hash of the embedded text, embedder
fingerprint). pgvector keeps float32 components exactly, so the vectors read back are the ones the
embedder wrote and dense rankings match the embedded store's."""

from __future__ import annotations

import numpy as np

from kenning.store.postgres.documents import to_text
from kenning.store.records import embedding_text


def as_array(vector) -> np.ndarray:
    """A pgvector value as float32 (the binary protocol hands out pgvector's Vector objects)."""
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float32)


class PostgresVectors:
    """The Vectors protocol over the `embeddings` table."""

    conn: object

    def chunks_missing_vectors(self, fingerprint: str) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT DISTINCT ON (c.text_hash) c.text_hash, c.title, c.body FROM chunks c WHERE NOT EXISTS ("
            " SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.fingerprint = %s)"
            " ORDER BY c.text_hash, c.id",
            (fingerprint,),
        )
        return [(h, embedding_text(to_text(t), to_text(b))) for h, t, b in rows]

    def put_vectors(self, fingerprint: str, hashes: list[str], vectors: np.ndarray) -> None:
        self._require_txn()
        self.forget_vector_graph()
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings(text_hash, fingerprint, vector) VALUES (%s, %s, %s)"
                " ON CONFLICT (text_hash, fingerprint) DO UPDATE SET vector = excluded.vector",
                [
                    (h, fingerprint, np.asarray(v, dtype=np.float32))
                    for h, v in zip(hashes, vectors, strict=True)
                ],
            )

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

    def keep_only_vectors_of(self, fingerprint: str) -> None:
        self._require_txn()
        self.forget_vector_graph()
        self.conn.execute("DELETE FROM embeddings WHERE fingerprint <> %s", (fingerprint,))

    def count_vectors(self, fingerprint: str) -> int:
        return int(
            self._one(
                "SELECT count(*) FROM chunks c"
                " JOIN embeddings e ON e.text_hash = c.text_hash AND e.fingerprint = %s",
                (fingerprint,),
            )
        )
