"""Stages post and rerank, after fusion: overlap dedup, recency, MMR, diversity and a per-document cap
(kenning.search.postprocess), then the optional reranker (kenning.search.rerank), over a pool of
candidates larger than the limit. Every stage that moves or drops a chunk says so in its
adjustments, and `--explain` shows them."""

from __future__ import annotations

from kenning.models.rerankers import RerankError
from kenning.query.plan import semantic_text
from kenning.search.context import QueryState, SearchContext
from kenning.search.notices import Notice, NoticeKind
from kenning.search.postprocess import Candidate, describe, run_stages
from kenning.search.request import SearchRequest
from kenning.search.rerank import pool_size, rerank
from kenning.store.records import embedding_text


def post_active(request: SearchRequest) -> bool:
    post = request.post
    knobs = (post.recency_lambda, post.diversity_penalty, post.mmr_lambda, post.dedup_threshold, post.cap)
    return any(v is not None for v in knobs)


def pool_for(request: SearchRequest) -> int:
    """How many ranked candidates the later stages need: the reranker's pool, twice the limit when
    post-fusion stages may drop some, else the limit."""
    if request.rerank is not None:
        return pool_size(request.limit)
    return 2 * request.limit if post_active(request) else request.limit


def applies(state: QueryState) -> bool:
    return post_active(state.request) or state.request.rerank is not None


def postprocess(ctx: SearchContext, state: QueryState) -> None:
    post = state.request.post
    ids = [cid for cid, _ in state.ranked]
    only_dedup = (
        ctx.reranker is None
        and post.dedup_threshold is not None
        and not any(
            v is not None for v in (post.recency_lambda, post.diversity_penalty, post.mmr_lambda, post.cap)
        )
    )
    if only_dedup:
        # dedup drops a chunk only below another of its own document, so when the chunks that would
        # be shown are each from a different document, they stay, and those below are never shown:
        # their heads are not read at all
        shown = ids[: state.request.limit]
        heads, groups = ctx.store.chunk_heads_and_groups(shown)
        if len({heads[c].doc_key for c in shown}) == len(shown):
            ctx.heads = heads  # the present stage reuses them
            state.funnel.channels["post"] = {
                "stages": [],
                "skipped": "the chunks shown are each from a different document",
            }
            state.kept = None
            return
        more_heads, more_groups = ctx.store.chunk_heads_and_groups(ids[len(shown) :])
        heads.update(more_heads)
        groups.update(more_groups)
    else:
        heads, groups = ctx.store.chunk_heads_and_groups(ids)
    ctx.heads = heads  # the present stage reuses them
    cands = []
    for cid, score in state.ranked:
        head = heads[cid]
        conversation, message_ids = groups.get(cid, (None, None))
        cands.append(
            Candidate(
                id=cid,
                score=score,
                doc_key=head.doc_key,
                group=conversation or head.path,
                time=head.time,
                lines=(head.start_line, head.end_line)
                if head.start_line is not None and head.end_line is not None
                else None,
                message_ids=message_ids,
                vector=ctx.dense.vector(cid)
                if ctx.dense is not None and post.mmr_lambda is not None
                else None,
            )
        )
    result = run_stages(cands, post)
    state.funnel.channels["post"] = {"stages": result.funnel}
    state.kept = result.kept
    state.ranked = [(c.id, c.score) for c in result.kept]
    state.adjustments = {c.id: c.adjustments for c in result.kept}
    state.dropped = [
        {
            "id": c.id,
            "doc_key": c.doc_key,
            "why": describe(c.adjustments[-1]),
            "adjustment": c.adjustments[-1],
        }
        for c in result.dropped
    ]


def rerank_stage(ctx: SearchContext, state: QueryState) -> None:
    reranker, kept = ctx.reranker, state.kept  # post-processing never skips when a reranker follows
    rows = ctx.store.chunks_by_ids([c.id for c in kept])
    texts = {cid: embedding_text(row.title, row.body) for cid, row in rows.items()}
    try:
        reranked = rerank(kept, semantic_text(state.parsed, state.plan), texts, reranker, state.request.limit)
    except RerankError as exc:  # a reranker that is down or broken costs the reordering, not the answer
        notice = Notice(NoticeKind.NOT_RERANKED, f"{exc}: results are in fused order, not reranked")
        state.notices.append(notice)
        reranked = kept[: state.request.limit]
    state.funnel.channels["rerank"] = {"reranker": reranker.name, "pool": len(kept)}
    state.ranked = [(c.id, c.score) for c in reranked]
    state.adjustments = {c.id: c.adjustments for c in reranked}
