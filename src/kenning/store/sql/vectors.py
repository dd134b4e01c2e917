"""Embeddings in any SQL store: one vector per (hash of the embedded text, embedder fingerprint), so
re-indexing embeds only new text and a section that moved, or reappears in another file, is never
embedded again. How vectors are read back in bulk is each engine's own."""

from __future__ import annotations

import numpy as np

from kenning.store.sql.statements import SqlStatements


class SqlVectors(SqlStatements):
    """The Vectors protocol's shared part over the `embeddings` table."""

    def put_vectors(self, fingerprint: str, hashes: list[str], vectors: np.ndarray) -> None:
        self._require_txn()
        self.forget_vector_graph()
        self._run_many(
            "INSERT INTO embeddings(text_hash, fingerprint, vector) VALUES (?, ?, ?)"
            " ON CONFLICT (text_hash, fingerprint) DO UPDATE SET vector = excluded.vector",
            [
                (h, fingerprint, self.dialect.vector_in(np.asarray(v, dtype=np.float32)))
                for h, v in zip(hashes, vectors, strict=True)
            ],
        )

    def keep_only_vectors_of(self, fingerprint: str) -> None:
        self._require_txn()
        self.forget_vector_graph()
        self._run("DELETE FROM embeddings WHERE fingerprint <> ?", (fingerprint,))

    def count_vectors(self, fingerprint: str) -> int:
        return int(
            self._value(
                "SELECT count(*) FROM chunks c"
                " JOIN embeddings e ON e.text_hash = c.text_hash AND e.fingerprint = ?",
                (fingerprint,),
            )
        )
