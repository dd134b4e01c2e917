"""The sufficiency judge: does the evidence answer the question, or must the answer be "not found"?

Retrieval always returns something, so the closest passage is never proof. The judge asks what an
honest reader would: do the sources hold what the question asks about, together?

- every name the question uses (its entities) appears together in one passage of the evidence, since
  an answer about people the sources never bring together is no answer ("Why did Ada Lovelace
  write to Charles Babbage?" when no passage has both);
- a question that asks for a value of a kind a rule recognises (a name, a number, a year, an amount:
  kenning.answer.answer_type) is answered only by a sentence that states such a value on the
  question's topic ("What was Dr. Smith's first name?" is not answered by passages about Dr. Smith
  that never give one);
- any other question is answered when the best sentence of the passages the angles rank highest
  holds enough of it: its support (idf-weighted words in the sentence and its neighbours, meaning
  when the index has vectors, and how high the angles rank its passage) reaches a threshold.

The threshold was chosen on one book's answer dev questions and checked on the other's
(benchmarks/answer_eval.py; docs/answers.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kenning.analysis.analyzer import fold

_WORD = re.compile(r"[^\W_]+")

# with vectors: the threshold with the best balanced accuracy (not-found recall + 1 - false not-found)
# on the answer dev questions; words only (an index without vectors): not fitted, scaled down because
# support then has no meaning term
MIN_SUPPORT = {"vectors": 0.75, "words": 0.6}


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
    answer_type: str | None = None  # the kind of value asked for, when a rule recognises it
    value_stated: bool | None = None  # whether a sentence states one (None: no type)

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
            "answer_type": self.answer_type,
            "value_stated": self.value_stated,
        }


def missing_names(passage, names: list[str], forms=None) -> list[str]:
    """The question's names (folded entity keys) the passage does not hold as whole words, in any of
    their forms (`forms(key)`: the keys naming the same entity, "dantes" for "edmond dantes")."""
    words = set(_WORD.findall(fold(f"{passage.heading} {passage.body}")))
    forms = forms or (lambda key: [key])
    return [n for n in names if not any(all(w in words for w in f.split()) for f in forms(n))]


def names_apart(passages, names: list[str], forms=None) -> list[str]:
    """The names no passage holds together with the others: [] when one passage holds them all, else
    what the passage holding the most of them lacks."""
    if not names:
        return []
    gaps = [missing_names(p, names, forms) for p in passages]
    return min(gaps, key=len) if gaps else list(names)


def judge(
    chosen,
    passages,
    names: list[str],
    kind: str | None,
    has_vectors: bool,
    thresholds=MIN_SUPPORT,
    forms=None,
):
    """`chosen`: the (sentence, passage) pairs the answer would quote, best first; `forms(name)`: the
    keys naming the same entity as a name."""
    threshold = thresholds["vectors" if has_vectors else "words"]
    missing = names_apart(passages, names, forms)
    if not chosen:
        stated = False if kind is not None else None
        return Verdict(False, 0.0, threshold, missing, [], answer_type=kind, value_stated=stated)
    best, _ = max(chosen, key=lambda sp: sp[0].support)
    if kind is not None:
        found = not missing and best.states
    else:
        found = not missing and best.support >= threshold
    return Verdict(
        found,
        best.support,
        threshold,
        missing,
        best.missing,
        best.cosine,
        best.window_words,
        best.rank,
        kind,
        best.states if kind is not None else None,
    )
