"""What a Python caller pays around the ranking: `Index.search(q, limit=100)` against `limit=10`, on
msmarco-5k and the two books, in one process, the two limits taking turns over several rounds.

Snippets are made on first read (kenning.search.results.Hit), so a caller that asks for a hundred
hits to rerank them, or reads only their ids and scores, pays for the ranking and the rows, not for
a hundred snippets. The third column reads every hit's snippet, which is what the command line and
the server do for the hits they show. Target: limit=100 at most 2x limit=10.

    python benchmarks/bench_caller.py [--rounds 5] [--queries 100]

msmarco-5k needs the eval index with vectors (`kenning eval ../shared/data/msmarco-5k --mode
hybrid` builds it); the books are indexed and embedded into a cache on first use (as answer_eval.py
does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from answer_eval import open_book
from lib.datasets import BOOKS, DATA, open_embedded_eval_index

HERE = Path(__file__).resolve().parent


def per_query_ms(index, queries: list[str], limit: int, read_snippets: bool) -> float:
    started = time.perf_counter()
    for query in queries:
        hits = index.search(query, limit=limit).hits
        if read_snippets:
            for hit in hits:
                _ = hit.snippet
    return (time.perf_counter() - started) * 1000 / len(queries)


def measure(name: str, index, queries: list[str], rounds: int) -> dict:
    per_query_ms(index, queries[:10], 100, True)  # warm the caches, the model and the page cache
    runs: dict[str, list[float]] = {"limit 10": [], "limit 100": [], "limit 100, snippets read": []}
    for _ in range(rounds):
        runs["limit 10"].append(per_query_ms(index, queries, 10, False))
        runs["limit 100"].append(per_query_ms(index, queries, 100, False))
        runs["limit 100, snippets read"].append(per_query_ms(index, queries, 100, True))
    ratios = [b / a for a, b in zip(runs["limit 10"], runs["limit 100"], strict=True)]
    return {
        "collection": name,
        "queries": len(queries),
        "ms_per_query": {k: round(statistics.median(v), 2) for k, v in runs.items()},
        "ratio_100_over_10": round(statistics.median(ratios), 2),
        "ratio_spread": [round(min(ratios), 2), round(max(ratios), 2)],
    }


def targets(n: int):
    """(name, opener, queries) for msmarco-5k and each book with a question set."""
    ms = DATA / "msmarco-5k"
    queries = [json.loads(line)["text"] for line in (ms / "queries.jsonl").read_text().splitlines() if line]
    yield "msmarco-5k", lambda: open_embedded_eval_index(ms), queries[:n]
    for book, questions in (("dracula", "dracula"), ("monte-cristo", "monte_cristo")):
        rows = (HERE / "data" / f"{questions}_questions.jsonl").read_text().splitlines()
        texts = [json.loads(line)["question"] for line in rows if line.strip()]
        yield book, lambda book=book: open_book(BOOKS / f"{book}.md"), texts[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100, help="queries per collection (at most)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = []
    for name, opener, queries in targets(args.queries):
        with opener() as index:
            report.append(measure(name, index, queries, args.rounds))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for row in report:
        times = "   ".join(f"{k} {v:.2f} ms" for k, v in row["ms_per_query"].items())
        low, high = row["ratio_spread"]
        print(f"{row['collection']:<13} {row['queries']:>3} queries   {times}")
        ratio = row["ratio_100_over_10"]
        print(f"{'':<13} limit 100 / limit 10: {ratio:.2f}x (rounds: {low:.2f}-{high:.2f})")


if __name__ == "__main__":
    main()
