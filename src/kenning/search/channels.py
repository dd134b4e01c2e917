"""Stages channels and fuse: every active signal's channel for the query, then one ranking.

In dense mode the dense channel is the ranking. In hybrid mode every registered signal with a weight
above zero gives a channel (rerank fusion reads lexical and dense only; blend adds the graph), and
kenning.search.fusion combines them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kenning import signals
from kenning.query.plan import semantic_text
from kenning.search.constrain import item_docs
from kenning.search.context import QueryState, SearchContext
from kenning.search.fusion import fuse
from kenning.signals.base import SignalQuery

BLEND_FUSIONS = ("blend", "blend_norm")  # Lume's line reads lexical, dense and graph


def signal_query(ctx: SearchContext, state: QueryState) -> SignalQuery:
    """What every signal is told about this query."""
    request, fusion = state.request, state.request.fusion
    return SignalQuery(
        text=semantic_text(state.parsed, state.plan),
        words=[a.text for c in state.parsed.clauses for a in c.alternatives],
        allowed=_allowed(ctx, state),
        holds_word=ctx.view.mask(state.survivors),
        lexical=state.lexical,
        depth=max(request.limit, fusion.depth),
        min_similarity=fusion.min_similarity,
        knobs=dict(fusion.knobs),
        bm25=request.params,
    )


def _allowed(ctx: SearchContext, state: QueryState) -> np.ndarray:
    """Chunks a non-lexical channel may return: with a required clause, only the lexical survivors
    (they hold its terms); else every live chunk that passes the filters and no exclusion."""
    view, plan, filters = ctx.view, state.plan, state.request.filters
    if any(c.required for c in plan.clauses):
        return view.mask(state.survivors)
    allowed = view.live_mask.copy()
    if not filters.is_empty():
        allowed &= view.mask(ctx.resolve_filters(filters))
    for item in plan.exclusions:
        allowed &= ~view.mask(item_docs(item, view, view.live))
    return allowed


def active_signals(state: QueryState) -> list[str]:
    """The signals this query runs, in registry order."""
    if state.mode == "dense":
        return ["dense"]
    fusion = state.request.fusion
    names = [name for name in signals.registered() if fusion.weight(name) > 0]
    if fusion.mode == "rerank":
        names = [n for n in ("lexical", "dense") if n in signals.registered()]
    elif fusion.mode in BLEND_FUSIONS:
        wanted = ("lexical", "dense", "graph") if fusion.weight("graph") > 0 else ("lexical", "dense")
        names = [n for n in wanted if n in signals.registered()]
    return names


def channel_stage(name: str) -> Callable[[SearchContext, QueryState], None]:
    """The stage that asks one signal for its channel (the runner times each signal on its own)."""

    def stage(ctx: SearchContext, state: QueryState) -> None:
        if state.signal_query is None:
            state.signal_query = signal_query(ctx, state)
        channel = signals.get(name).channel(ctx, state.signal_query)
        if channel is not None:
            state.channels[name] = channel
            if channel.info:
                state.funnel.channels[name] = channel.info

    return stage


def fuse_stage(ctx: SearchContext, state: QueryState) -> None:
    if state.mode == "dense":
        dense = state.channels.get("dense")
        state.ranked = (
            [] if dense is None else list(zip(dense.ids.tolist(), dense.scores.tolist(), strict=True))
        )
        state.parts = {
            c: {"dense": {"score": s, "rank": r, "contribution": s}}
            for r, (c, s) in enumerate(state.ranked, 1)
        }
        return
    fusion = state.request.fusion
    fused = fuse(state.channels, fusion)
    state.ranked = list(zip(fused.ids, fused.scores, strict=True))
    state.parts = fused.explain
    state.funnel.channels["fusion"] = {"mode": fusion.mode, "pool": len(fused.ids), "weights": fused.weights}
