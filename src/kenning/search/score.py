"""Stages score and rank: field-aware BM25 over the survivors only (the funnel's last cut), with
coordination over clauses and k3 query-term weights; then the lexical ranking, which is the answer in
lexical mode and one channel among others in hybrid mode.

In lexical mode only the best `pool` chunks are needed, so plain queries are scored with dynamic
pruning (kenning.lexical.pruning): exactly the same top, without scoring the chunks that cannot reach
it; the funnel says how many were skipped. The other modes need every survivor's score (fusion
normalises a channel against all of them), and so do queries with phrases or glossary expansions."""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from kenning.kernels.topk import top_k_of_dense
from kenning.lexical.bm25 import ScoringClause, ScoringTerm
from kenning.lexical.pruning import pruned_top_k, score_ids
from kenning.search.context import QueryState, SearchContext
from kenning.signals.lexical import score_lookup


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
    params = state.request.params
    if state.mode == "lexical" and state.request.pruning:
        state.pruned = pruned_top_k(view, state.scoring, state.found, params, allowed, state.pool)
        if state.pruned is not None:
            state.funnel.channels["pruning"] = {
                "scored": state.pruned.scored,
                "skipped": len(survivors) - state.pruned.scored,
                "how": state.pruned.how,
            }
            return
    state.lexical = view.score(state.scoring, state.found, params, allowed)


def lexical_scores(ctx: SearchContext, state: QueryState, ids) -> np.ndarray:
    """The BM25 scores of some chunks, whether the score stage scored every survivor or pruned."""
    ids = np.asarray(ids, dtype=np.int64)
    if state.pruned is not None:
        return score_ids(ctx.view, state.scoring, state.found, state.request.params, ids)
    return score_lookup(state.lexical)(ids)


def rank(ctx: SearchContext, state: QueryState) -> None:
    """The lexical ranking: the best `pool` survivors by BM25, ties by chunk id. A survivor that
    matches no clause (it holds a phrase's words, but apart) is not a lexical hit."""
    if state.pruned is not None:
        state.ranked = list(zip(state.pruned.ids.tolist(), state.pruned.scores.tolist(), strict=True))
        return
    survivors = state.survivors
    matching = _matching_a_clause(state)
    if matching is not None:
        survivors = survivors & matching
    ids = np.frombuffer(survivors.to_array(), dtype=np.uint32)
    top_ids, top_scores = top_k_of_dense(ids, state.lexical, state.pool)
    state.ranked = list(zip(top_ids.tolist(), top_scores.tolist(), strict=True))


def _matching_a_clause(state: QueryState) -> BitMap | None:
    """The chunks that match at least one of the plan's clauses, or None when every survivor does:
    the survivors were gathered from the postings of every term, so only a clause whose matches are
    not its terms' postings (a soft phrase, a glossary group holding one) can leave a survivor
    matching nothing."""
    clauses = state.plan.clauses
    if not any(c.needs_docs and not c.required for c in clauses):
        return None
    out = BitMap()
    for clause in clauses:
        if clause.docs is not None:
            out |= clause.docs
            continue
        for item in clause.items:
            for term in item.terms:
                postings = state.found.get(term)
                if postings is not None:
                    out |= postings.bitmap
    return out
