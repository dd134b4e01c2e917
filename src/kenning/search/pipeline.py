"""The retrieval pipeline, top to bottom, as named stages over one inspectable data flow.

    parse      -> the query dialect (kenning.query.parser), or plain words
    analyze    -> clauses with their terms (kenning.query.plan)
    gather     -> every chunk holding any positive term (kenning.search.gather)
    filter     -> scopes, then constraints, relaxed when they leave almost nothing (.constrain)
    score      -> BM25 over the survivors (.score)
    rank       -> lexical mode: the BM25 ranking
    <signal>   -> other modes: each active signal's channel (.channels, kenning.signals)
    fuse       -> one ranking from the channels (.channels, .fusion)
    feedback   -> a second fused pass learned from the first one's top chunks (.feedback)
    verbatim   -> chunks holding the whole query word for word first (.verbatim)
    post       -> dedup, recency, MMR, diversity, cap (.refine, .postprocess)
    rerank     -> the optional reranker over the pool (.refine, .rerank)
    present    -> hits with snippets, reasons, evidence and explanations (.present)

Every stage is a function (ctx, state) -> None that reads what earlier stages put in the QueryState
and fills its own fields. The runner times each stage and records the funnel's sizes, so the stages
themselves do no bookkeeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kenning.query.parser import ParsedQuery, parse_query
from kenning.query.plan import plan_query
from kenning.search import feedback, refine
from kenning.search.channels import active_signals, channel_stage, fuse_stage
from kenning.search.constrain import constrain
from kenning.search.context import QueryState, SearchContext
from kenning.search.gather import gather
from kenning.search.present import present, respond
from kenning.search.request import SearchRequest
from kenning.search.results import Funnel, SearchResponse
from kenning.search.score import rank, score
from kenning.search.verbatim import verbatim

Stage = Callable[[SearchContext, QueryState], None]

# which funnel size each stage settles, read from the state when the stage is done
FUNNEL_SIZES: dict[str, tuple[str, Callable[[QueryState], int]]] = {
    "gather": ("gathered", lambda s: len(s.candidates)),
    "filter": ("filtered", lambda s: len(s.survivors)),
    "score": ("scored", lambda s: s.pruned.scored if s.pruned is not None else len(s.survivors)),
    "present": ("returned", lambda s: len(s.hits)),
}


class StageRunner:
    """Runs stages in order, timing each (milliseconds) and recording the funnel's sizes."""

    def __init__(self, ctx: SearchContext, state: QueryState):
        self.ctx, self.state = ctx, state

    def __call__(self, name: str, stage: Stage) -> None:
        started = time.perf_counter()
        stage(self.ctx, self.state)
        funnel = self.state.funnel
        funnel.timings_ms[name] = (time.perf_counter() - started) * 1000.0
        if name in FUNNEL_SIZES:
            size_name, size = FUNNEL_SIZES[name]
            setattr(funnel, size_name, size(self.state))


def analyze(ctx: SearchContext, state: QueryState) -> None:
    scopes = list(state.request.filters.collections) or None
    state.plan = plan_query(state.parsed, ctx, state.request.spell, scopes)


def parse(request: SearchRequest, ctx: SearchContext | None = None) -> ParsedQuery:
    """The request's query read by the dialect, with the glossary's terms of several words (in the
    request's collections) each read as one word."""
    if isinstance(request.query, ParsedQuery):
        return request.query
    phrases = None
    if ctx is not None and ctx.glossary is not None:
        phrases = ctx.glossary.phrases(list(request.filters.collections) or None)
    return parse_query(request.query, request.strict, request.syntax, phrases)


def run_search(ctx: SearchContext, request: SearchRequest, mode: str | None = None) -> SearchResponse:
    """Run every stage for one request against one committed snapshot (`ctx.view`).

    `mode` is the request's mode as resolved (the index turns "auto" into lexical or hybrid):
    "lexical" ranks by BM25 alone; "dense" by cosine alone; "hybrid" fuses every active signal.
    Filters, required clauses and exclusions bind every channel; constraints that leave (almost)
    nothing are set aside and the results that break them come last, marked.
    """
    mode = mode or request.mode
    if mode not in ("lexical", "dense", "hybrid"):
        raise ValueError(f"resolve mode {mode!r} before searching (the index does)")
    if mode == "dense" and ctx.dense is None:
        raise ValueError("mode 'dense' needs vectors: this index has none (run `kenning embed`)")
    funnel = Funnel(corpus=ctx.view.n_docs)
    state = QueryState(request, mode, parse(request, ctx), funnel, pool=refine.pool_for(request))
    run = StageRunner(ctx, state)
    run("analyze", analyze)
    run("gather", gather)
    run("filter", constrain)
    run("score", score)
    if mode == "lexical":
        run("rank", rank)
    else:
        for name in active_signals(state):
            run(name, channel_stage(name))
        run("fuse", fuse_stage)
        if feedback.applies(state):
            run("feedback", feedback.feedback)
    run("verbatim", verbatim)
    if refine.applies(state):
        run("post", refine.postprocess)
        if ctx.reranker is not None:
            run("rerank", refine.rerank_stage)
    run("present", present)
    return respond(ctx, state)
