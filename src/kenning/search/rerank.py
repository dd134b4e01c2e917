"""Stage rerank: a slower model re-scores an over-fetched pool of the fused candidates.

The pool is `pool_size(limit)` candidates (three times the limit, at least 30); `rerank` reorders it
by the reranker's scores (kenning.models.rerankers) and keeps the top `limit`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kenning.models.rerankers import Reranker, RerankError
from kenning.search.postprocess import Candidate


def pool_size(limit: int) -> int:
    """How many fused candidates to hand the reranker for a final list of `limit`."""
    return max(3 * limit, 30)


def rerank(
    cands: list[Candidate], query: str, texts: dict[int, str], reranker: Reranker | None, limit: int
) -> list[Candidate]:
    """Reorder the pool by reranker score and return the top `limit`.

    Each returned candidate is a copy whose score is the reranker's score and whose adjustments end
    with {"stage": "rerank", "reranker", "before", "after" (1-based ranks), "score",
    "previous_score"}, plus a "note" when the reranker left one (e.g. an unparseable LLM answer) or
    the chunk had no text. Equal reranker scores keep their pool order. With no reranker the pool is
    only cut to `limit`.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit!r}")
    if reranker is None or not cands:
        return list(cands[:limit])
    passages = [texts.get(c.id, "") for c in cands]
    if hasattr(reranker, "score_with_notes"):  # rerankers that can say why a score is odd
        raw, notes = reranker.score_with_notes(query, passages)
        notes = dict(notes)
    else:
        raw, notes = reranker.score(query, passages), {}
    scores = [float(s) for s in raw]
    if len(scores) != len(cands):
        raise RerankError(f"reranker {reranker.name} returned {len(scores)} scores for {len(cands)} passages")
    for i, c in enumerate(cands):
        if c.id not in texts:
            notes[i] = "; ".join(filter(None, [notes.get(i), "no text for this chunk"]))
        if not math.isfinite(scores[i]):
            notes[i] = "; ".join(filter(None, [notes.get(i), f"reranker score {scores[i]} ranked last"]))
    order = sorted(range(len(cands)), key=lambda i: (-scores[i] if math.isfinite(scores[i]) else math.inf, i))
    out = []
    for after, i in enumerate(order[:limit], start=1):
        c = cands[i]
        adj = {
            "stage": "rerank",
            "reranker": reranker.name,
            "before": i + 1,
            "after": after,
            "score": scores[i],
            "previous_score": c.score,
        }
        if notes.get(i):
            adj["note"] = notes[i]
        out.append(replace(c, score=scores[i], adjustments=[*c.adjustments, adj]))
    return out


# ------------------------------------------------------------------------------------------- specs
