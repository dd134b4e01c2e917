"""Embeddings in SQLite, beyond the shared part (kenning.store.sql.vectors): vectors read back as
the float32 bytes they were written as, the chunks and their vectors each read in their own order."""

from __future__ import annotations

import numpy as np

from kenning.store.errors import IndexDamaged, decoding
from kenning.store.records import MissingText, embedding_text
from kenning.store.sql import SqlVectors
from kenning.store.sql.documents import plain_ids


class SqliteVectors(SqlVectors):
    """The Vectors protocol over the `embeddings` table."""

    def chunks_missing_vectors(self, fingerprint: str) -> list[MissingText]:
        """The texts of chunks that have no vector from this embedder yet (one per text, with the
        chunks holding it). The texts that have one are read first and the chunks scanned once (see
        _chunk_hashes)."""
        held = self._hashes_with_vectors(fingerprint)
        texts: dict[str, str] = {}
        first: dict[str, int] = {}  # a text's first chunk, and (rarely) the others: no list per text
        others: dict[str, list[int]] = {}
        columns = f"id, text_hash, title, {self._body_columns()}"
        rows = self.conn.execute(f"SELECT {columns} FROM chunks ORDER BY id")
        for cid, h, title, *body in rows:
            if h in held:
                continue
            if h not in texts:
                texts[h] = embedding_text(title, self._body(cid, *body))
                first[h] = cid
            else:
                others.setdefault(h, []).append(cid)
        return [MissingText(h, text, (first[h], *others.get(h, ()))) for h, text in texts.items()]

    @decoding("the stored vectors")
    def chunk_vectors(self, fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
        sql = "SELECT text_hash, vector FROM embeddings WHERE fingerprint = ?"
        vectors = dict(self.conn.execute(sql, (fingerprint,)))
        pairs = sorted((cid, h) for cid, h in self._chunk_hashes() if h in vectors)
        if not pairs:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        if len({len(vectors[h]) for _, h in pairs}) != 1:
            raise IndexDamaged(f"the stored vectors of {fingerprint} differ in length")
        matrix = np.frombuffer(b"".join(vectors[h] for _, h in pairs), dtype=np.float32)
        if not np.isfinite(matrix).all():  # a NaN would rank nothing and fail JSON output far from here
            raise IndexDamaged(f"a stored vector of {fingerprint} holds a number that is not finite")
        return np.array([cid for cid, _ in pairs], dtype=np.int64), matrix.reshape(len(pairs), -1)

    def vector_chunk_ids(self, fingerprint: str) -> np.ndarray:
        held = self._hashes_with_vectors(fingerprint)
        ids = np.fromiter((cid for cid, h in self._chunk_hashes() if h in held), dtype=np.int64)
        ids.sort()
        return ids

    def _hashes_with_vectors(self, fingerprint: str) -> set[str]:
        rows = self.conn.execute("SELECT text_hash FROM embeddings WHERE fingerprint = ?", (fingerprint,))
        return {h for (h,) in rows}

    def _chunk_hashes(self):
        """(chunk id, text hash) of every chunk. The two tables are joined here, each read once in
        its own order: SQLite's join looked up each of a million chunks' text in `embeddings` (its
        vectors inline, so a lookup reads a page of its own) and took 40-46 s at 1M chunks with 270k
        vectors, against 1.6 s for the two scans."""
        return self.conn.execute("SELECT id, text_hash FROM chunks")

    def vectors_of(self, fingerprint: str, chunk_ids) -> dict[int, np.ndarray]:
        rows = self._rows_in(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.text_hash = c.text_hash"
            " WHERE {} AND e.fingerprint = ?",
            "c.id",
            plain_ids(chunk_ids),
            (fingerprint,),
        )
        return {cid: np.frombuffer(blob, dtype=np.float32) for cid, blob in rows}

    def drop_orphan_vectors(self) -> int:
        self._require_txn()
        self.forget_vector_graph()
        cur = self.conn.execute(
            "DELETE FROM embeddings WHERE text_hash NOT IN (SELECT text_hash FROM chunks)"
        )
        return cur.rowcount
