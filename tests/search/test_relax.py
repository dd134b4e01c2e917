"""kenning.search.relax: which constraints are set aside, and that it stays cheap however many a query
holds. The greedy choice is compared with a plain restatement of it on random constraints."""

from __future__ import annotations

import random

from pyroaring import BitMap

from kenning.search.relax import GREEDY_AT_MOST, Constraint, meeting, relax


def _plain_relax(base, constraints, wanted):
    """The greedy rule as the module's docstring states it, each choice recomputed from scratch."""
    active = list(constraints)
    strict = meeting(base, active)
    if len(strict) >= wanted or not active or not base:
        return None
    target = wanted if strict else 1
    current, dropped = strict, []
    while len(current) < target and active:
        choices = [c for c in active if c.kind == "required"]
        if not choices:
            if current:
                break
            choices = active
        outcomes = [(len(meeting(base, [a for a in active if a is not c])), c.order, c) for c in choices]
        size, _, best = max(outcomes, key=lambda o: (o[0], o[1]))
        if size <= len(current):
            best = min(choices, key=lambda c: (len(c.apply(base)), -c.order))
        active.remove(best)
        dropped.append(best)
        current = meeting(base, active)
    if len(current) <= len(strict):
        return None
    return [c.label for c in dropped], list(strict), list(current)


def test_the_running_intersections_choose_as_the_plain_rule_does():
    rng = random.Random(5)
    for trial in range(1500):
        base = BitMap(rng.sample(range(100), rng.randint(1, 60)))
        constraints = [
            Constraint(
                f"c{k}",
                "required" if rng.random() < 0.75 else "exclude",
                BitMap(rng.sample(range(100), rng.randint(0, 95))) & base,
                k,
            )
            for k in range(rng.randint(1, 12))
        ]
        wanted = rng.randint(1, 5)
        got = relax(base, constraints, wanted)
        said = None if got is None else ([c.label for c in got.dropped], list(got.strict), list(got.relaxed))
        assert said == _plain_relax(base, constraints, wanted), trial


class _Counted(Constraint):
    applied = 0

    def apply(self, chunks):
        _Counted.applied += 1
        return super().apply(chunks)


def test_a_thousand_constraints_are_each_read_once():
    # each constraint holds a different chunk: no single one is to blame, every pass sets one aside;
    # the greedy rule recomputed from scratch applied constraints n^3 times here (minutes)
    base = BitMap(range(3000))
    constraints = [_Counted(f"title:w{k}", "required", BitMap([k]), k) for k in range(1500)]
    _Counted.applied = 0
    got = relax(base, constraints, 3)
    assert got is not None and len(got.relaxed) >= 1 and len(got.kept) <= GREEDY_AT_MOST
    assert _Counted.applied == len(constraints)
