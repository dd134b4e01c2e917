"""The glossary's tables in PostgreSQL: groups and their member terms, row by row."""

from __future__ import annotations

import time

from kenning.store.records import GlossaryGroupRow, GlossaryTermRow

_TERM_COLS = "id, group_id, surface, key, status, protected, origin, evidence"


class PostgresGlossary:
    """The GlossaryTables protocol over `glossary_groups` and `glossary_terms`."""

    conn: object

    def glossary_groups(self) -> list[GlossaryGroupRow]:
        rows = self.conn.execute("SELECT id, scope, origin FROM glossary_groups ORDER BY id")
        return [GlossaryGroupRow(*r) for r in rows]

    def glossary_terms(self) -> list[GlossaryTermRow]:
        return [
            GlossaryTermRow(*r)
            for r in self.conn.execute(f"SELECT {_TERM_COLS} FROM glossary_terms ORDER BY id")
        ]

    def add_glossary_group(self, scope: str, origin: str) -> int:
        self._require_txn()
        return int(
            self._one(
                "INSERT INTO glossary_groups(scope, origin, created) VALUES (%s, %s, %s) RETURNING id",
                (scope, origin, time.time()),
            )
        )

    def add_glossary_term(
        self,
        group_id: int,
        surface: str,
        key: str,
        status: str,
        protected: str | None,
        origin: str,
        evidence: str | None,
    ) -> int:
        self._require_txn()
        now = time.time()
        return int(
            self._one(
                "INSERT INTO glossary_terms(group_id, surface, key, status, protected, origin, evidence,"
                " created, updated) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (group_id, surface, key, status, protected, origin, evidence, now, now),
            )
        )

    def update_glossary_term(self, term_id: int, status: str, group_id: int | None = None) -> None:
        self._require_txn()
        self.conn.execute(
            "UPDATE glossary_terms SET status = %s, group_id = coalesce(%s, group_id), updated = %s"
            " WHERE id = %s",
            (status, group_id, time.time(), term_id),
        )

    def delete_glossary_term(self, term_id: int) -> None:
        self._require_txn()
        self.conn.execute("DELETE FROM glossary_terms WHERE id = %s", (term_id,))

    def set_glossary_group_origin(self, group_id: int, origin: str) -> None:
        self._require_txn()
        self.conn.execute("UPDATE glossary_groups SET origin = %s WHERE id = %s", (origin, group_id))

    def delete_glossary_group(self, group_id: int) -> None:
        self._require_txn()
        self.conn.execute("DELETE FROM glossary_groups WHERE id = %s", (group_id,))
