"""Warm lexical queries on the small dev sets: kenning's queries a second against tantivy's, and where
kenning's time goes.

Each set's corpus is indexed by kenning (its eval index) and by tantivy (lib/peers.py), in this
process. Both answer every query once to warm up, then take turns: a timed pass over all the
queries by one system, then one by the other, --passes times each (a machine's speed drifts over
seconds, so each system's passes are spread over the same stretch of time). A query is sent as
`kenning search` sends it (the dialect; --syntax plain as `kenning eval` does), top 10, heads only
(what a ranked list shows); tantivy gets the words alone, as in quality.py. Reported: each system's
median queries a second, kenning's as a share of tantivy's, and kenning's mean time a query in each
stage of its pipeline (the funnel's timings) and outside them (parsing the query, the request, the
response).

    pip install -e '.[bench]'
    python benchmarks/bench_small.py                      # cranfield, msmarco-5k and cacm
    python benchmarks/bench_small.py scifact npl med --passes 9
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict

from lib.datasets import DATA, TUNING_SETS, read_corpus
from lib.peers import TantivySystem


def measure(name: str, passes: int, syntax: str) -> dict:
    """One set's figures: queries a second of both systems (medians of their passes), kenning's
    share of tantivy's, and kenning's mean milliseconds a query per stage and outside the stages."""
    from kenning.eval import load_beir, open_eval_index

    dataset = load_beir(DATA / name)
    index, _, _ = open_eval_index(dataset.corpus_path, DATA / name)
    tantivy = TantivySystem()
    tantivy.index(read_corpus(dataset.corpus_path))
    queries = list(dataset.queries.values())
    stages: dict[str, float] = defaultdict(float)
    outside = 0.0

    def kenning_pass(record: bool = False) -> float:
        nonlocal outside
        started = time.perf_counter()
        for text in queries:
            began = time.perf_counter()
            response = index.search(text, limit=10, mode="lexical", detail="heads", syntax=syntax)
            if record:
                spent = (time.perf_counter() - began) * 1000.0
                for stage, ms in response.funnel.timings_ms.items():
                    stages[stage] += ms
                outside += spent - sum(response.funnel.timings_ms.values())
        return time.perf_counter() - started

    def tantivy_pass() -> float:
        started = time.perf_counter()
        for text in queries:
            tantivy.search(text, 10)
        return time.perf_counter() - started

    with index:
        kenning_pass(), tantivy_pass()  # warm: postings, weights and pages read once
        kenning_seconds, tantivy_seconds = [], []
        for _ in range(passes):
            kenning_seconds.append(kenning_pass())
            tantivy_seconds.append(tantivy_pass())
        kenning_pass(record=True)  # the stage breakdown, from a pass of its own
    kenning_qps = [len(queries) / s for s in kenning_seconds]
    tantivy_qps = [len(queries) / s for s in tantivy_seconds]
    ratios = [k / t for k, t in zip(kenning_qps, tantivy_qps, strict=True)]
    return {
        "set": name,
        "queries": len(queries),
        "kenning_qps": statistics.median(kenning_qps),
        "tantivy_qps": statistics.median(tantivy_qps),
        "ratio": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
        "stages_ms": {stage: ms / len(queries) for stage, ms in stages.items()},
        "outside_ms": outside / len(queries),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sets", nargs="*", default=list(TUNING_SETS), help="dev sets (default: three)")
    parser.add_argument("--passes", type=int, default=5, help="timed passes of each system (default 5)")
    parser.add_argument("--syntax", choices=["dialect", "plain"], default="dialect")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    missing = [name for name in args.sets if not (DATA / name / "corpus.jsonl").exists()]
    if missing:
        parser.error(f"no dev set {', '.join(missing)} in {DATA}")
    results = [measure(name, args.passes, args.syntax) for name in args.sets]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        low, high = r["ratio_range"]
        print(
            f"{r['set']:<11} kenning {r['kenning_qps']:7.0f} q/s  tantivy {r['tantivy_qps']:7.0f} q/s"
            f"  kenning/tantivy {r['ratio']:.2f} (passes {low:.2f}-{high:.2f})"
        )
        parts = ", ".join(f"{stage} {ms * 1000:.0f}" for stage, ms in r["stages_ms"].items())
        print(f"{'':<11} microseconds a query: {parts}; outside the stages {r['outside_ms'] * 1000:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
