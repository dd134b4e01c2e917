"""Stages that run after fusion over a ranked list of candidates. Each is optional, pure and explained.

    apply_recency      score x 1 / (1 + lam * age_days); undated candidates keep their score
    dedup_overlap      drop a candidate whose messages or lines are mostly shown already
    mmr                greedy maximal marginal relevance over embedding vectors
    diversity_penalty  damp the third and later candidates from one group (file, conversation, ...)
    cap_per_document   at most N candidates from one document

Rules every stage keeps:

* Inputs are never mutated. Each stage returns new `Candidate` objects, whose `adjustments` list is
  the old list plus one dict for this stage. Every candidate a stage changes, moves or drops gets one.
* A stage that changes scores (recency, diversity) re-sorts by score descending, then id ascending.
  A stage that only drops (dedup, cap) keeps the input order, so it can follow MMR without undoing it.
* A stage that drops returns `StageResult(kept, dropped)`. The dropped candidates carry an adjustment
  with `"dropped": True` and the reason, and `describe()` turns any adjustment into a line of text,
  e.g. "dropped by dedup: 62% of its lines already shown (by #12)".

`run_stages` chains them in the order that keeps each one's effect: recency, diversity (both re-sort),
then MMR or overlap dedup, then the per-document cap.
"""

from __future__ import annotations

import math
import time as _time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from kenning.common.numbers import check_number

SECONDS_PER_DAY = 86400.0


@dataclass
class Candidate:
    id: int  # chunk id
    score: float  # current fused score (higher is better)
    doc_key: str  # document (file path or BEIR id)
    group: str = ""  # diversity group: file, conversation or collection (caller decides); "" = none
    time: float | None = None  # document time, epoch seconds
    lines: tuple[int, int] | None = None  # start/end line in its document (inclusive)
    message_ids: list[str] | None = None  # for message-log chunks
    vector: np.ndarray | None = None  # L2-normalised embedding, when known
    adjustments: list[dict] = field(default_factory=list)  # what each stage did, in order


class StageResult(NamedTuple):
    kept: list[Candidate]
    dropped: list[Candidate]


def rank_key(c: Candidate) -> tuple[float, int]:
    """Score descending, then chunk id ascending."""
    return (-c.score, c.id)


def sort_candidates(cands: list[Candidate]) -> list[Candidate]:
    return sorted(cands, key=rank_key)


def _with(c: Candidate, adjustment: dict, **changes) -> Candidate:
    """A copy of `c` with one more adjustment (and any field changes); `c` itself is untouched.
    (`dataclasses.replace` did the same through `__init__`, several times slower: dedup copies
    each candidate it drops, about half of a chat log's overlapping windows.)"""
    copied = object.__new__(Candidate)
    copied.__dict__.update(c.__dict__, adjustments=[*c.adjustments, adjustment], **changes)
    return copied


# ------------------------------------------------------------------------------------------- recency
def apply_recency(cands: list[Candidate], lam: float, now: float | None = None) -> list[Candidate]:
    """Multiply each score by 1 / (1 + lam * age_days), then re-sort.

    Age is counted from `now` (epoch seconds; the current time when None). A document dated in the
    future counts as age 0. A candidate without a time keeps its score and says it was undated.
    """
    if lam < 0 or not math.isfinite(lam):
        raise ValueError(f"recency lambda must be a finite number >= 0, got {lam!r}")
    now = _time.time() if now is None else now
    out = []
    for c in cands:
        if c.time is None:
            out.append(_with(c, {"stage": "recency", "factor": 1.0, "age_days": None, "undated": True}))
            continue
        age = max(0.0, (now - c.time) / SECONDS_PER_DAY)
        factor = 1.0 / (1.0 + lam * age)
        out.append(_with(c, {"stage": "recency", "factor": factor, "age_days": age}, score=c.score * factor))
    return sort_candidates(out)


