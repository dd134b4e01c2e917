"""What `kenning verify` reads from SQLite beyond the shared part (kenning.store.sql.integrity):
SQLite's own check of its pages, and every stored vector as written."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import numpy as np

from kenning.store.sql import SqlIntegrity


class SqliteIntegrity(SqlIntegrity):
    """The Integrity protocol over the SQLite database."""

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
        if not quick and rows == ["ok"]:  # the pages are sound: the blocks' rows can be read
            problems += self._block_problems()
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

    def iter_vectors(self) -> Iterator[tuple[str, str, np.ndarray | None]]:
        for text_hash, fingerprint, blob in self.conn.execute(
            "SELECT text_hash, fingerprint, vector FROM embeddings"
        ):
            ok = isinstance(blob, bytes) and len(blob) % 4 == 0
            yield text_hash, fingerprint, np.frombuffer(blob, dtype=np.float32) if ok else None
