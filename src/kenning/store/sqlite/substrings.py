"""The optional substring index: an FTS5 trigram table over every chunk's casefolded text.

The substring signal looks for the query's words verbatim in the raw text. Without this index it
joins every live chunk's text into one string in memory (kenning.signals.substring.SubstringView):
exact and fast, but the string is as large as the corpus and rebuilt for every new generation. With
it, a word's candidate chunks come from SQLite: the chunks holding each of its trigrams, which is a
superset of the chunks holding the word (a trigram table with detail=none keeps no positions, so it
is about as large as the text itself); the signal then reads the few candidates it ranks to confirm
them (kenning.signals.substring.TrigramSubstrings).

The table is contentless (`content=''`, SQLite 3.40 has no contentless delete), so a chunk's row is
removed by handing FTS5 the same text again: the store reads it just before the chunk goes. The text
indexed is `casefold(title + "\\n" + body)`, Python's folding (ß -> ss), so a word casefolded the
same way has all its trigrams in the text of every chunk that holds it.

Opt-in per index (`kenning index --substring-index`): it costs about as much disk as the chunks'
text and a third more indexing time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kenning.store.records import MIN_TRIGRAM_WORD, substring_text
from kenning.store.sql import SqlSubstrings
from kenning.store.sql.dialect import batches, marks

TABLE = "substrings"


def trigram_query(word: str) -> str:
    """An FTS5 query for the chunks holding every trigram of `word` (each quoted: one token)."""
    grams = dict.fromkeys(word[i : i + 3] for i in range(len(word) - 2))
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)


class SqliteSubstrings(SqlSubstrings):
    """The Substrings protocol: the trigram table, kept in step with the chunks when it exists."""

    _substrings_on: bool | None = None

    def substring_index_enabled(self) -> bool:
        if self._substrings_on is None:
            self._substrings_on = self._has_table(TABLE)
        return self._substrings_on

    def enable_substring_index(self) -> int:
        self._require_txn()
        if self.substring_index_enabled():
            return 0
        self.conn.execute(
            f"CREATE VIRTUAL TABLE {TABLE} USING fts5(text, tokenize='trigram', content='', detail=none)"
        )
        self._substrings_on = True
        rows = self.conn.execute(f"SELECT id, title, {self._body_columns()} FROM chunks ORDER BY id")
        count = 0
        while batch := rows.fetchmany(1000):
            self._add_substrings((r[0], r[1], self._body(r[0], *r[2:])) for r in batch)
            count += len(batch)
        return count

    def substring_candidates(self, word: str) -> np.ndarray:
        if len(word) < MIN_TRIGRAM_WORD:
            raise ValueError(f"the trigram index cannot look for {word!r}: under {MIN_TRIGRAM_WORD} letters")
        rows = self.conn.execute(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?", (trigram_query(word),))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    # kept in step by the chunk writes (kenning.store.sql.documents) when the table exists
    def _add_substrings(self, rows: Iterable[tuple[int, str, str]]) -> None:
        self.conn.executemany(
            f"INSERT INTO {TABLE}(rowid, text) VALUES (?, ?)",
            ((cid, substring_text(title, body)) for cid, title, body in rows),
        )

    def _remove_substrings(self, ids: Sequence[int]) -> None:
        if not self.substring_index_enabled():
            return
        for batch in batches(list(ids)):
            texts = self.conn.execute(
                f"SELECT id, title, {self._body_columns()} FROM chunks WHERE id IN ({marks(len(batch))})",
                list(batch),
            ).fetchall()
            self.conn.executemany(
                f"INSERT INTO {TABLE}({TABLE}, rowid, text) VALUES ('delete', ?, ?)",
                ((r[0], substring_text(r[1], self._body(r[0], *r[2:]))) for r in texts),
            )

    def _clear_substrings(self) -> None:
        if self.substring_index_enabled():
            self.conn.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('delete-all')")
