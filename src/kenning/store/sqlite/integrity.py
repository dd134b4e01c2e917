"""What `kenning verify` reads from SQLite beyond the other protocols: the engine's own check, each
chunk's stored text hash, and every stored vector as written."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np

from kenning.store.compact import DAMAGED_TEXT, unpack_text


class SqliteIntegrity:
    """The Integrity protocol over the SQLite database."""

    conn: object

    def engine_problems(self, quick: bool = False) -> list[str]:
        """SQLite's own check of its pages, indexes and constraints ([] when all is well)."""
        pragma = "quick_check" if quick else "integrity_check"
        try:
            rows = [r[0] for r in self.conn.execute(f"PRAGMA {pragma}")]
        except sqlite3.DatabaseError as exc:
            return [f"SQLite cannot check the database: {exc}"]
        problems = [] if rows == ["ok"] else rows
        if not quick and self.substring_index_enabled():
            problems += self._substring_problems()
        return problems

    def _substring_problems(self) -> list[str]:
        """Whether the substring index holds exactly the stored chunks (its rows' trigrams are SQLite's
        pages, which the integrity check above reads)."""
        try:
            held = {r[0] for r in self.conn.execute("SELECT rowid FROM substrings")}
        except sqlite3.DatabaseError as exc:
            return [f"the substring index is damaged ({exc}): `kenning repair` rebuilds it"]
        stored = {r[0] for r in self.conn.execute("SELECT id FROM chunks")}
        if held == stored:
            return []
        return [
            f"the substring index does not match the chunks ({len(stored - held)} chunk(s) missing from it, "
            f"{len(held - stored)} it holds that are gone): `kenning repair` rebuilds it"
        ]

    def iter_chunk_hashes(self) -> Iterator[tuple[int, int, str, str, str]]:
        """(id, source id, title, body, stored text hash) of every chunk, by id."""
        for chunk_id, source_id, title, body, stored in self.conn.execute(
            "SELECT id, source_id, title, body, text_hash FROM chunks ORDER BY id"
        ):
            try:
                body = unpack_text(body)
            except DAMAGED_TEXT:  # damaged compressed bytes: a text that cannot match
                body = f"\x00undecodable body of chunk {chunk_id}"
            yield chunk_id, source_id, title, body, stored

    def iter_vectors(self) -> Iterator[tuple[str, str, np.ndarray | None]]:
        """(text hash, fingerprint, vector) of every stored vector; None for bytes that are not float32s."""
        for text_hash, fingerprint, blob in self.conn.execute(
            "SELECT text_hash, fingerprint, vector FROM embeddings"
        ):
            ok = isinstance(blob, bytes) and len(blob) % 4 == 0
            yield text_hash, fingerprint, np.frombuffer(blob, dtype=np.float32) if ok else None

    def vectorless_text_hashes(self, fingerprint: str) -> int:
        """How many chunks have no vector from this embedder."""
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
                " WHERE e.text_hash = c.text_hash AND e.fingerprint = ?)",
                (fingerprint,),
            ).fetchone()[0]
        )
