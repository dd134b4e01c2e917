"""Sweep the BM25 knobs on BEIR datasets and print nDCG@10 per setting, best (by the worse set) first.

This is how kenning's lexical defaults were chosen: one setting for all sets, ranked by its smallest
margin over each set's bar (the best lexical peer measured on that set: DuckDB FTS 0.378 on cranfield,
bm25s 0.727 on msmarco-5k), so no set is tuned at another's expense.

    python benchmarks/tune_lexical.py ../shared/data/cranfield ../shared/data/msmarco-5k
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

from kenning import Bm25Params, Index
from kenning.eval import load_beir, ndcg_at, ranked_doc_keys

GRID = {
    "variant": ["classic", "plus", "l"],
    "k1": [0.9, 1.2, 1.5],
    "b": [0.5, 0.75, 0.9],
    "title_weight": [1.0, 2.0],
    "coord_floor": [0.5, 0.8, 1.0],
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "datasets", nargs="*", default=["../shared/data/cranfield", "../shared/data/msmarco-5k"]
    )
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--bars", default="0.378,0.727", help="nDCG@10 bar per dataset, comma-separated")
    args = parser.parse_args()
    bars = [float(b) for b in args.bars.split(",")]
    if len(bars) != len(args.datasets):
        parser.error("give one --bars value per dataset")
    sets = []
    with tempfile.TemporaryDirectory(prefix="kenning-tune-") as tmp:
        for n, directory in enumerate(args.datasets):
            dataset = load_beir(directory)
            index = Index(Path(tmp) / str(n))
            index.add([dataset.corpus_path])
            sets.append((dataset, index))
        rows = []
        keys = list(GRID)
        for values in itertools.product(*GRID.values()):
            params = Bm25Params(**dict(zip(keys, values, strict=True)))
            scores = []
            for dataset, index in sets:
                total = sum(
                    ndcg_at(ranked_doc_keys(index, text, 10, params), dataset.qrels[qid])
                    for qid, text in dataset.queries.items()
                )
                scores.append(total / len(dataset.queries))
            rows.append((min(s - bar for s, bar in zip(scores, bars, strict=True)), scores, params))
        rows.sort(key=lambda r: (-r[0], -sum(r[1])))
        names = [d.name for d, _ in sets]
        print(" ".join(f"{n:>11}" for n in names), "min margin  setting")
        default = Bm25Params()
        for worst, scores, params in rows[: args.top] + [r for r in rows if r[2] == default]:
            mark = "  <- default" if params == default else ""
            knobs = " ".join(f"{k}={getattr(params, k)}" for k in keys)
            print(" ".join(f"{s:>11.4f}" for s in scores), f"{worst:>+10.4f} ", knobs + mark)
    return 0


if __name__ == "__main__":
    sys.exit(main())
