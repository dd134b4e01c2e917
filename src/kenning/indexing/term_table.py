"""A segment's raw-token table: each raw token's term id, and how many chunks hold it.

Building a segment looks up every token of every new chunk; in Python that per-token work was half
of an analysis worker's time. The table is compiled C (kenning/indexing/_term_table.c, built when
kenning is installed) and this module holds the same table in Python for where it could not be
compiled: `TermTable` is whichever is present, `NATIVE` says which. tests/indexing/test_term_table.py holds
the two equal, and both to `raw_tokens`.

The interface, for one segment (kenning.indexing.segments.SegmentBuilder):
- `scan(text, chunk_id, learn)`: the term ids of an NFC text's tokens as uint32 bytes, the chunk
  counted for each token; tokens it does not know yet go to `learn` (a list, each once), which must
  give each its term (`learn` below) and must not scan; None when some token makes several terms;
- `learn(raws, terms)`: raw tokens' term ids (-1: several terms, an identifier or a CJK run);
- `get(raw)`: a raw token's one term id, or None;
- `count(raws, chunk_id)`: count a chunk for raw tokens the slow path read;
- `tally(text, chunk_id, delta=1)`: count a chunk for an NFC text's raw tokens, unknown ones too (a
  table that only counts; delta -1 takes a removed chunk off);
- `add_counts(counts)`: add {raw token: chunks}, of any sign;
- `chunk_counts()`: {raw token: chunks that hold it}, those at 0 left out;
- `take_counts()`: the same, each count then starting again from zero (a table kept from one
  segment to the next).

`RawCountChanges` holds a run's changes to the spelling vocabulary in one such table: chunks added
less chunks removed.
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

    def scan(self, text: str, chunk_id: int, learn) -> bytes | None:
        tokens = raw_tokens(text)
        self.count(tokens, chunk_id)
        new = [t for t in dict.fromkeys(tokens) if t not in self._terms]
        if new:
            learn(new)
            for token in new:
                if token not in self._terms:
                    raise ValueError(f"scan: learn gave {token!r} no term")
        ids = list(map(self._terms.__getitem__, tokens))
        return None if SEVERAL in ids else array("I", ids).tobytes()

    def learn(self, raws, terms) -> None:
        raws, terms = list(raws), list(terms)
        if len(raws) != len(terms):
            raise ValueError("raws and terms differ in length")
        self._terms.update(zip(raws, terms, strict=True))

    def get(self, raw: str) -> int | None:
        term = self._terms.get(raw)
        return None if term is None or term < 0 else term

    def count(self, raws, chunk_id: int, delta: int = 1) -> None:
        if not 0 <= chunk_id <= 0xFFFFFFFF:
            raise OverflowError(f"chunk id {chunk_id} does not fit a segment's 32 bits")
        stamps, chunks = self._stamps, self._chunks
        for raw in raws:
            if stamps.get(raw) != chunk_id:
                stamps[raw] = chunk_id
                chunks[raw] = chunks.get(raw, 0) + delta

    def tally(self, text: str, chunk_id: int, delta: int = 1) -> None:
        self.count(raw_tokens(text), chunk_id, delta)

    def add_counts(self, counts: dict[str, int]) -> None:
        if not isinstance(counts, dict):
            raise TypeError("counts must be a dict")
        chunks = self._chunks
        for raw, n in counts.items():
            chunks[raw] = chunks.get(raw, 0) + n

    def chunk_counts(self) -> dict[str, int]:
        return {raw: n for raw, n in self._chunks.items() if n}

    def take_counts(self) -> dict[str, int]:
        counts, self._chunks = self.chunk_counts(), {}
        return counts


try:
    from kenning.indexing._term_table import TermTable

    NATIVE = True
except ImportError:  # not compiled here: the same table in Python
    TermTable = PythonTermTable
    NATIVE = False


class RawCountChanges:
    """A run's changes to the spelling vocabulary's counts: each raw token's chunks added (the counts
    the run's analysis hands on, `add`) less its chunks removed (their texts tallied here, `remove`),
    in one table. A re-index's removed chunks mostly hold the words its new ones do, so `take` gives
    the few tokens whose count changed: a Counter of each side, a subtraction and a pass over their
    union cost ~0.1 s of a 1% re-index at 1M chunks, ~150k tokens that changed by 0."""

    def __init__(self):
        self._table = TermTable()
        self._removed = 0  # texts tallied so far: each counts once a token (its own stamp)

    def __len__(self) -> int:
        """Tokens held, changed or not (what `take` lets go)."""
        return len(self._table)

    def add(self, counts: dict[str, int]) -> None:
        self._table.add_counts(counts)

    def remove(self, texts: Iterable[str]) -> None:
        """Take removed chunks' texts off (each raw token once a text, NFC, as a segment counts them)."""
        for text in texts:
            if not text.isascii():
                text = unicodedata.normalize("NFC", text)
            self._table.tally(text, self._removed, -1)
            self._removed = (self._removed + 1) & 0xFFFFFFFF

    def take(self) -> dict[str, int]:
        """Each token's change (none at 0); the counts then start again from nothing."""
        counts = self._table.chunk_counts()
        self._table = TermTable()
        return counts
