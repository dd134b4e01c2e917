"""What `kenning verify` reads from any SQL store beyond the other protocols: each chunk's stored
text hash, and how many chunks lack a vector. The engine's own check of itself (`engine_problems`)
and the stored vectors as written (`iter_vectors`) are each engine's."""

from __future__ import annotations

from collections.abc import Iterator

from kenning.store.errors import StorageError
from kenning.store.sql.statements import SqlStatements


class SqlIntegrity(SqlStatements):
    """The Integrity protocol's shared part."""

    def iter_chunk_hashes(self) -> Iterator[tuple[int, int, str, str, str]]:
        rows = self.dialect.rows_by_id(self.conn, f"id, source_id, title, text_hash, {self._body_columns()}")
        for chunk_id, source_id, title, stored, *body in rows:
            try:
                text = self._body(chunk_id, *body)
            except StorageError:  # damaged stored bytes, or a missing block: a text that cannot match
                text = f"\x00undecodable body of chunk {chunk_id}"
            yield chunk_id, source_id, self.dialect.text_out(title), text, stored

    def _block_problems(self) -> list[str]:
        """Text blocks no chunk reads (kenning deletes a block with its last chunk), and chunks
        outside the id range their block was written for (a later delete could drop a block they
        still read)."""
        if not self.text_blocks:
            return []
        stored = {r[0] for r in self._run("SELECT id FROM text_blocks")}
        read = {r[0] for r in self._run("SELECT DISTINCT block FROM chunks WHERE block IS NOT NULL")}
        outside = self._value(
            "SELECT count(*) FROM chunks c JOIN text_blocks b ON b.id = c.block"
            " WHERE c.id < b.first_chunk OR c.id > b.last_chunk"
        )
        problems = []
        if stored - read:
            problems.append(
                f"{len(stored - read)} block(s) of text that no chunk reads: `kenning repair` drops them"
            )
        if outside:
            problems.append(
                f"{outside} chunk(s) outside the range of the text block they read:"
                " `kenning repair` rebuilds them"
            )
        return problems

    def vectorless_text_hashes(self, fingerprint: str) -> int:
        return int(
            self._value(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
                " WHERE e.text_hash = c.text_hash AND e.fingerprint = ?)",
                (fingerprint,),
            )
        )
