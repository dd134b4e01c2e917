"""Field-aware BM25 over title (heading path) and body: the formula, its parameters, and the query's
scoring clauses.

Per query term t and document d, each field f in {title, body} gets a saturated term frequency
S_f(tf, len) and the term contributes  idf(t) * (title_weight * S_title + body_weight * S_body).
The document score is the sum over matched terms, each weighted by how often the query says it,
times a coordination factor coord = floor + (1 - floor) * matched_terms / query_terms
(coordination="clauses"), or with each clause counted by its idf, so that holding the query's rare
word counts for more than holding its common ones (coordination="idf"; a clause no chunk holds
counts as the rarest word).

Query term weight (Robertson's k3 saturation of the query term frequency qtf):
  w(qtf) = (k3 + 1) qtf / (k3 + qtf)     k3 = 0: every distinct term once; large k3: raw qtf
A long question or a pasted paragraph repeats its key terms; this keeps that emphasis, gently.

Variants of S (norm = 1 - b + b * len / avg_len):
- classic: tf (k1 + 1) / (tf + k1 norm)                       (Robertson/Sparck Jones BM25)
- plus:    classic + delta for tf > 0                         (BM25+, Lv & Zhai 2011: a matched term
                                                               never scores ~0 in a very long document)
- l:       c = tf / norm,  (k1 + 1)(c + delta) / (k1 + c + delta) for tf > 0    (BM25L, Lv & Zhai 2011)
- bm25f:   the fields' frequencies are weighted and normalised first and saturated once:
           t = title_weight tf_title / norm_title + body_weight tf_body / norm_body,
           S = t (k1 + 1) / (t + k1)                          (Robertson, Zaragoza & Taylor 2004)
           so a common word in both title and body earns at most (k1 + 1) idf, as in one field,
           where saturating each field alone lets it earn (title_weight + body_weight)(k1 + 1) idf
           and outweigh a rare word the other documents hold once.
IDF: ln(1 + (N - df + 0.5) / (df + 0.5)), floored at zero.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pyroaring import BitMap

from kenning.common.numbers import check_number

if TYPE_CHECKING:
    import numpy.typing as npt

VARIANTS = ("classic", "plus", "l", "bm25f")
COORDINATIONS = ("clauses", "idf")


@dataclass(frozen=True)
class Bm25Params:
    """Every lexical scoring knob.

    The defaults are one setting for all six dev sets, chosen by the smallest margin over each set's
    best lexical peer (benchmarks/tune_lexical.py), from the middle of the flat region where every
    set clears its peer: idf coordination, the stronger saturation k1 = 2 and title weight 1.5 let a
    chunk holding the query's rare words outrank one repeating its common ones. docs/scoring.md
    explains the choice and docs/benchmarks.md has the figures.
    """

    variant: str = "classic"
    k1: float = 2.0
    b: float = 0.75
    delta: float = 1.0
    title_weight: float = 1.5
    body_weight: float = 1.0
    coord_floor: float = 0.3
    k3: float = 2.0
    coordination: str = "idf"

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown BM25 variant {self.variant!r}: choose one of {', '.join(VARIANTS)}")
        if self.coordination not in COORDINATIONS:
            raise ValueError(
                f"unknown coordination {self.coordination!r}: choose one of {', '.join(COORDINATIONS)}"
            )
        check_number("k1", self.k1, 0, 100)
        check_number("b", self.b, 0, 1)
        check_number("delta", self.delta, 0, 100)
        check_number("title_weight", self.title_weight, 0, 1000)
        check_number("body_weight", self.body_weight, 0, 1000)
        check_number("coord_floor", self.coord_floor, 0, 1)
        check_number("k3", self.k3, 0, 1000)

    def query_weight(self, qtf: int) -> float:
        """How much a term the query says `qtf` times counts (1 for a term said once)."""
        return (self.k3 + 1.0) * qtf / (self.k3 + qtf)

    def to_dict(self) -> dict[str, Any]:
        """Every knob by name."""
        return asdict(self)


def idf(n_docs: int, df: int) -> float:
    """Smoothed inverse document frequency, floored at zero."""
    if df <= 0 or n_docs <= 0:
        return 0.0
    return max(0.0, math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)))


def joint_saturate(
    tf_title: np.ndarray,
    title_len: np.ndarray,
    avg_title: float,
    tf_body: np.ndarray,
    body_len: np.ndarray,
    avg_body: float,
    p: Bm25Params,
    field: str | None = None,
) -> np.ndarray:
    """BM25F: the fields' weighted, length-normalised frequencies summed, then saturated once (their
    weights are inside, unlike `saturate`'s); `field` keeps one field's frequency only."""
    t = np.zeros(len(np.atleast_1d(tf_title)))
    if field != "body":
        t = t + field_frequency(tf_title, title_len, avg_title, p.title_weight, p.b)
    if field != "title":
        t = t + field_frequency(tf_body, body_len, avg_body, p.body_weight, p.b)
    return saturate_once(t, p.k1)


def field_frequency(
    tf: npt.ArrayLike, length: npt.ArrayLike, avg_len: float, weight: float, b: float
) -> np.ndarray:
    """One field's part of BM25F's frequency: weight x tf / (1 - b + b len / avg_len); 0 for a field
    no chunk has (avg_len 0)."""
    tf = np.asarray(tf, dtype=np.float64)
    if avg_len <= 0:
        return np.zeros(tf.shape)
    return weight * tf / (1.0 - b + b * np.asarray(length, dtype=np.float64) / avg_len)


def saturate_once(t: np.ndarray, k1: float) -> np.ndarray:
    """t (k1 + 1) / (t + k1), zero where t is."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, t * (k1 + 1.0) / (t + k1), 0.0)


def saturate(tf: np.ndarray, length: np.ndarray, avg_len: float, p: Bm25Params) -> np.ndarray:
    """The variant's saturated term frequency for one field; zero where tf == 0 (not for bm25f,
    whose fields saturate together: `joint_saturate`)."""
    tf = np.asarray(tf, dtype=np.float64)
    norm = 1.0 - p.b + p.b * (np.asarray(length, dtype=np.float64) / avg_len if avg_len > 0 else 1.0)
    present = tf > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        if p.variant == "classic":
            out = tf * (p.k1 + 1.0) / (tf + p.k1 * norm)
        elif p.variant == "plus":
            out = tf * (p.k1 + 1.0) / (tf + p.k1 * norm) + p.delta
        else:  # "l"
            c = tf / norm + p.delta
            out = (p.k1 + 1.0) * c / (p.k1 + c)
    return np.where(present, out, 0.0)


@dataclass
class ScoringTerm:
    """A term to score: in one field or both, for every chunk holding it or only for `docs`."""

    term: str
    field: str | None = None
    docs: BitMap | None = None


@dataclass
class ScoringClause:
    """A unit of coordination: its terms' scores add up, and it counts as matched for `docs`
    (None: for every chunk holding its single term). `qtf`: how many times the query says it."""

    terms: list[ScoringTerm]
    docs: BitMap | None = None
    label: str = ""
    qtf: int = 1
    boost: float = 1.0  # a further weight on the clause (feedback terms carry their feedback weight)
