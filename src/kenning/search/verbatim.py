"""Stage verbatim: chunks holding the whole query word for word come first, in every mode.

Someone who pastes a sentence, an error message or a long name wants the passage it came from,
whatever the vectors think. Results that meet every constraint keep the top of the list first
(kenning.search.relax); among them, verbatim chunks lead.
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from kenning import kernels
from kenning.kernels.arrays import bitmap_of
from kenning.lexical.view import chunks_holding
from kenning.query.parser import ParsedQuery, Phrase
from kenning.query.plan import plan_item
from kenning.search.context import QueryState, SearchContext
from kenning.search.relax import strict_first
from kenning.search.score import lexical_scores

VERBATIM_MIN_WORDS = 5


def verbatim(ctx: SearchContext, state: QueryState) -> None:
    relaxation = state.relaxation
    state.ranked = strict_first(state.ranked, relaxation)
    within = state.survivors if relaxation is None else relaxation.strict
    state.verbatim = verbatim_chunks(ctx, state.parsed, _holding_every_term(state, within))
    if state.verbatim:
        state.ranked = verbatim_first(
            state.ranked, state.verbatim, lambda ids: lexical_scores(ctx, state, ids)
        )
        state.funnel.channels["verbatim"] = {"chunks": len(state.verbatim)}
    state.ranked = state.ranked[: state.pool]


def _holding_every_term(state: QueryState, within: BitMap) -> BitMap:
    """The chunks that hold every term of the query's own words (glossary aliases aside): only they can
    hold the whole query. A cheap cut before the query is analysed again as one phrase; long questions
    rarely pass it."""
    own = dict.fromkeys(t for c in state.plan.clauses for i in c.items if i.via is None for t in i.terms)
    if any(state.found.get(term) is None for term in own):
        return BitMap()
    if own and kernels.NATIVE:  # the terms' postings intersected in one pass, the fewest ids first
        arrays = [state.found[t].ids for t in sorted(own, key=lambda t: state.found[t].df)]
        if len(within) < len(arrays[0]):  # a filter left fewer chunks than the rarest word holds
            return bitmap_of(kernels.intersect_ids([np.frombuffer(within.to_array(), np.uint32), *arrays]))
        return bitmap_of(kernels.intersect_ids(arrays)) & within
    out = within
    for term in sorted(own, key=lambda t: state.found[t].df):  # rarest first: the set shrinks fastest
        out = chunks_holding(out, state.found[term])
        if not out:
            break
    return out


def verbatim_chunks(ctx: SearchContext, parsed: ParsedQuery, survivors: BitMap) -> BitMap:
    """Chunks holding the whole query word for word: someone who pastes a sentence, an error message
    or a long name wants the passage it came from first, whatever the vectors think. The query's own
    text (operators read as words: a pasted message may hold quotes or dashes) of at least
    VERBATIM_MIN_WORDS words (shorter ones are ordinary phrases), checked on token positions among the
    chunks that meet every constraint."""
    if not parsed.clauses or not survivors:
        return BitMap()
    item = plan_item(Phrase(parsed.text), ctx.analyzer)
    if len(item.spec) < VERBATIM_MIN_WORDS:
        return BitMap()
    return ctx.view.phrase_docs(item.spec, survivors)


def verbatim_first(ranked: list[tuple[int, float]], verbatim: BitMap, lexical):
    """Verbatim chunks move to the top in their ranked order (any the fusion left out follow them,
    by lexical score: `lexical(ids)` gives it); the rest keep their order."""
    listed = {cid for cid, _ in ranked}
    absent = [c for c in verbatim if c not in listed]
    score = dict(zip(absent, lexical(absent).tolist(), strict=True)) if absent else {}
    missing = sorted(absent, key=lambda c: (-score[c], c))
    top = [p for p in ranked if p[0] in verbatim] + [(c, score[c]) for c in missing]
    return top + [p for p in ranked if p[0] not in verbatim]