# --------------------------------------------------------------------------------------------- dedup
def _covered_lines(span: tuple[int, int], kept_spans: list[tuple[int, int, int]]) -> tuple[int, list[int]]:
    """How many lines of `span` lie in the union of `kept_spans` (start, end, id), and which ids overlap."""
    lo, hi = span
    clipped = sorted((max(lo, s), min(hi, e)) for s, e, _ in kept_spans if s <= hi and e >= lo)
    by = sorted({i for s, e, i in kept_spans if s <= hi and e >= lo})
    covered, cur_lo, cur_hi = 0, None, None
    for s, e in clipped:
        if cur_hi is None or s > cur_hi + 1:
            if cur_hi is not None:
                covered += cur_hi - cur_lo + 1
            cur_lo, cur_hi = s, e
        else:
            cur_hi = max(cur_hi, e)
    if cur_hi is not None:
        covered += cur_hi - cur_lo + 1
    return covered, by


def _span(lines: tuple[int, int]) -> tuple[int, int]:
    a, b = lines
    return (min(a, b), max(a, b))


def dedup_overlap(cands: list[Candidate], threshold: float = 0.5) -> StageResult:
    """Walk the list in order (best first) and drop each candidate whose content is already shown.

    Coverage is the share of a candidate's message ids already in kept candidates of the same
    document; for chunks without message ids, the share of its line range (inclusive) already covered
    by kept ranges of the same document. Messages decide when they are known: a window of a log
    sorted by time can span lines from all over an unsorted file, so its line range says nothing.
    A candidate with coverage >= threshold is dropped; the first candidate is always kept, and so is
    one with neither messages nor lines.
    Message ids are compared within a document, so logs that number their messages 1, 2, 3 do not
    collide.
    """
    if not (0.0 < threshold <= 1.0):
        raise ValueError(f"dedup threshold must be in (0, 1], got {threshold!r}")
    kept: list[Candidate] = []
    dropped: list[Candidate] = []
    seen_messages: dict[tuple[str, str], int] = {}  # (doc_key, message id) -> id of the kept chunk
    kept_spans: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for c in cands:
        shares: list[tuple[float, str, list[int], int, int]] = []  # (share, basis, by, covered, total)
        if c.message_ids:
            ids = list(dict.fromkeys(c.message_ids))
            hits = [seen_messages[(c.doc_key, m)] for m in ids if (c.doc_key, m) in seen_messages]
            shares.append((len(hits) / len(ids), "messages", sorted(set(hits)), len(hits), len(ids)))
        elif c.lines is not None:
            span = _span(c.lines)
            covered, by = _covered_lines(span, kept_spans[c.doc_key])
            total = span[1] - span[0] + 1
            shares.append((covered / total, "lines", by, covered, total))
        best = max(shares, key=lambda s: s[0]) if shares else None
        if kept and best is not None and best[0] >= threshold:
            share, basis, by, covered, total = best
            dropped.append(
                _with(
                    c,
                    {
                        "stage": "dedup",
                        "dropped": True,
                        "basis": basis,
                        "covered": share,
                        "covered_count": covered,
                        "total": total,
                        "threshold": threshold,
                        "by": by,
                    },
                )
            )
            continue
        kept.append(c)
        for m in c.message_ids or ():
            seen_messages.setdefault((c.doc_key, m), c.id)
        if c.lines is not None:
            s, e = _span(c.lines)
            kept_spans[c.doc_key].append((s, e, c.id))
    return StageResult(kept, dropped)


# ----------------------------------------------------------------------------------------------- mmr
def _unit(v: np.ndarray | None) -> np.ndarray | None:
    if v is None:
        return None
    v = np.asarray(v, dtype=np.float64).ravel()
    n = float(np.linalg.norm(v))
    return v / n if n > 0 and math.isfinite(n) else None


