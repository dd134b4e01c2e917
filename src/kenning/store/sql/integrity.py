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

    def vectorless_text_hashes(self, fingerprint: str) -> int:
        return int(
            self._value(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
                " WHERE e.text_hash = c.text_hash AND e.fingerprint = ?)",
                (fingerprint,),
            )
        )
