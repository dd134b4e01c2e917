"""The optional substring index's shared part: the text it searches, read from the chunks. The
index itself is each engine's (kenning.store.sqlite.substrings, kenning.store.postgres.substrings)."""

from __future__ import annotations

from collections.abc import Sequence

from kenning.store.records import substring_text
from kenning.store.sql.documents import plain_ids
from kenning.store.sql.statements import SqlStatements


class SqlSubstrings(SqlStatements):
    """`substring_texts` of the Substrings protocol; an engine adds the index."""

    def substring_texts(self, ids: Sequence[int]) -> dict[int, str]:
        statement = f"SELECT id, title, {self._body_columns()} FROM chunks WHERE {{}}"
        rows = self._rows_in(statement, "id", plain_ids(ids))
        held = self._fetch_blocks(r[3] for r in rows)
        return {
            r[0]: substring_text(self.dialect.text_out(r[1]), self._body(r[0], *r[2:], held=held))
            for r in rows
        }
