"""The lexical signal: kenning.lexical's BM25 as a fusion channel (and its feedback pass)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kenning.kernels.topk import top_k
from kenning.lexical.bm25 import ScoringClause, ScoringTerm
from kenning.signals.base import Channel


class LexicalSignal:
    """BM25 as a fusion channel. The lexical stage (kenning.search.score) has already scored every
    survivor, so the channel is their top, and feedback adds the learned terms' BM25 to it."""

    name = "lexical"
    weight = 1.0
    knobs = ()
    help = "field-aware BM25 over title and body"

    def channel(self, ctx, query) -> Channel:
        ids = np.flatnonzero(query.holds_word[: len(query.lexical)]).astype(np.int64)
        top_ids, top_scores = top_k(ids, query.lexical[ids], query.depth)
        return Channel(
            self.name,
            top_ids,
            top_scores,
            score_lookup(query.lexical),
            _background(query.lexical, query.holds_word),
        )

    def feedback(self, ctx, query, learned) -> Channel:
        """The query's BM25 plus the learned terms' (weighted, at `gamma`, scored with the request's
        knobs and no coordination: they are not the query's words), over chunks the query itself
        found."""
        combined = query.lexical
        if learned.terms and learned.gamma > 0:
            terms = [t for t, _ in learned.terms]
            best = learned.terms[0][1]
            found = ctx.view.postings(terms)
            clauses = [ScoringClause([ScoringTerm(t)], boost=w / best) for t, w in learned.terms]
            extra = ctx.view.score(clauses, found, replace(query.bm25, coord_floor=1.0), query.allowed)
            combined = query.lexical + learned.gamma * extra
        candidates = np.flatnonzero((combined > 0) & query.allowed[: len(combined)]).astype(np.int64)
        ids, scores = query.best_found(candidates, combined[candidates], query.depth)
        holds = query.holds_word & query.allowed[: len(query.holds_word)]
        return Channel(self.name, ids, scores, score_lookup(combined), _background(combined, holds))


def score_lookup(scores: np.ndarray):
    """ids -> their score in `scores` (0 for ids beyond it)."""

    def score_of(ids):
        ids = np.asarray(ids, dtype=np.int64)
        return np.where(ids < len(scores), scores[np.minimum(ids, len(scores) - 1)], 0.0)

    return score_of


def _background(scores: np.ndarray, matched: np.ndarray) -> tuple[float, float] | None:
    """Mean and std of the lexical score over the chunks that hold any query term."""
    values = scores[matched[: len(scores)]] if len(scores) else scores
    return (float(values.mean()), float(values.std())) if len(values) > 1 else None