def mmr(cands: list[Candidate], lam: float = 0.7, k: int | None = None) -> list[Candidate]:
    """Greedy maximal marginal relevance: the first `k` in MMR order, then the rest in input order.

    relevance = score min-max normalised to [0, 1] over the input (1 for all when scores are equal);
    similarity = cosine of the vectors (0 when either has no vector). Each step picks the candidate
    with the largest lam * relevance - (1 - lam) * max similarity to those picked so far; ties go to
    the higher score, then the lower id. Scores are not changed. Each picked candidate records its
    old and new rank (1-based), relevance, max similarity and the picked candidate it was closest to.
    """
    if not (0.0 <= lam <= 1.0):
        raise ValueError(f"MMR lambda must be in [0, 1], got {lam!r}")
    n = len(cands)
    k = n if k is None else max(0, min(k, n))
    if n == 0:
        return []
    scores = np.array([c.score for c in cands], dtype=np.float64)
    lo, hi = float(scores.min()), float(scores.max())
    rel = (scores - lo) / (hi - lo) if hi > lo else np.ones(n)
    units = [_unit(c.vector) for c in cands]
    max_sim = np.zeros(n)
    closest: list[int | None] = [None] * n  # index of the picked candidate each one is closest to
    remaining = list(range(n))
    picked: list[tuple[int, float]] = []  # (index, mmr value)
    while len(picked) < k:
        best = max(
            remaining,
            key=lambda i: (lam * rel[i] - (1.0 - lam) * max_sim[i], cands[i].score, -cands[i].id),
        )
        value = float(lam * rel[best] - (1.0 - lam) * max_sim[best])
        picked.append((best, value))
        remaining.remove(best)
        u = units[best]
        for i in remaining:  # max over the picked set; a missing vector makes the similarity 0
            sim = float(np.dot(units[i], u)) if u is not None and units[i] is not None else 0.0
            if closest[i] is None or sim > max_sim[i]:
                max_sim[i], closest[i] = sim, best
    out = []
    for new_rank, (i, value) in enumerate(picked, start=1):
        c = cands[i]
        sim_to = cands[closest[i]].id if closest[i] is not None and max_sim[i] != 0 else None
        adj = {
            "stage": "mmr",
            "before": i + 1,
            "after": new_rank,
            "mmr": value,
            "relevance": float(rel[i]),
            "max_sim": float(max_sim[i]),
            "similar_to": sim_to,
            "lambda": lam,
        }
        if units[i] is None:
            adj["no_vector"] = True
        out.append(_with(c, adj))
    for i in remaining:  # beyond k: input order; note the ones whose rank moved
        new_rank = len(out) + 1
        c = cands[i]
        if new_rank != i + 1:
            c = _with(c, {"stage": "mmr", "before": i + 1, "after": new_rank, "beyond_k": True, "k": k})
        out.append(c)
    return out


# ----------------------------------------------------------------------------------------- diversity
def diversity_penalty(cands: list[Candidate], penalty: float = 0.85, free: int = 2) -> list[Candidate]:
    """Walking best first, the (free+1)-th and later candidates of one group get score x
    penalty ** (count - free), where count is the candidate's 1-based position within its group.
    Then re-sort. Candidates with group "" belong to no group and are never penalised."""
    if not (0.0 < penalty <= 1.0):
        raise ValueError(f"diversity penalty must be in (0, 1], got {penalty!r}")
    if free < 0:
        raise ValueError(f"diversity free count must be >= 0, got {free!r}")
    counts: dict[str, int] = defaultdict(int)
    out = []
    for c in cands:
        if not c.group:
            out.append(c)
            continue
        counts[c.group] += 1
        count = counts[c.group]
        if count <= free:
            out.append(c)
            continue
        factor = penalty ** (count - free)
        adj = {"stage": "diversity", "factor": factor, "group": c.group, "nth_in_group": count, "free": free}
        out.append(_with(c, adj, score=c.score * factor))
    return sort_candidates(out)


# ----------------------------------------------------------------------------------------------- cap
def cap_per_document(cands: list[Candidate], cap: int) -> StageResult:
    """Keep at most `cap` candidates per doc_key, in input order; the rest are dropped."""
    if cap < 1:
        raise ValueError(f"per-document cap must be >= 1, got {cap!r}")
    counts: dict[str, int] = defaultdict(int)
    kept_ids: dict[str, list[int]] = defaultdict(list)
    kept, dropped = [], []
    for c in cands:
        counts[c.doc_key] += 1
        if counts[c.doc_key] <= cap:
            kept.append(c)
            kept_ids[c.doc_key].append(c.id)
            continue
        adj = {
            "stage": "cap",
            "dropped": True,
            "cap": cap,
            "doc_key": c.doc_key,
            "nth_in_doc": counts[c.doc_key],
            "by": list(kept_ids[c.doc_key]),
        }
        dropped.append(_with(c, adj))
    return StageResult(kept, dropped)


