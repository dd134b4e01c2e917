"""Spelling: correct query words against the index's own vocabulary.

The vocabulary holds folded surface words (not stems) with how many chunks hold them, kept up to
date as chunks are added and removed. A correction is the vocabulary word at the smallest edit distance
(insertions, deletions, substitutions, adjacent transpositions: at most 1 for words of up to 4
letters, 2 for longer ones), the most frequent first among equals.
"""

from __future__ import annotations

from collections import Counter

from kenning.analysis import TOKEN_RE, fold


def vocabulary_delta(analyzer, added_raws: Counter, removed_texts) -> Counter:
    """Changes to the vocabulary counts: for each folded word, the number of chunks holding one of
    its spellings (a chunk with both `The` and `the` counts twice, which is fine for ranking
    corrections), for chunks added minus chunks removed."""
    raws = Counter(added_raws)
    for text in removed_texts:
        raws.subtract(set(TOKEN_RE.findall(text)))
    delta: Counter = Counter()
    for raw, n in raws.items():
        if n:
            for word in analyzer.vocabulary_words((raw,)):
                delta[word] += n
    return delta


def _edits1(word: str, letters: str) -> set[str]:
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    transposes = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in letters}
    inserts = {a + c + b for a, b in splits for c in letters}
    return deletes | transposes | replaces | inserts


class Speller:
    """Corrections from one snapshot's vocabulary. The vocabulary is read on the first correction,
    so searches whose words all match pay nothing for spelling."""

    def __init__(self, vocabulary):
        self._source = vocabulary  # a dict, or a callable returning one
        self._vocabulary: dict[str, int] | None = None
        self._letters = ""

    @property
    def vocabulary(self) -> dict[str, int]:
        if self._vocabulary is None:
            self._vocabulary = self._source() if callable(self._source) else self._source
            counts = Counter(c for w in self._vocabulary for c in w)
            self._letters = "".join(c for c, _ in counts.most_common(40))
        return self._vocabulary

    def correct(self, word: str) -> str | None:
        """The best correction for a word, or None when it is known or nothing is close enough."""
        w = fold(word)
        vocabulary = self.vocabulary
        if not w.isalpha() or w in vocabulary or not vocabulary:
            return None
        first = _edits1(w, self._letters)
        best = [e for e in first if e in vocabulary]
        if not best and len(w) > 4:
            best = [e2 for e1 in first for e2 in _edits1(e1, self._letters) if e2 in vocabulary]
        if not best:
            return None
        return max(best, key=lambda c: (vocabulary[c], c))
