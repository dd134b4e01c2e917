"""Quality on the dev sets against the peers, in one run with one metric.

For each set: nDCG@10 of kenning lexical, dense, hybrid (its default) and plain RRF of its lexical
and dense channels, beside bm25s, tantivy, SQLite FTS5, dense MiniLM alone and RRF of bm25s + MiniLM
(lib/peers.py says how each peer runs), with every system's mean over the sets. Every row is
computed here, queries sent as plain text, and scored by kenning.eval.ndcg_at (trec_eval's
definition). Then the default's margin over its bar, max(kenning lexical, dense, their RRF) + 0.01;
the leave-one-set-out folds of benchmarks/tune_hybrid.py (fit on the other sets, reported on the
one held out: do the fusion defaults carry over to a set they were not fitted on?); and known-item
Hit@1: sentences sampled from each corpus (and from the two novels) pasted back as queries.

Dense MiniLM alone is exact cosine with the all-MiniLM-L6-v2 vectors kenning stores, so it and the RRF
row share kenning's vectors but none of its pipeline. benchmarks/report.py calls quality_rows for
docs/benchmarks.md.

    pip install -e '.[bench]'
    python benchmarks/quality.py            # the six dev sets; embeds each corpus once (cached)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from lib.datasets import BOOKS, DEV_SETS, mean_ndcg, read_corpus, set_dirs  # noqa: E402
from lib.peers import Bm25sSystem, Fts5System, MiniLmSystem, TantivySystem, rrf  # noqa: E402
from lib.tables import text_table  # noqa: E402
from tune_hybrid import REFERENCES, describe, leave_one_out, sweep  # noqa: E402

from kenning.eval import evaluate, known_item, load_beir, open_eval_index  # noqa: E402
from kenning.search.fusion import FusionParams  # noqa: E402

KENNING_RRF = "kenning RRF (lexical + dense)"
KENNING = ["kenning hybrid", "kenning lexical", "kenning dense", KENNING_RRF]
PEERS = ["bm25s", "tantivy", "SQLite FTS5", "MiniLM exact cosine", "RRF bm25s + MiniLM"]


def quality_rows(directory: str) -> dict[str, float]:
    """nDCG@10 of every system on one dataset."""
    dataset = load_beir(directory)
    index, _, _ = open_eval_index(dataset.corpus_path, Path(directory), mode="hybrid")
    index.close()
    rows = {}
    for mode in ("lexical", "dense", "hybrid"):
        rows[f"kenning {mode}"] = evaluate(directory, mode=mode).ndcg_at_10
    rows[KENNING_RRF] = evaluate(directory, mode="hybrid", fusion=REFERENCES["rrf"][1]).ndcg_at_10
    docs = read_corpus(dataset.corpus_path)
    bm25s, tantivy, fts5 = Bm25sSystem(), TantivySystem(), Fts5System()
    for peer in (bm25s, tantivy, fts5):
        peer.index(docs)
    index, _, _ = open_eval_index(dataset.corpus_path, Path(directory), mode="hybrid")
    with index:
        minilm = MiniLmSystem(index)
        runs = {name: {} for name in ("bm25s", "tantivy", "SQLite FTS5", "MiniLM exact cosine")}
        for qid, text in dataset.queries.items():
            runs["bm25s"][qid] = bm25s.search(text, 100)
            runs["tantivy"][qid] = tantivy.search(text, 10)
            runs["SQLite FTS5"][qid] = fts5.search(text, 10)
            runs["MiniLM exact cosine"][qid] = minilm.search(text, 100)
    runs["RRF bm25s + MiniLM"] = {
        q: rrf([runs["bm25s"][q], runs["MiniLM exact cosine"][q]]) for q in dataset.queries
    }
    for name, rankings in runs.items():
        rows[name] = mean_ndcg(dataset, rankings)
    return rows


def with_means(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The table with a "mean" column: each system's mean nDCG@10 over the sets."""
    systems = next(iter(table.values()))
    mean = {s: sum(table[n][s] for n in table) / len(table) for s in systems}
    return {**table, "mean": mean}


def margins(table: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per set, the default's nDCG@10 minus its bar: max(kenning lexical, dense, their RRF) + 0.01."""
    own = ("kenning lexical", "kenning dense", KENNING_RRF)
    return {n: row["kenning hybrid"] - (max(row[s] for s in own) + 0.01) for n, row in table.items()}


def folds(directories: list[str], jobs: int = 2) -> dict:
    """The leave-one-set-out folds of tune_hybrid's grid, within the default's family and over
    every family: per held-out set, the setting chosen on the others, its score and its margin."""
    result = sweep(directories, jobs)
    out = {"bars": result["bars"], "families": {}}
    default_mode = FusionParams().mode
    for label, mode in ((f"{default_mode} family", default_mode), ("every family", None)):
        family = [r for r in result["rows"] if mode is None or r[0].mode == mode]
        chosen = leave_one_out(family, result["bars"])
        out["families"][label] = {
            f["held_out"]: {
                "chosen": describe(f["chosen"]),
                "ndcg": f["scores"][f["held_out"]],
                "margin": f["margin"],
            }
            for f in chosen
        }
    return out


def known_items(directories: list[str], n: int) -> dict[str, dict[str, float]]:
    """Hit@1 of pasted sentences, per corpus and mode (the default first)."""
    out = {}
    for directory in directories:
        target = Path(directory)
        corpus = target / "corpus.jsonl" if (target / "corpus.jsonl").is_file() else target
        index, _, _ = open_eval_index(corpus, target, mode="hybrid")
        with index:
            out[target.name] = {
                mode: known_item(index, n=n, mode=mode).hit_at_1 for mode in ("auto", "lexical", "dense")
            }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("datasets", nargs="*", default=set_dirs(DEV_SETS))
    parser.add_argument("--books", default=str(BOOKS), help="a folder for the known-item check too")
    parser.add_argument("--known", type=int, default=60, help="sentences per corpus (default 60)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()

    table = {load_beir(d).name: quality_rows(d) for d in args.datasets}
    shown = with_means(table)
    columns = list(shown)
    rows = [[s, *(f"{shown[n][s]:.4f}" for n in columns)] for s in KENNING + PEERS]
    rows.append(["default - bar", *(f"{m:+.4f}" for m in margins(table).values()), ""])
    print(text_table(["nDCG@10", *columns], rows))
    print("(bar: max(kenning lexical, dense, their RRF) + 0.01)")

    print("\nleave-one-set-out (fitted on the other sets by their smallest margin over the bar):")
    for label, by_set in folds(args.datasets, args.jobs)["families"].items():
        cells = (f"{n} {f['ndcg']:.4f} ({f['margin']:+.4f})" for n, f in by_set.items())
        print(f"  {label}: " + "  ".join(cells))

    known = known_items([*args.datasets, args.books], args.known)
    header = [f"known-item Hit@1 ({args.known} pasted sentences each)", "default", "lexical", "dense"]
    modes = ("auto", "lexical", "dense")
    rows = [[name, *(f"{hits[m]:.3f}" for m in modes)] for name, hits in known.items()]
    print("\n" + text_table(header, rows))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
