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
import shutil
import time
from pathlib import Path

from lib import workers
from lib.files import disk_mb
from lib.memory import peak_rss_mb
from lib.tables import text_table
from lib.timing import p50_p95


def build(corpus: Path, directory: Path, trigram: bool) -> dict:
    from kenning import Index

    shutil.rmtree(directory, ignore_errors=True)
    started = time.perf_counter()
    with Index(directory) as index:
        index.add([corpus], substring_index=trigram)
    return {"index_s": time.perf_counter() - started, "disk_mb": disk_mb(directory)}


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
    p50, p95 = p50_p95(times)
    return {
        "first_ms": first_ms,
        "view": first.funnel.channels.get("substring", {}).get("index"),
        "p50_ms": p50,
        "p95_ms": p95,
        "peak_rss_mb": peak_rss_mb(),
        "tops": tops,
    }


def worker(args: list[str]) -> dict:
    """In a fresh process: the queries of a JSON file (its first `count`) on one index."""
    directory, queries, count = Path(args[0]), Path(args[1]), int(args[2])
    return query(directory, json.loads(queries.read_text())[:count])


def main() -> None:
    if workers.answer_worker(worker):
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True, help="a JSON list of query texts")
    ap.add_argument("--count", type=int, default=200, help="queries to run")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kenning-substring")
    args = ap.parse_args()
    rows = {}
    for name, trigram in (("in memory", False), ("trigram index", True)):
        directory = args.work / name.replace(" ", "-")
        built = build(args.corpus, directory, trigram)
        rows[name] = built | workers.run_worker(__file__, directory, args.queries, args.count)
    same = sum(a == b for a, b in zip(rows["in memory"]["tops"], rows["trigram index"]["tops"], strict=True))
    count = len(rows["in memory"]["tops"])
    print(f"{args.corpus} ({count} queries, substring weight 1, hybrid mode without vectors)")
    header = ["", "index s", "disk MB", "first ms", "p50 ms", "p95 ms", "peak RSS MB"]
    table = [
        [name, f"{r['index_s']:.1f}", f"{r['disk_mb']:.1f}", f"{r['first_ms']:.1f}", f"{r['p50_ms']:.2f}",
         f"{r['p95_ms']:.2f}", f"{r['peak_rss_mb']:.0f}"]
        for name, r in rows.items()
    ]  # fmt: skip
    print(text_table(header, table))
    print(f"same top 10 for {same} of {count} queries")


if __name__ == "__main__":
    main()