# ------------------------------------------------------------------------------------------ pipeline
@dataclass
class PostprocessOptions:
    """Which stages run, and with what settings. None switches a stage off."""

    recency_lambda: float | None = None  # e.g. 0.01
    now: float | None = None
    diversity_penalty: float | None = None  # e.g. 0.85
    diversity_free: int = 2
    mmr_lambda: float | None = None  # when set, MMR runs (needs vectors) ...
    mmr_k: int | None = None
    dedup_threshold: float | None = 0.5  # ... and overlap dedup runs after it (or alone)
    cap: int | None = None

    def __post_init__(self):
        """Settings are checked when given, not when a stage first meets them (maybe never)."""
        checks = [
            ("recency lambda", self.recency_lambda, 0, 1000, False, False),
            ("diversity penalty", self.diversity_penalty, 0, 1, False, True),
            ("diversity free count", self.diversity_free, 0, 100_000, True, False),
            ("MMR lambda", self.mmr_lambda, 0, 1, False, False),
            ("MMR pool", self.mmr_k, 1, 100_000, True, False),
            ("dedup threshold", self.dedup_threshold, 0, 1, False, False),
            ("per-document cap", self.cap, 1, 100_000, True, False),
        ]
        for name, value, low, high, integer, low_open in checks:
            if value is not None:
                check_number(name, value, low, high, integer=integer, low_open=low_open)


@dataclass
class PostprocessResult:
    kept: list[Candidate]
    dropped: list[Candidate]
    funnel: list[dict]  # [{"stage": "recency", "in": 40, "out": 40}, ...]


def run_stages(cands: list[Candidate], opts: PostprocessOptions) -> PostprocessResult:
    """recency -> diversity -> mmr -> dedup -> cap, each only when switched on."""
    # (stage, switched on, the stage: candidates -> (kept, dropped)), in order
    stages = [
        ("recency", opts.recency_lambda, lambda c: (apply_recency(c, opts.recency_lambda, opts.now), [])),
        (
            "diversity",
            opts.diversity_penalty,
            lambda c: (diversity_penalty(c, opts.diversity_penalty, opts.diversity_free), []),
        ),
        ("mmr", opts.mmr_lambda, lambda c: (mmr(c, opts.mmr_lambda, opts.mmr_k), [])),
        ("dedup", opts.dedup_threshold, lambda c: dedup_overlap(c, opts.dedup_threshold)),
        ("cap", opts.cap, lambda c: cap_per_document(c, opts.cap)),
    ]
    funnel: list[dict] = []
    dropped: list[Candidate] = []
    cur = list(cands)
    for name, setting, stage in stages:
        if setting is None:
            continue
        before = len(cur)
        cur, gone = stage(cur)
        dropped.extend(gone)
        funnel.append({"stage": name, "in": before, "out": len(cur)})
    return PostprocessResult(cur, dropped, funnel)


# ------------------------------------------------------------------------------------------- explain
def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _ids(ids: list[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def describe(adj: dict) -> str:
    """One line of plain text for an adjustment recorded by a stage here or by `kenning.search.rerank`."""
    stage = adj.get("stage")
    if stage == "recency":
        if adj.get("undated"):
            return "recency: undated, score unchanged"
        return f"recency x{adj['factor']:.3f} ({adj['age_days']:.1f} days old)"
    if stage == "dedup":
        by = f" (by {_ids(adj['by'])})" if adj.get("by") else ""
        return f"dropped by dedup: {adj['covered']:.0%} of its {adj['basis']} already shown{by}"
    if stage == "mmr":
        if adj.get("beyond_k"):
            return f"mmr: not among the first {adj['k']}, rank {adj['before']} -> {adj['after']}"
        sim = (
            f", max similarity {adj['max_sim']:.2f} to #{adj['similar_to']}"
            if adj.get("similar_to") is not None
            else ""
        )
        novec = ", no vector" if adj.get("no_vector") else ""
        return f"mmr: rank {adj['before']} -> {adj['after']} (relevance {adj['relevance']:.2f}{sim}{novec})"
    if stage == "diversity":
        return (
            f"diversity x{adj['factor']:.3f} ({_ordinal(adj['nth_in_group'])} result from "
            f"'{adj['group']}', {adj['free']} free)"
        )
    if stage == "cap":
        return f"dropped by cap: {adj['cap']} results from this document already kept ({_ids(adj['by'])})"
    if stage == "rerank":
        note = f"; {adj['note']}" if adj.get("note") else ""
        who = adj.get("reranker", "?")
        return f"rerank ({who}): rank {adj['before']} -> {adj['after']} (score {adj['score']:.4g}{note})"
    return f"{stage}: {adj}"
