"""The glossary's tables in any SQL store: alias groups and their member terms, row by row."""

from __future__ import annotations

import time

from kenning.store.records import GlossaryGroupRow, GlossaryTermRow
from kenning.store.sql.statements import SqlStatements

_TERM_COLS = "id, group_id, surface, key, status, protected, origin, evidence"


class SqlGlossary(SqlStatements):
    """The GlossaryTables protocol over `glossary_groups` and `glossary_terms`."""

    def glossary_groups(self) -> list[GlossaryGroupRow]:
        return [
            GlossaryGroupRow(*r)
            for r in self._run("SELECT id, scope, origin FROM glossary_groups ORDER BY id")
        ]

    def glossary_terms(self) -> list[GlossaryTermRow]:
        return [
            GlossaryTermRow(*r) for r in self._run(f"SELECT {_TERM_COLS} FROM glossary_terms ORDER BY id")
        ]

    def add_glossary_group(self, scope: str, origin: str) -> int:
        self._require_txn()
        return self._insert_id(
            "INSERT INTO glossary_groups(scope, origin, created) VALUES (?, ?, ?)",
            (scope, origin, time.time()),
        )

    # (its parameters' types are written once, in kenning.store.protocols.GlossaryTables)
    def add_glossary_term(self, group_id, surface, key, status, protected, origin, evidence) -> int:
        self._require_txn()
        now = time.time()
        return self._insert_id(
            "INSERT INTO glossary_terms(group_id, surface, key, status, protected, origin, evidence, created,"
            " updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (group_id, surface, key, status, protected, origin, evidence, now, now),
        )

    def update_glossary_term(self, term_id: int, status: str, group_id: int | None = None) -> None:
        self._require_txn()
        self._run(
            "UPDATE glossary_terms SET status = ?, group_id = coalesce(?, group_id), updated = ?"
            " WHERE id = ?",
            (status, group_id, time.time(), term_id),
        )

    def delete_glossary_term(self, term_id: int) -> None:
        self._require_txn()
        self._run("DELETE FROM glossary_terms WHERE id = ?", (term_id,))

    def set_glossary_group_origin(self, group_id: int, origin: str) -> None:
        self._require_txn()
        self._run("UPDATE glossary_groups SET origin = ? WHERE id = ?", (origin, group_id))

    def delete_glossary_group(self, group_id: int) -> None:
        self._require_txn()
        self._run("DELETE FROM glossary_groups WHERE id = ?", (group_id,))
