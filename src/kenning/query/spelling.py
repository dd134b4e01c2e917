"""Spelling: correct query words against the index's own vocabulary.

The vocabulary holds folded surface words (not stems) with how many chunks hold them, kept up to
date as chunks are added and removed. A correction is the vocabulary word at the smallest edit distance
(insertions, deletions, substitutions, adjacent transpositions: at most 1 for words of up to 4
letters, 2 for longer ones), the most frequent first among equals.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kenning.analysis.analyzer import fold

BUCKETS = 32  # letters hash into this many counters for the candidate filter


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (insertions, deletions, substitutions, adjacent
    transpositions), or limit + 1 as soon as it must exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, before[j - 2] + 1)
            current[j] = best
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def _letter_counts(word: str) -> np.ndarray:
    counts = np.zeros(BUCKETS, dtype=np.int16)
    for ch in word:
        counts[ord(ch) % BUCKETS] += 1
    return counts


class Speller:
    """Corrections from one snapshot's vocabulary. The vocabulary is read on the first correction,
    so searches whose words all match pay nothing for spelling.

    Candidates are filtered before any edit distance is computed: k edits change a word's letter
    counts by at most k in each direction, so a word whose counts differ by more cannot be within k
    (the bag distance is a lower bound on the edit distance; hashing letters into buckets only
    lowers it further, so the filter never drops a true candidate). One vectorised pass over the
    vocabulary leaves a handful of words, and the exact distance decides among them.
    """

    def __init__(self, vocabulary: dict[str, int] | Callable[[], dict[str, int]]) -> None:
        self._source = vocabulary  # a dict, or a callable returning one
        self._vocabulary: dict[str, int] | None = None
        self._words: list[str] = []
        self._counts: np.ndarray | None = None

    @property
    def vocabulary(self) -> dict[str, int]:
        if self._vocabulary is None:
            self._vocabulary = self._source() if callable(self._source) else self._source
        return self._vocabulary

    def _letter_matrix(self) -> np.ndarray:
        if self._counts is None:
            self._words = list(self.vocabulary)
            self._counts = np.array([_letter_counts(w) for w in self._words], dtype=np.int16).reshape(
                -1, BUCKETS
            )
        return self._counts

    def correct(self, word: str) -> str | None:
        """The best correction for a word, or None when it is known or nothing is close enough."""
        w = fold(word)
        vocabulary = self.vocabulary
        if not w.isalpha() or w in vocabulary or not vocabulary:
            return None
        limit = 1 if len(w) <= 4 else 2
        diff = self._letter_matrix() - _letter_counts(w)
        bag = np.maximum(np.clip(diff, 0, None).sum(axis=1), np.clip(-diff, 0, None).sum(axis=1))
        best: tuple[int, int, str] | None = None  # (distance, -frequency, word): smallest wins
        for row in np.flatnonzero(bag <= limit).tolist():
            candidate = self._words[row]
            distance = edit_distance(w, candidate, limit)
            if distance <= limit:
                key = (distance, -vocabulary[candidate], candidate)
                best = key if best is None or key < best else best
        return best[2] if best is not None else None
