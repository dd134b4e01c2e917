"""The sufficiency judge: does the evidence answer the question, or must the answer be "not found"?

Retrieval always returns something, so the closest passage is never proof. The judge asks what an
honest reader would: does one place in the sources hold what the question asks about, together?

- every name the question uses (its entities) appears in the passage that would answer it, since an
  answer about the wrong person is no answer;
- the best sentence window holds enough of the question: its support (idf-weighted words in the
  sentence and its neighbours, plus meaning when the index has vectors) reaches a threshold.

A false premise ("the name of the ship's cat aboard the Pharaon") fails the second test: the
passages about the Pharaon never say anything about a cat. The thresholds were chosen on the Dracula
dev questions and checked on the Monte Cristo ones (benchmarks/answer_eval.py; docs/answers.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kenning.analysis.analyzer import fold

_WORD = re.compile(r"[^\W_]+")

# with vectors: the threshold with the best balanced accuracy (not-found recall + 1 - false not-found)
# on the Dracula dev questions; words only (an index without vectors): not fitted, scaled down because
# support then has no meaning term
MIN_SUPPORT = {"vectors": 0.70, "words": 0.6}


@dataclass
class Verdict:
    found: bool
    support: float
    threshold: float
    missing_names: list[str]
    missing_terms: list[str]
    # the parts of the best sentence's support, so a reader (and benchmarks/answer_eval.py) sees why
    cosine: float | None = None
    window_words: float = 0.0
    passage_rank: int = 0

    def to_dict(self) -> dict:
        return {
            "found": self.found,
            "support": round(self.support, 4),
            "threshold": self.threshold,
            "missing_names": self.missing_names,
            "missing_terms": self.missing_terms,
            "cosine": None if self.cosine is None else round(self.cosine, 4),
            "window_words": round(self.window_words, 4),
            "passage_rank": self.passage_rank,
        }


def missing_names(passage, names: list[str]) -> list[str]:
    """The question's names (folded entity keys) the passage does not hold as whole words."""
    words = set(_WORD.findall(fold(f"{passage.heading} {passage.body}")))
    return [n for n in names if not all(w in words for w in n.split())]


def judge(best, passage, names: list[str], has_vectors: bool, thresholds=MIN_SUPPORT) -> Verdict:
    threshold = thresholds["vectors" if has_vectors else "words"]
    if best is None:
        return Verdict(False, 0.0, threshold, names, [])
    missing = missing_names(passage, names)
    found = best.support >= threshold and not missing
    return Verdict(
        found, best.support, threshold, missing, best.missing, best.cosine, best.window_words, best.rank
    )
