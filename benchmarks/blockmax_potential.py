"""How much of a query's common words could block-max pruning skip? A measure for the next step of
the first query at scale (README, "At scale"), not a feature.

    python benchmarks/blockmax_potential.py /tmp/kenning-scale/chunks-1000000 --queries 100

For each query: its exact top-10 threshold (MaxScore's k-th score), then every window of 1,024 chunk
ids whose bound (each present term's largest weighted score in the window, summed, times the
coordination of that many terms) lies below it. Prints the share of the common words' postings
(10,000 or more) that lie in such windows. The threshold is the final one, known from the start, and
the window maxima are exact: an upper limit on what stored per-block impacts would skip.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from kenning import Index, kernels
from kenning.lexical.bm25 import Bm25Params

WINDOW_BITS = 10  # MaxScore's windows in kenning/kernels/c/scoring.c
COMMON = 10_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tier", type=Path, help="a scale.py tier directory (index-kenning, queries.json)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("-k", type=int, default=10)
    args = ap.parse_args()
    params = Bm25Params()
    index = Index(args.tier / "index-kenning")
    queries = json.loads((args.tier / "queries.json").read_text())[: args.queries]
    skipped = visited = 0
    shares = []
    with index.store.reading():
        view = index.lexical.view()
        windows = (view.max_id >> WINDOW_BITS) + 1
        for query in queries:
            terms = index.analyzer.query_terms(query)
            found = view.postings(terms)
            present = [found[t] for t in terms if found[t] is not None]
            if len(present) < 2 or all(p.df < COMMON for p in present):
                continue
            scores = [view.weighted(t, found[t], params) for t in terms if found[t] is not None]
            maxima = [float(s.max()) for s in scores]
            top = kernels.maxscore([p.ids for p in present], scores, maxima, len(terms), 0.5, args.k, None)
            threshold = float(top[1][-1]) if len(top[1]) else 0.0
            bound, count = np.zeros(windows), np.zeros(windows)
            for postings, weighted in zip(present, scores, strict=True):
                largest = np.full(windows, -np.inf)
                np.maximum.at(largest, postings.ids.astype(np.int64) >> WINDOW_BITS, weighted)
                held = np.isfinite(largest)
                bound[held] += largest[held]
                count[held] += 1
            coordination = params.coord_floor + (1 - params.coord_floor) * count / len(terms)
            skippable = bound * coordination * (1 + 1e-9) < threshold
            common = [p for p in present if p.df >= COMMON]
            here = sum(int(skippable[p.ids.astype(np.int64) >> WINDOW_BITS].sum()) for p in common)
            total = sum(p.df for p in common)
            shares.append(here / total)
            skipped, visited = skipped + here, visited + total
    median, low, high = statistics.median(shares), np.percentile(shares, 10), np.percentile(shares, 90)
    print(
        f"{len(shares)} queries with a common word: {skipped / visited:.2f} of their postings lie in "
        f"windows no chunk of which can reach the top {args.k} (per query median {median:.2f}, "
        f"p10 {low:.2f}, p90 {high:.2f})"
    )


if __name__ == "__main__":
    main()
