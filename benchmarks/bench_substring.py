"""The substring signal with and without the trigram index: build cost, disk, memory, latency.

Indexes one corpus twice (plain, and with `--substring-index`), then, each in a fresh process, runs
the same queries with the substring signal on (`--w-substring 1`; the substring channel is timed by
its stage in the funnel) and reports: index seconds and disk,
the first query of a new process (the in-memory view reads every live text then), the median and
95th percentile of the substring stage over warm queries, and the query process's peak RSS. Both
views must return the same chunks: the script checks the top 10 of every query.

    python benchmarks/bench_substring.py --corpus /tmp/kenning-scale/chunks-100000/corpus \\
        --queries /tmp/kenning-scale/chunks-100000/queries.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def build(corpus: Path, directory: Path, trigram: bool) -> dict:
    from kenning import Index

    shutil.rmtree(directory, ignore_errors=True)
    started = time.perf_counter()
    with Index(directory) as index:
        index.add([corpus], substring_index=trigram)
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    return {"index_s": seconds, "disk_mb": size / 1e6}


def query(directory: Path, queries: list[str]) -> dict:
    from kenning import Index

    times, tops = [], []
    with Index(directory) as index:
        started = time.perf_counter()
        first = index.search(queries[0], mode="hybrid", w_substring=1.0, limit=10)
        first_ms = 1000 * (time.perf_counter() - started)
        for q in queries:
            response = index.search(q, mode="hybrid", w_substring=1.0, limit=10)
            times.append(response.funnel.timings_ms.get("substring", 0.0))
            tops.append([h.id for h in response.hits])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "first_ms": first_ms,
        "view": first.funnel.channels.get("substring", {}).get("index"),
        "p50_ms": statistics.median(times),
        "p95_ms": sorted(times)[int(0.95 * (len(times) - 1))],
        "peak_rss_mb": peak,
        "tops": tops,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True, help="a JSON list of query texts")
    ap.add_argument("--count", type=int, default=200, help="queries to run")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kenning-substring")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    queries = json.loads(args.queries.read_text())[: args.count]
    if args.worker:
        job, directory = args.worker
        out = query(Path(directory), queries) if job == "query" else None
        print(json.dumps(out))
        return
    rows = {}
    for name, trigram in (("in memory", False), ("trigram index", True)):
        directory = args.work / name.replace(" ", "-")
        built = build(args.corpus, directory, trigram)
        proc = subprocess.run(
            [sys.executable, __file__, "--corpus", str(args.corpus), "--queries", str(args.queries),
             "--count", str(args.count), "--worker", "query", str(directory)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        rows[name] = built | json.loads(proc.stdout.strip().splitlines()[-1])
    same = sum(a == b for a, b in zip(rows["in memory"]["tops"], rows["trigram index"]["tops"], strict=True))
    print(f"{args.corpus} ({len(queries)} queries, substring weight 1, hybrid mode without vectors)")
    head = ("index s", 9), ("disk MB", 9), ("first ms", 10), ("p50 ms", 8), ("p95 ms", 8), ("peak RSS MB", 13)
    print(" " * 24 + "".join(f"{name:>{width}s}" for name, width in head))
    for name, r in rows.items():
        print(
            f"{name:24s}{r['index_s']:9.1f}{r['disk_mb']:9.1f}{r['first_ms']:10.1f}{r['p50_ms']:8.2f}"
            f"{r['p95_ms']:8.2f}{r['peak_rss_mb']:13.0f}"
        )
    print(f"same top 10 for {same} of {len(queries)} queries")


if __name__ == "__main__":
    main()
