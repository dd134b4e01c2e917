"""Lexical top-k with pruning (MaxScore in C, where it is built) against exhaustive scoring, on a
scale-benchmark tier's index and queries (run `benchmarks/scale.py` first; its tiers live under
$TMPDIR/kenning-scale/chunks-N/). Rerun it before moving the thresholds in kenning.lexical.pruning:

    python benchmarks/bench_pruning.py /tmp/kenning-scale/chunks-30000 [--first 3]

- warm: every query answered both ways, alternating per query in one process after both caches are
  warm (three rounds), p50 / p95 of whole searches and p50 / p95 / mean of their score stage (where
  pruning runs; the rest of a search is the same either way); the two rankings are checked equal;
- first sight (--first N): N rounds in which a new Index answers each of the tier's first few
  queries once, so every term is met for the first time (the OS page cache stays warm): the median
  per query, pruning on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from lib.timing import p50_p95

import kenning.lexical.pruning as pruning
from kenning import Index


def _search(index: Index, query: str, prune: bool):
    return index.search(query, limit=10, mode="lexical", detail="heads", pruning=prune)


def warm(tier: Path, queries: list[str], shipped: int) -> None:
    index = Index(tier / "index-kenning")
    for query in queries:
        for prune in (True, False):
            _search(index, query, prune)
    times = {True: [], False: []}
    stage = {True: [], False: []}
    for round_ in range(3):
        for query in queries:
            both = {}
            for prune in (True, False) if round_ % 2 == 0 else (False, True):
                started = time.perf_counter()
                both[prune] = _search(index, query, prune)
                times[prune].append(time.perf_counter() - started)
                stage[prune].append(both[prune].funnel.timings_ms["score"] / 1000)
            if [(h.id, h.score) for h in both[True].hits] != [(h.id, h.score) for h in both[False].hits]:
                raise SystemExit(f"pruned and exhaustive rankings differ for {query!r}")
    way = "MaxScore (C)" if pruning.kernels.NATIVE else "block maxima (NumPy)"
    print(f"{tier.name}: {len(queries)} queries; {way}, shipped from {shipped:,} chunk ids, forced on here")
    for prune, label in ((True, "pruned"), (False, "exhaustive")):
        (p50, p95), (stage_p50, stage_p95) = p50_p95(times[prune]), p50_p95(stage[prune])
        print(
            f"  warm {label:<10} p50 {1000 * p50:.2f} ms  p95 {1000 * p95:.2f} ms"
            f"   score stage p50 {1000 * stage_p50:.2f}  p95 {1000 * stage_p95:.2f}"
            f"  mean {1000 * statistics.mean(stage[prune]):.2f} ms"
        )


def first_sight(tier: Path, queries: list[str], rounds: int) -> None:
    for query in queries:
        times = []
        for _ in range(rounds):
            index = Index(tier / "index-kenning")
            index.search("zzzz", limit=10, mode="lexical", detail="heads")  # the view, not the terms
            started = time.perf_counter()
            _search(index, query, True)
            times.append(time.perf_counter() - started)
            index.close()
        print(f"  first sight {1000 * statistics.median(times):7.2f} ms  {query}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tier", type=Path, help="a scale-benchmark tier folder (index-kenning, queries.json)")
    ap.add_argument("--first", type=int, default=0, help="rounds of first-sight queries (0: skip)")
    ap.add_argument("--first-queries", type=int, default=3)
    args = ap.parse_args()
    queries = json.loads((args.tier / "queries.json").read_text())
    shipped = pruning.MAXSCORE_FROM_IDS if pruning.kernels.NATIVE else pruning.PRUNE_FROM_IDS
    pruning.MAXSCORE_FROM_IDS = pruning.PRUNE_FROM_IDS = 0  # pruned even below the thresholds
    warm(args.tier, queries, shipped)
    if args.first:
        first_sight(args.tier, queries[: args.first_queries], args.first)


if __name__ == "__main__":
    main()
