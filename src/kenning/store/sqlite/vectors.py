"""Embeddings in SQLite: one vector per (hash of the embedded text, embedder fingerprint), so
re-indexing embeds only new text and a section that moved, or reappears in another file, is never
embedded again."""

from __future__ import annotations

import numpy as np

from kenning.store.compact import unpack_text
from kenning.store.records import embedding_text


class SqliteVectors:
    """The Vectors protocol over the `embeddings` table."""

    conn: object

    def chunks_missing_vectors(self, fingerprint: str) -> list[tuple[str, str]]:
        """(text_hash, text) of chunks whose text has no vector from this embedder yet."""
        rows = self.conn.execute(
            "SELECT c.text_hash, c.title, c.body FROM chunks c WHERE NOT EXISTS ("
            " SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.fingerprint = ?)"
            " GROUP BY c.text_hash",
            (fingerprint,),
        )
        return [(h, embedding_text(t, unpack_text(b))) for h, t, b in rows]

    def put_vectors(self, fingerprint: str, hashes: list[str], vectors: np.ndarray) -> None:
        self._require_txn()
        self.forget_vector_graph()
        self.conn.executemany(
            "INSERT OR REPLACE INTO embeddings(text_hash, fingerprint, vector) VALUES (?,?,?)",
            [
                (h, fingerprint, np.asarray(v, dtype=np.float32).tobytes())
                for h, v in zip(hashes, vectors, strict=True)
            ],
        )

    def chunk_vectors(self, fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, float32 matrix) of every chunk that has a vector from this embedder."""
        ids, blobs = [], []
        for cid, blob in self.conn.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e"
            " ON e.text_hash = c.text_hash AND e.fingerprint = ? ORDER BY c.id",
            (fingerprint,),
        ):
            ids.append(cid)
            blobs.append(blob)
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
        return np.array(ids, dtype=np.int64), matrix

    def drop_orphan_vectors(self) -> int:
        """Vectors whose text no chunk holds any more (after deletions)."""
        self._require_txn()
        self.forget_vector_graph()
        cur = self.conn.execute(
            "DELETE FROM embeddings WHERE text_hash NOT IN (SELECT text_hash FROM chunks)"
        )
        return cur.rowcount

    def keep_only_vectors_of(self, fingerprint: str) -> None:
        """Drop every other embedder's vectors (switching models)."""
        self._require_txn()
        self.forget_vector_graph()
        self.conn.execute("DELETE FROM embeddings WHERE fingerprint != ?", (fingerprint,))

    def count_vectors(self, fingerprint: str) -> int:
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM chunks c JOIN embeddings e"
                " ON e.text_hash = c.text_hash AND e.fingerprint = ?",
                (fingerprint,),
            ).fetchone()[0]
        )
