"""What `kenning verify` reads from PostgreSQL beyond the shared part (kenning.store.sql.integrity):
the server's own checks are its business (page checksums, amcheck for an administrator); kenning
checks that its tables are all there, and streams every stored vector for the checks above the store."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kenning.store.postgres.dialect import PAGE
from kenning.store.postgres.schema import ALL_TABLES
from kenning.store.postgres.vectors import as_array
from kenning.store.sql import SqlIntegrity


class PostgresIntegrity(SqlIntegrity):
    """The Integrity protocol."""

    def engine_problems(self, quick: bool = False) -> list[str]:
        present = {
            r[0]
            for r in self.conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema,)
            )
        }
        optional = {"substrings"} if self.text_blocks else {"substrings", "text_blocks"}
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
        if not quick and not missing:
            problems += self._block_problems()
        return problems

    def iter_vectors(self) -> Iterator[tuple[str, str, np.ndarray | None]]:
        after = ("", "")
        while True:
            with self.conn.cursor(binary=True) as cur:
                rows = cur.execute(
                    "SELECT text_hash, fingerprint, vector FROM embeddings"
                    " WHERE (text_hash, fingerprint) > (%s, %s) ORDER BY text_hash, fingerprint LIMIT %s",
                    (*after, PAGE),
                ).fetchall()
            for text_hash, fingerprint, vector in rows:
                yield text_hash, fingerprint, as_array(vector)
            if len(rows) < PAGE:
                return
            after = (rows[-1][0], rows[-1][1])
