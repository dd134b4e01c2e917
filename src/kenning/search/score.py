"""Stages score and rank: field-aware BM25 over the survivors only (the funnel's last cut), with
coordination over clauses and k3 query-term weights; then the lexical ranking, which is the answer in
lexical mode and one channel among others in hybrid mode."""

from __future__ import annotations

import numpy as np

from kenning.search.context import QueryState, SearchContext
from kenning.signals.lexical import ScoringClause, ScoringTerm
from kenning.topk import top_k


def score(ctx: SearchContext, state: QueryState) -> None:
    view, survivors = ctx.view, state.survivors
    state.scoring = [
        ScoringClause(
            [ScoringTerm(t, i.item.field, None if i.simple else i.docs) for i in c.items for t in i.terms],
            c.docs if c.needs_docs else None,
            c.label,
            c.qtf,
        )
        for c in state.plan.clauses
    ]
    allowed = view.mask(survivors) if len(survivors) != len(state.candidates) else None
    state.lexical = view.score(state.scoring, state.found, state.request.params, allowed)


def rank(ctx: SearchContext, state: QueryState) -> None:
    """The lexical ranking: the best `pool` survivors by BM25, ties by chunk id."""
    ids = np.frombuffer(state.survivors.to_array(), dtype=np.uint32).astype(np.int64)
    scores = state.lexical[ids] if len(ids) else np.zeros(0)
    top_ids, top_scores = top_k(ids, scores, state.pool)
    state.ranked = list(zip(top_ids.tolist(), top_scores.tolist(), strict=True))
