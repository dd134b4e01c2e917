"""Stage gather: every chunk holding any of the query's positive terms, as one roaring union of their
postings (Lume's first funnel stage), and the postings the later stages score with."""

from __future__ import annotations

from kenning.kernels.arrays import union_of
from kenning.search.context import QueryState, SearchContext


def gather(ctx: SearchContext, state: QueryState) -> None:
    plan = state.plan
    exclusion_terms = [t for i in plan.exclusions for t in i.terms]
    state.found = ctx.view.postings(list(dict.fromkeys(plan.terms + exclusion_terms)))
    state.candidates = union_of([state.found[t].ids for t in plan.terms if state.found[t] is not None])
