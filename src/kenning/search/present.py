"""Stage present: ranked ids become hits a person or an agent can read, and the response says what
the search did.

Each hit gets its row (or, for eval and benchmarks, only its head), a snippet with the matched terms
marked, its match reasons (which words, phrases and glossary aliases matched, in which field), its
evidence (how much of the query it holds, whatever its fused score), each channel's part, what the
post-fusion stages did to it, and, with explain, every number behind its lexical score and what each
other signal says about it. The response carries the notices (relaxed constraints, corrections,
words no chunk holds, results that are only semantically similar), "did you mean" suggestions, and a
plain statement of what emptied the result when nothing matched.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
from pyroaring import BitMap

from kenning import signals
from kenning.query.filters import Filters
from kenning.query.plan import QueryPlan
from kenning.search.confidence import confidence
from kenning.search.context import QueryState, SearchContext
from kenning.search.message_lines import is_message_window, message_lines
from kenning.search.notices import Notice, NoticeKind
from kenning.search.results import Funnel, Hit, SearchResponse
from kenning.search.snippets import make_snippet
from kenning.signals.base import explain_signal
from kenning.store.records import own_text


def present(ctx: SearchContext, state: QueryState) -> None:
    request, plan = state.request, state.plan
    state.ranked = state.ranked[: request.limit]
    hits = _hits(state.ranked, ctx, state)
    relaxation = state.relaxation
    for hit in hits:
        hit.relaxed = relaxation.broken(hit.id) if relaxation is not None else []
        hit.verbatim = hit.id in state.verbatim
        hit.channels = state.parts.get(hit.id, {})
        hit.adjustments = state.adjustments.get(hit.id, [])
    if request.detail == "full":
        weights = _clause_weights(plan, ctx.view)
        cosines = _query_cosines(hits, ctx, state)
        background = _cosine_background(ctx, state) if cosines else None
        for hit in hits:
            hit.evidence = _evidence(hit, weights, cosines.get(hit.id), background)
            hit.confidence = confidence(hit.evidence)
    state.hits = hits


def respond(ctx: SearchContext, state: QueryState) -> SearchResponse:
    """The response: hits, plan, funnel, and what the search has to say about them."""
    request, plan, parsed, funnel = state.request, state.plan, state.parsed, state.funnel
    hits, found, relaxation = state.hits, state.found, state.relaxation
    response = SearchResponse(parsed.text, plan, hits, funnel, request.params, request.filters)
    response.dropped = state.dropped
    if relaxation is not None and hits:
        response.relaxed = relaxation.to_dict()
    response.missing_terms = [t for t in plan.terms if found.get(t) is None]
    response.notices = [Notice(NoticeKind.QUERY, text) for text in parsed.notices] + [
        Notice(NoticeKind.CORRECTED, f"searched for {c['to']!r} instead of {c['from']!r}")
        for c in plan.corrections
    ]
    response.notices += state.notices
    if response.relaxed:
        response.notices.append(Notice(NoticeKind.RELAXED, relaxation.notice()))
    if request.detail == "full" and ctx.speller is not None:
        for word in dict.fromkeys(plan.zero_hit_words):
            if any(c["from"] == word for c in plan.corrections):
                continue
            guess = ctx.speller.correct(word)
            if guess and guess != word:
                response.suggestions.append({"word": word, "did_you_mean": guess})
    semantic_only = state.mode != "lexical" and bool(hits) and not any(h.id in state.survivors for h in hits)
    if semantic_only:
        response.notices.append(
            Notice(
                NoticeKind.SEMANTIC_ONLY,
                "no chunk contains the query's words; these results are only semantically similar",
            )
        )
    else:
        corrected = {c["from"] for c in plan.corrections}
        absent = [w for w in dict.fromkeys(plan.zero_hit_words) if w not in corrected]
        if hits and absent:
            missing = " or ".join(repr(w) for w in absent)
            text = f"no chunk contains {missing}; the results match the other words"
            response.notices.append(Notice(NoticeKind.PARTIAL, text))
    if not hits:
        response.empty_reason = _why_empty(plan, funnel, found, request.filters, ctx)
    return response


def _hits(ranked, ctx: SearchContext, state: QueryState) -> list[Hit]:
    """detail="heads" reads only what a ranked list needs (document key, title, location), which is
    what eval and benchmarks use; "full" adds metadata, a snippet and the match reasons."""
    request, plan = state.request, state.plan
    ids = [cid for cid, _ in ranked]
    hits = []
    if request.detail == "heads":
        cached = ctx.heads or {}
        heads = cached if all(c in cached for c in ids) else ctx.store.chunk_heads(ids)
        for cid, score in ranked:
            h = heads[cid]
            hits.append(Hit(cid, score, h.title, h.path, h.doc_key, h.start_line, h.end_line, h.page, h.time))
    else:
        rows = ctx.store.chunks_by_ids(ids)
        term_set = set(plan.terms)
        for cid, score in ranked:
            row = rows[cid]
            hits.append(
                Hit(
                    cid,
                    score,
                    row.title,
                    row.path,
                    row.doc_key,
                    row.start_line,
                    row.end_line,
                    row.page,
                    row.time,
                    row.meta,
                )
            )
            hits[-1].defer_snippet(partial(_snippet_of, row, term_set, ctx.analyzer))
        for hit in hits:
            hit.match_reasons = _match_reasons(hit.id, plan, state.found, ctx.view)
    if request.explain:
        for hit in hits:
            hit.explain = {"lexical": ctx.view.explain(hit.id, state.scoring, state.found, request.params)}
            for name in state.channels:
                said = explain_signal(signals.get(name), ctx, state.signal_query, hit.id)
                if said is not None:
                    hit.explain[name] = said
    return hits


def _snippet_of(row, terms: set[str], analyzer):
    """The hit's snippet, made when it is first read (kenning.search.results.Hit), and for a chat
    window the messages that matched (kenning.search.message_lines)."""
    snippet = make_snippet(own_text(row.title, row.body), terms, analyzer)
    if is_message_window(row.meta):
        return replace(snippet, messages=message_lines(row.body, row.meta, terms, analyzer))
    return snippet


def _clause_weights(plan: QueryPlan, view) -> dict[str, float]:
    """Each clause's weight in the coverage: the idf of its rarest way to match (a phrase counts
    the idf of all its words), so holding "dantes" counts for more than holding "said"."""
    weights: dict[str, float] = {}
    for clause in plan.clauses:
        best = max((sum(view.idf(t) for t in item.terms) for item in clause.items), default=0.0)
        weights[clause.label] = max(weights.get(clause.label, 0.0), best)
    return weights


def _query_cosines(hits: list[Hit], ctx: SearchContext, state: QueryState) -> dict[int, float]:
    """The cosine of every hit that has a vector with the query as asked (not the feedback-moved
    query), whichever channel found it; empty when the query was not embedded (lexical mode)."""
    query = state.signal_query
    if query is None or query.cosine is None or not hits:
        return {}
    with_vector = [h.id for h in hits if ctx.dense.vector(h.id) is not None]
    if not with_vector:
        return {}
    values = query.cosine(np.asarray(with_vector, dtype=np.int64))
    return {cid: float(v) for cid, v in zip(with_vector, values.tolist(), strict=True)}


def _cosine_background(ctx: SearchContext, state: QueryState) -> tuple[float, float] | None:
    """Mean and std of the query's cosine over the corpus: what an unremarkable chunk scores (the
    dense channel of the first pass worked it out for the query as asked)."""
    dense = state.channels.get("dense")
    mean, std = (
        dense.background if dense and dense.background else ctx.dense.background(state.signal_query.vector)
    )
    return (mean, std) if std > 0 else None


def _evidence(hit: Hit, weights: dict[str, float], cosine: float | None, background) -> dict:
    """How much of the query this hit holds, whatever its fused score: the clauses (query words,
    phrases, quoted terms) it matches, the same weighted by idf, its cosine with the query, and how
    many standard deviations that cosine stands above the corpus's (comparable across queries and
    collections, where a bare cosine runs higher for some queries and some models than others)."""
    matched = {reason["clause"] for reason in hit.match_reasons}
    total = sum(weights.values())
    coverage = sum(w for label, w in weights.items() if label in matched) / total if total > 0 else 0.0
    cosine_z = None
    if cosine is not None and background is not None:
        cosine_z = round((cosine - background[0]) / background[1], 4)
    return {
        "clauses_matched": len(matched),
        "clauses": len(weights),
        "coverage": round(coverage, 4),
        "query_cosine": cosine,
        "cosine_z": cosine_z,
    }


def _match_reasons(chunk_id: int, plan: QueryPlan, found, view) -> list[dict]:
    reasons = []
    for clause in plan.clauses:
        for item in clause.items:
            if item.docs is not None and chunk_id not in item.docs:
                continue
            fields = set()
            if len(item.spec) > 1:  # a phrase: the fields where the words line up
                this = BitMap([chunk_id])
                for f in [item.item.field] if item.item.field else ["title", "body"]:
                    if view.phrase_docs(item.spec, this, f):
                        fields.add(f)
            else:
                for term in item.terms:
                    tf_title, tf_body = view.term_frequencies(found.get(term), chunk_id)
                    if tf_title and item.item.field != "body":
                        fields.add("title")
                    if tf_body and item.item.field != "title":
                        fields.add("body")
            if fields:
                reasons.append(
                    {
                        "clause": clause.label,
                        "matched": item.describe(),
                        "via_glossary": item.via,
                        "glossary_group": item.group,
                        "fields": sorted(fields),
                    }
                )
    return reasons


def _why_empty(plan: QueryPlan, funnel: Funnel, found, filters: Filters, ctx: SearchContext) -> str:
    """Say which term, clause or filter emptied the result, instead of an empty list alone."""
    if not plan.clauses:
        if plan.exclusions:
            return "the query only excludes; add a word to search for"
        return "nothing to search for (no words with letters or digits)"
    scope = f" in {'; '.join(filters.describe())}" if not filters.is_empty() else ""
    for clause in plan.clauses:
        if clause.required and not any(found.get(t) is not None for i in clause.items for t in i.terms):
            return f"{clause.label} has no postings: no indexed chunk contains it"
    words = ", ".join(dict.fromkeys(i.describe() for c in plan.clauses for i in c.items))
    if funnel.gathered == 0:
        return f"no indexed chunk contains {words}"
    before = funnel.gathered
    for step in funnel.constraints:
        if step["remaining"] == 0:
            if step["kind"] == "filter":
                required = [c.label for c in plan.clauses if c.required]
                what = required[0] if required else words
                return f"{what} has no postings{scope} ({before} candidate(s) outside it)"
            if step["kind"] == "required" and not filters.is_empty():
                return f"{step['constraint']} has no postings{scope}"
            return f"nothing left after {step['constraint']} ({before} candidate(s) before)"
        before = step["remaining"]
    return "no chunk matched"
