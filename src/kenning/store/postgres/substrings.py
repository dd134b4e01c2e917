"""The optional substring index in PostgreSQL: each chunk's casefolded text in `substrings`, under a
pg_trgm GIN index. A word's candidates are the rows whose text contains it (`LIKE '%word%'`, which
the trigram index answers and PostgreSQL rechecks), so they are exactly the chunks holding it: a
superset, as the Substrings protocol asks. pg_trgm is a trusted extension: a role that may create
objects in the database may install it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kenning.store.postgres.dialect import to_text
from kenning.store.records import MIN_TRIGRAM_WORD, substring_text
from kenning.store.sql import SqlSubstrings


def _storable(text: str) -> str:
    """PostgreSQL text holds no NUL and no unpaired surrogate; no query word holds either."""
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


def like_pattern(word: str) -> str:
    """`%word%` with LIKE's own characters escaped (the default escape is the backslash)."""
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PostgresSubstrings(SqlSubstrings):
    """The Substrings protocol."""

    _substrings_on: bool | None = None

    def substring_index_enabled(self) -> bool:
        if self._substrings_on is None:
            self._substrings_on = bool(
                self._one("SELECT to_regclass(%s) IS NOT NULL", (f'"{self.schema}".substrings',))
            )
        return self._substrings_on

    def enable_substring_index(self) -> int:
        self._require_txn()
        if self.substring_index_enabled():
            return 0
        if not self._one("SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'"):
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            self._set_search_path(local=True)
        self.conn.execute("CREATE TABLE substrings (id bigint PRIMARY KEY, text text NOT NULL)")
        self._substrings_on = True
        count = 0
        for batch in _blocks(self.dialect.rows_by_id(self.conn, f"id, title, {self._body_columns()}"), 1000):
            self._add_substrings((r[0], to_text(r[1]), self._body(r[0], *r[2:])) for r in batch)
            count += len(batch)
        self.conn.execute("CREATE INDEX substrings_trigrams ON substrings USING gin (text gin_trgm_ops)")
        self._set_search_path()
        return count

    def substring_candidates(self, word: str) -> np.ndarray:
        if len(word) < MIN_TRIGRAM_WORD:
            raise ValueError(f"the trigram index cannot look for {word!r}: under {MIN_TRIGRAM_WORD} letters")
        rows = self.conn.execute("SELECT id FROM substrings WHERE text LIKE %s", (like_pattern(word),))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def _add_substrings(self, rows: Iterable[tuple[int, str, str]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO substrings(id, text) VALUES (%s, %s)",
                [(cid, _storable(substring_text(title, body))) for cid, title, body in rows],
            )

    def _remove_substrings(self, ids: Sequence[int]) -> None:
        if self.substring_index_enabled():
            self.conn.execute("DELETE FROM substrings WHERE id = ANY(%s)", ([int(i) for i in ids],))

    def _clear_substrings(self) -> None:
        if self.substring_index_enabled():
            self.conn.execute("DELETE FROM substrings")


def _blocks(rows, size: int):
    block = []
    for row in rows:
        block.append(row)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block
