"""A segment's raw-token table: each raw token's term id, and how many chunks hold it.

Building a segment looks up every token of every new chunk; in Python that per-token work was half
of an analysis worker's time. The table is compiled C (kenning/indexing/_term_table.c, built when
kenning is installed) and this module holds the same table in Python for where it could not be
compiled: `TermTable` is whichever is present, `NATIVE` says which. tests/test_term_table.py holds
the two equal, and both to `raw_tokens`.

The interface, for one segment (kenning.indexing.segments.SegmentBuilder):
- `scan(text, chunk_id)`: the term ids of an NFC text's tokens as uint32 bytes when every token is
  known and makes one term (and the chunk is counted for each token); else the tokens it does not
  know yet (a list, each once), or None when all are known but some make several terms;
- `learn(raws, terms)`: raw tokens' term ids (-1: several terms, an identifier or a CJK run);
- `get(raw)`: a raw token's one term id, or None;
- `count(raws, chunk_id)`: count a chunk for raw tokens the slow path read;
- `tally(text, chunk_id)`: count a chunk for an NFC text's raw tokens, unknown ones too (a table that
  only counts);
- `chunk_counts()`: {raw token: chunks that hold it};
- `take_counts()`: the same, each count then starting again from zero (a table kept from one
  segment to the next).

`chunk_token_counts(texts)` counts removed chunks' raw tokens with the same table (a re-index takes
them off the spelling vocabulary).
"""

from __future__ import annotations

import unicodedata
from array import array
from collections.abc import Iterable

from kenning.analysis.analyzer import raw_tokens

SEVERAL = -1  # a raw token that makes several terms at one place


class PythonTermTable:
    """The table in Python (what the C module does, a token at a time through dicts)."""

    def __init__(self):
        self._terms: dict[str, int] = {}
        self._chunks: dict[str, int] = {}
        self._stamps: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._terms)

    def scan(self, text: str, chunk_id: int) -> bytes | list[str] | None:
        tokens = raw_tokens(text)
        ids = list(map(self._terms.get, tokens))
        if None in ids:
            return list(dict.fromkeys(t for t, i in zip(tokens, ids, strict=True) if i is None))
        if SEVERAL in ids:
            return None
        self.count(tokens, chunk_id)
        return array("I", ids).tobytes()

    def learn(self, raws, terms) -> None:
        raws, terms = list(raws), list(terms)
        if len(raws) != len(terms):
            raise ValueError("raws and terms differ in length")
        self._terms.update(zip(raws, terms, strict=True))

    def get(self, raw: str) -> int | None:
        term = self._terms.get(raw)
        return None if term is None or term < 0 else term

    def count(self, raws, chunk_id: int) -> None:
        if not 0 <= chunk_id <= 0xFFFFFFFF:
            raise OverflowError(f"chunk id {chunk_id} does not fit a segment's 32 bits")
        stamps, chunks = self._stamps, self._chunks
        for raw in raws:
            if stamps.get(raw) != chunk_id:
                stamps[raw] = chunk_id
                chunks[raw] = chunks.get(raw, 0) + 1

    def tally(self, text: str, chunk_id: int) -> None:
        self.count(raw_tokens(text), chunk_id)

    def chunk_counts(self) -> dict[str, int]:
        return dict(self._chunks)

    def take_counts(self) -> dict[str, int]:
        counts, self._chunks = self._chunks, {}
        return counts


try:
    from kenning.indexing._term_table import TermTable

    NATIVE = True
except ImportError:  # not compiled here: the same table in Python
    TermTable = PythonTermTable
    NATIVE = False


def chunk_token_counts(texts: Iterable[str]) -> dict[str, int]:
    """How many of the texts hold each raw token, counted as a segment counts its chunks' tokens
    (NFC, each text once per token), in one pass a text (`tally`). For the chunks a re-index
    removes: a regular expression and a Counter over 10k removed chunks took ~0.5 s of a 4 s
    re-index at 1M chunks, scanning then learning each text's new tokens 0.18 s, one pass 0.10 s."""
    table = TermTable()
    for number, text in enumerate(texts):
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        table.tally(text, number)
    return table.chunk_counts()
