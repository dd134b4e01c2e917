"""Sweep the BM25 knobs on dev sets and print nDCG@10 per setting, best (by the worse set) first.

This is how kenning's lexical defaults (kenning.lexical.bm25.Bm25Params) are chosen: one setting for
every set, ranked by its smallest margin over each set's bar, so that no set is tuned at another's
expense. A set's bar is its best lexical peer (bm25s, tantivy or SQLite FTS5, lib/peers.py), measured
in the same run; --bars gives them instead.

    pip install -e '.[bench]'
    python benchmarks/tune_lexical.py [DATASET ...] [--bars 0.40,0.73]    # default: all six dev sets
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

from lib.datasets import DEV_SETS, mean_ndcg, read_corpus, set_dirs
from lib.peers import Bm25sSystem, Fts5System, TantivySystem
from lib.tables import text_table

from kenning import Bm25Params, Index
from kenning.eval import load_beir, ranked_doc_keys

GRID = {
    "variant": ["classic", "bm25f"],
    "coordination": ["clauses", "idf"],
    "k1": [0.9, 1.2, 1.5, 2.0],
    "title_weight": [1.0, 1.5, 2.0, 2.5],
    "coord_floor": [0.3, 0.5, 0.65],
    "k3": [2.0, 4.0, 8.0],
}


def best_peer(dataset) -> float:
    """nDCG@10 of the best lexical peer on a dataset."""
    docs = read_corpus(dataset.corpus_path)
    scores = []
    for peer in (Bm25sSystem(), TantivySystem(), Fts5System()):
        peer.index(docs)
        scores.append(mean_ndcg(dataset, {q: peer.search(text, 10) for q, text in dataset.queries.items()}))
    return max(scores)


def ndcg(dataset, index, params: Bm25Params) -> float:
    """kenning's nDCG@10 on a dataset with these knobs."""
    return mean_ndcg(dataset, {q: ranked_doc_keys(index, t, 10, params) for q, t in dataset.queries.items()})


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("datasets", nargs="*", default=set_dirs(DEV_SETS))
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--bars", help="nDCG@10 bar per dataset, comma-separated (default: measured)")
    args = parser.parse_args()
    datasets = [load_beir(d) for d in args.datasets]
    bars = [float(b) for b in args.bars.split(",")] if args.bars else [best_peer(d) for d in datasets]
    if len(bars) != len(datasets):
        parser.error("give one --bars value per dataset")
    with tempfile.TemporaryDirectory(prefix="kenning-tune-") as tmp:
        indexes = []
        for n, dataset in enumerate(datasets):
            index = Index(Path(tmp) / str(n))
            index.add([dataset.corpus_path])
            indexes.append(index)
        rows = []
        keys = list(GRID)
        for values in itertools.product(*GRID.values()):
            params = Bm25Params(**dict(zip(keys, values, strict=True)))
            scores = [ndcg(dataset, index, params) for dataset, index in zip(datasets, indexes, strict=True)]
            rows.append((min(s - bar for s, bar in zip(scores, bars, strict=True)), scores, params))
        for index in indexes:
            index.close()
    rows.sort(key=lambda r: (-r[0], -sum(r[1])))
    default = Bm25Params()
    shown = rows[: args.top] + [r for r in rows[args.top :] if r[2] == default]
    table = [["bar", *(f"{b:.4f}" for b in bars), "", ""]]
    for worst, scores, params in shown:
        knobs = " ".join(f"{k}={getattr(params, k)}" for k in keys)
        mark = "  <- default" if params == default else ""
        table.append(["", *(f"{s:.4f}" for s in scores), f"{worst:+.4f}", knobs + mark])
    header = ["", *(d.name for d in datasets), "min margin", "setting"]
    print(text_table(header, table, align="l" + "r" * (len(datasets) + 1) + "l"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
