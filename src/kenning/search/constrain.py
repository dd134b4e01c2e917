"""Stage constrain: filters (scopes), then required clauses and exclusions (promises), each counted
in the funnel. When the promises together leave almost nothing, kenning.search.relax names the one
to blame and sets it aside; its words still score, as plain words do."""

from __future__ import annotations

from pyroaring import BitMap

from kenning.query.parser import Word
from kenning.query.plan import PlannedClause, PlannedItem, QueryPlan
from kenning.search.context import QueryState, SearchContext
from kenning.search.relax import RELAX_BELOW, Constraint, Relaxation, relax


def constrain(ctx: SearchContext, state: QueryState) -> None:
    plan, view, funnel, request = state.plan, ctx.view, state.funnel, state.request
    base = state.candidates
    if not request.filters.is_empty():
        base = base & ctx.resolve_filters(request.filters)
        funnel.constraints.append(
            {"constraint": "; ".join(request.filters.describe()), "kind": "filter", "remaining": len(base)}
        )
    constraints = [
        Constraint(clause.label, "required", clause_docs(clause, view, base) & base, order)
        for order, clause in enumerate(plan.clauses)
        if clause.required
    ]
    constraints += [
        Constraint(item.describe(), "exclude", item_docs(item, view, base) & base, len(plan.clauses) + order)
        for order, item in enumerate(plan.exclusions)
    ]
    survivors = base
    for constraint in constraints:
        survivors = constraint.apply(survivors)
        funnel.constraints.append(
            {"constraint": constraint.describe(), "kind": constraint.kind, "remaining": len(survivors)}
        )
    relaxation = relax(base, constraints, min(RELAX_BELOW, request.limit)) if request.relax else None
    if relaxation is not None:
        survivors = relaxation.relaxed
        _soften(plan, relaxation, ctx.analyzer)
        for constraint in relaxation.dropped:
            funnel.constraints.append(
                {"constraint": constraint.describe(), "kind": "relaxed", "remaining": len(survivors)}
            )
    for clause in plan.clauses:
        if not clause.required and clause.needs_docs:
            clause_docs(clause, view, survivors)
    state.survivors, state.relaxation = survivors, relaxation


def item_docs(item: PlannedItem, view, within: BitMap) -> BitMap:
    """The chunks an item matches (computed once, then kept on the item)."""
    if item.docs is not None:
        return item.docs
    if item.simple:
        postings = view.postings([item.spec[0][0]])[item.spec[0][0]]
        item.docs = postings.bitmap if postings is not None else BitMap()
    elif len(item.spec) == 1:
        item.docs = view.field_docs(item.spec[0][0], item.item.field) & within
    else:
        item.docs = view.phrase_docs(item.spec, within, item.item.field)
    return item.docs


def clause_docs(clause: PlannedClause, view, within: BitMap) -> BitMap:
    """The chunks any of a clause's items match (kept on the clause, for coordination)."""
    docs = BitMap()
    for item in clause.items:
        docs |= item_docs(item, view, within)
    clause.docs = docs
    return docs


def _soften(plan: QueryPlan, relaxation: Relaxation, analyzer) -> None:
    """Turn the set-aside constraints into soft evidence: a required clause's words still score (one
    soft clause per term, as plain words do), an exclusion is simply dropped."""
    dropped = {c.order for c in relaxation.dropped}  # clause index, or clauses + exclusion index
    n = len(plan.clauses)
    seen = {t for k, c in enumerate(plan.clauses) if k not in dropped for i in c.items for t in i.terms}
    clauses = []
    for k, clause in enumerate(plan.clauses):
        if k not in dropped:
            clauses.append(clause)
            continue
        for item in clause.items:
            for term in item.terms:
                if term not in seen and not analyzer.is_stopword(term):
                    seen.add(term)
                    word = PlannedItem(Word(term), [(term, 0)], [term], item.via, group=item.group)
                    clauses.append(PlannedClause("plain", False, f"{term} (relaxed)", [word]))
    plan.clauses = clauses
    plan.exclusions = [item for j, item in enumerate(plan.exclusions) if n + j not in dropped]
