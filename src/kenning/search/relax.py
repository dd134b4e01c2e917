"""Relaxation: a hard constraint that leaves nothing, or almost nothing, is named and set aside.

A phrase, a `+word`, a `field:word` or an `-exclusion` is a promise about every result. When the
promises together leave fewer than `RELAX_BELOW` chunks (or fewer than the limit, if that is smaller),
an empty or near-empty list would hide the best evidence the index has. So kenning keeps the results
that meet every constraint first, then fills the list with the best results that break the fewest
constraints, each marked with the constraints it breaks, and says which constraint it set aside.
When nothing at all is left, it sets aside only as much as brings one result back.

Which constraint goes: greedily, the one whose removal leaves the most chunks (ties: the later one
in the query); when no single one is to blame, the narrowest. Required clauses go first; an exclusion
is set aside only when nothing at all is left, since a result holding a word the user excluded is
worse than a short list. Filters (collections, paths, types, dates, metadata) are scopes, not
constraints: they are never relaxed. A query whose words occur nowhere stays an honest "not found":
there is nothing to relax towards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyroaring import BitMap

RELAX_BELOW = 3


@dataclass
class Constraint:
    """One hard constraint and the chunks (within the filtered candidates) that hold its text."""

    label: str
    kind: str  # "required" or "exclude"
    docs: BitMap
    order: int  # position in the query, for tie-breaking and for display

    def apply(self, chunks: BitMap) -> BitMap:
        return chunks & self.docs if self.kind == "required" else chunks - self.docs

    def broken_by(self, chunk_id: int) -> bool:
        return (chunk_id not in self.docs) if self.kind == "required" else (chunk_id in self.docs)

    def describe(self) -> str:
        return f"-{self.label}" if self.kind == "exclude" else self.label


def meeting(base: BitMap, constraints: list[Constraint]) -> BitMap:
    """The chunks of `base` that meet every constraint."""
    out = base
    for c in constraints:
        out = c.apply(out)
    return out


@dataclass
class Relaxation:
    """What was set aside, and the two result sets: chunks meeting every constraint (`strict`) and
    chunks meeting the constraints that were kept (`relaxed`, a superset)."""

    dropped: list[Constraint]
    strict: BitMap
    relaxed: BitMap
    kept: list[Constraint] = field(default_factory=list)

    def broken(self, chunk_id: int) -> list[str]:
        """The set-aside constraints this chunk does not meet (empty for a strict result)."""
        return [c.describe() for c in self.dropped if c.broken_by(chunk_id)]

    def notice(self) -> str:
        names = " and ".join(c.describe() for c in self.dropped)
        absent = [c.describe() for c in self.dropped if c.kind == "required" and not c.docs]
        if absent and len(absent) == len(self.dropped):
            return (
                f"no chunk holds {' or '.join(absent)} (in scope); showing the best results without it, "
                "marked relaxed"
            )
        if not self.strict:
            return (
                f"no result meets {names} together with the rest of the query; showing the best "
                "results without it, marked relaxed"
            )
        return (
            f"only {len(self.strict)} result(s) meet {names}; after them come results without it, "
            "marked relaxed"
        )

    def to_dict(self) -> list[dict]:
        return [
            {"constraint": c.describe(), "kind": c.kind, "strict_results": len(self.strict)}
            for c in self.dropped
        ]


def relax(base: BitMap, constraints: list[Constraint], wanted: int) -> Relaxation | None:
    """Set constraints aside until at least `wanted` chunks remain; None when nothing needs it or
    nothing would come of it.

    Each constraint's chunks are read once, and what the others leave without each one comes from
    running intersections both ways (one pass over the constraints, not one per constraint): a query
    of a thousand `title:` words cost minutes. Past GREEDY_AT_MOST constraints (a pasted list, or an
    attack), the narrowest required ones are first set aside in one pass, down to that many."""
    active = list(constraints)
    held = {id(c): c.apply(base) for c in active}
    strict = _meeting(base, active, held)
    if len(strict) >= wanted or not active or not base:
        return None
    # nothing at all: set aside as little as brings one result back; a few: top the list up
    target = wanted if strict else 1
    current, dropped = strict, []
    if len(active) > GREEDY_AT_MOST:
        gone, current = _narrowest_aside(base, active, held, target)
        gone_ids = {id(c) for c in gone}
        active = [c for c in active if id(c) not in gone_ids]
        dropped.extend(gone)
    while len(current) < target and active:
        choices = [c for c in active if c.kind == "required"]
        if not choices:
            if current:
                break  # exclusions are set aside only when nothing at all is left
            choices = active
        left = {id(c): len(docs) for c, docs in zip(active, _without_each(base, active, held), strict=True)}
        size, _, best = max(((left[id(c)], c.order, c) for c in choices), key=lambda o: (o[0], o[1]))
        if size <= len(current):  # no single constraint is to blame: set the narrowest aside, look again
            best = min(choices, key=lambda c: (len(held[id(c)]), -c.order))
        active.remove(best)
        dropped.append(best)
        current = _meeting(base, active, held)
    if len(current) <= len(strict):
        return None  # setting constraints aside found nothing more
    return Relaxation(dropped, strict, current, active)


# more hard constraints than this are first set aside narrowest first, in one pass (see relax)
GREEDY_AT_MOST = 64


def _meeting(base: BitMap, active: list[Constraint], held: dict[int, BitMap]) -> BitMap:
    """`meeting(base, active)` from each constraint's chunks within `base`, read once."""
    out = base
    for c in active:
        out = out & held[id(c)]
    return out


def _without_each(base: BitMap, active: list[Constraint], held: dict[int, BitMap]) -> list[BitMap]:
    """For each constraint of `active`, the chunks of `base` meeting all the others: the running
    intersection from the left up to it, and from the right after it."""
    before = [base]
    for c in active[:-1]:
        before.append(before[-1] & held[id(c)])
    out: list[BitMap] = [base] * len(active)
    after = base
    for i in range(len(active) - 1, -1, -1):
        out[i] = before[i] & after
        after = after & held[id(active[i])]
    return out


def _narrowest_aside(base: BitMap, active: list[Constraint], held: dict[int, BitMap], target: int):
    """The required constraints to set aside, narrowest first (ties: the later in the query), until
    `target` chunks remain or GREEDY_AT_MOST constraints are left; and the chunks then left."""
    required = sorted((c for c in active if c.kind == "required"), key=lambda c: (len(held[id(c)]), -c.order))
    rest = _meeting(base, [c for c in active if c.kind != "required"], held)
    left = [rest] * (len(required) + 1)  # left[k]: the chunks meeting all but the k narrowest
    for k in range(len(required) - 1, -1, -1):
        left[k] = left[k + 1] & held[id(required[k])]
    k = 0
    while k < len(required) and len(active) - k > GREEDY_AT_MOST and len(left[k]) < target:
        k += 1
    return required[:k], left[k]


def strict_first(ranked: list[tuple[int, float]], relaxation: Relaxation | None) -> list[tuple[int, float]]:
    """Results meeting every constraint keep the top of the list, in their order; then those breaking
    one set-aside constraint, then two, each group in its ranked order."""
    if relaxation is None:
        return ranked
    return sorted(ranked, key=lambda pair: len(relaxation.broken(pair[0])))
