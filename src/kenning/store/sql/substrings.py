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
        rows = self._rows_in("SELECT id, title, body FROM chunks WHERE {}", "id", plain_ids(ids))
        return {cid: substring_text(self.dialect.text_out(t), self.dialect.body_out(b)) for cid, t, b in rows}
