"""Stage feedback: pseudo-relevance feedback from the first fused pass, then a second fusion.

The top `feedback_k` chunks move the query vector towards their mean (Rocchio, weight
`feedback_beta`) and lend their most distinctive terms (tf x idf, up to `feedback_terms`, each
weighted by how distinctive it is) to the lexical channel at `feedback_gamma`. Each signal turns what
was learned into its second-pass channel (kenning.signals.base.feedback_channel); a signal without a
feedback hook keeps its first one. Constraints still bind: only allowed chunks score.

Feedback reorders evidence; it never creates it. A chunk may enter the second pass only if the query
itself found it: it holds a query word (a lexical survivor) or its cosine with the query as asked
clears `min_similarity` (SignalQuery.found). Without this, one weak match would pull in its
neighbours and their words, and a query about nothing in the index would come back with confident
results.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kenning import signals
from kenning.lexical.bm25 import idf
from kenning.search.context import QueryState, SearchContext
from kenning.search.fusion import FEEDBACK_FUSIONS, fuse
from kenning.signals.base import Learned, feedback_channel
from kenning.store.records import own_text


def applies(state: QueryState) -> bool:
    fusion, query = state.request.fusion, state.signal_query
    return (
        state.mode == "hybrid"
        and fusion.feedback_k > 0
        and fusion.mode in FEEDBACK_FUSIONS
        and query is not None
        and query.vector is not None
        and bool(state.ranked)
    )


def feedback(ctx: SearchContext, state: QueryState) -> None:
    fusion, query = state.request.fusion, state.signal_query
    learned = learn(ctx, state)
    second = dict(state.channels)
    for name in state.channels:
        replaced = feedback_channel(signals.get(name), ctx, query, learned)
        if replaced is not None:
            second[name] = replaced
    fused = fuse(second, fusion)
    state.funnel.channels["feedback"] = {
        "from": learned.top,
        "terms": [t for t, _ in learned.terms],
        "beta": fusion.feedback_beta,
        "gamma": fusion.feedback_gamma,
        "weights": fused.weights,
    }
    # the second pass scores against the moved query; --explain also shows the query as asked
    ids = np.asarray(fused.ids, dtype=np.int64)
    asked = dict(zip(fused.ids, query.cosine(ids).tolist(), strict=True))
    for cid, parts in fused.explain.items():
        if "dense" in parts:
            parts["dense"]["query_cosine"] = asked.get(cid)
        if "lexical" in parts and cid < len(query.lexical):
            parts["lexical"]["query_score"] = float(query.lexical[cid])
    state.ranked = list(zip(fused.ids, fused.scores, strict=True))
    state.parts = fused.explain


def learn(ctx: SearchContext, state: QueryState) -> Learned:
    """The moved query vector and the weighted expansion terms of the first pass's top chunks."""
    fusion, query = state.request.fusion, state.signal_query
    top = [cid for cid, _ in state.ranked[: fusion.feedback_k]]
    vectors = [v for v in (ctx.dense.vector(c) for c in top) if v is not None]
    moved = query.vector
    if vectors and fusion.feedback_beta > 0:
        moved = query.vector + fusion.feedback_beta * np.mean(vectors, axis=0)
        moved = moved / np.linalg.norm(moved)
    terms = expansion_terms(ctx, state, top, fusion.feedback_terms)
    return Learned([int(c) for c in top], moved, terms, fusion.feedback_gamma)


def expansion_terms(
    ctx: SearchContext, state: QueryState, chunk_ids, n_terms: int
) -> list[tuple[str, float]]:
    """(term, weight) for the terms that best characterise the feedback chunks, best first: weight is
    summed relative frequency x idf; query terms, stopwords, very short terms and terms held by a
    single chunk are left out."""
    if n_terms <= 0:
        return []
    analyzer, view = ctx.analyzer, ctx.view
    weight: dict[str, float] = {}
    for row in ctx.store.chunks_by_ids(list(chunk_ids)).values():
        terms = analyzer.terms(f"{row.title}\n{own_text(row.title, row.body)}")
        for term, n in Counter(terms).items():
            weight[term] = weight.get(term, 0.0) + n / max(len(terms), 1)
    plan = state.plan
    skip = set(plan.terms) | {t for i in plan.exclusions for t in i.terms}
    wanted = [t for t in weight if t not in skip and len(t) >= 3 and not analyzer.is_stopword(t)]
    held, df = view.term_counts(wanted)  # counted from the rows' sizes: no postings read
    scored = []
    for term in wanted:
        if df[term] < 2:
            continue
        scored.append((weight[term] * idf(held, df[term]), term))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [(t, w) for w, t in scored[:n_terms]]
