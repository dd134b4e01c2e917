"""What `kenning verify` reads from PostgreSQL: the server's own checks are its business (page
checksums, amcheck for an administrator); kenning checks that its tables are all there, and streams
each chunk's stored text hash and every stored vector for the checks above the store."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kenning.store.postgres.documents import to_text
from kenning.store.postgres.schema import ALL_TABLES
from kenning.store.postgres.vectors import as_array

_PAGE = 2000


class PostgresIntegrity:
    """The Integrity protocol."""

    conn: object

    def engine_problems(self, quick: bool = False) -> list[str]:
        present = {
            r[0]
            for r in self.conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema,)
            )
        }
        optional = {"substrings"}
        missing = [t for t in ALL_TABLES if t not in present and t not in optional]
        problems = [f"table {self.schema}.{t} is missing" for t in missing]
        if not quick and not missing and self.substring_index_enabled():
            held = self._one("SELECT count(*) FROM substrings")
            stored = self._one("SELECT count(*) FROM chunks")
            if held != stored:
                problems.append(
                    f"the substring index holds {held} chunk(s) but {stored} are stored: "
                    "`kenning repair` rebuilds it"
                )
        return problems

    def iter_chunk_hashes(self) -> Iterator[tuple[int, int, str, str, str]]:
        for chunk_id, source_id, title, body, stored in self._chunk_pages(
            "id, source_id, title, body, text_hash"
        ):
            yield chunk_id, source_id, to_text(title), to_text(body), stored

    def iter_vectors(self) -> Iterator[tuple[str, str, np.ndarray | None]]:
        after = ("", "")
        while True:
            with self.conn.cursor(binary=True) as cur:
                rows = cur.execute(
                    "SELECT text_hash, fingerprint, vector FROM embeddings"
                    " WHERE (text_hash, fingerprint) > (%s, %s) ORDER BY text_hash, fingerprint LIMIT %s",
                    (*after, _PAGE),
                ).fetchall()
            for text_hash, fingerprint, vector in rows:
                yield text_hash, fingerprint, as_array(vector)
            if len(rows) < _PAGE:
                return
            after = (rows[-1][0], rows[-1][1])

    def vectorless_text_hashes(self, fingerprint: str) -> int:
        return int(
            self._one(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e"
                " WHERE e.text_hash = c.text_hash AND e.fingerprint = %s)",
                (fingerprint,),
            )
        )
