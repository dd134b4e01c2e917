"""Quality on every dev set, against the peers, in one run with one metric.

For cranfield, msmarco-5k and cacm: nDCG@10 of kenning lexical, dense and hybrid (its default) beside
bm25s, tantivy, SQLite FTS5, dense MiniLM alone and RRF of bm25s + MiniLM. Every row is computed here,
queries sent as plain text, and scored by kenning.eval.ndcg_at (trec_eval's definition). Then the
leave-one-set-out folds of benchmarks/tune_hybrid.py, and known-item Hit@1: sentences sampled from each
corpus (and from the two novels) pasted back as queries.

Dense MiniLM alone is exact cosine between the query and each document with the all-MiniLM-L6-v2
vectors kenning stores (int8 ONNX weights run as float32; cosine 0.999 to sentence-transformers' fp32),
so it and the RRF row share kenning's vectors but none of its pipeline.

    pip install -e '.[bench]'
    python benchmarks/quality.py            # embeds each corpus once (cached), then about 5 minutes
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_lexical import Bm25sSystem, TantivySystem, read_corpus  # noqa: E402
from tune_hybrid import format_folds, leave_one_out, sweep  # noqa: E402

from kenning.eval import evaluate, known_item, load_beir, ndcg_at, open_eval_index  # noqa: E402

DATASETS = ["../shared/data/cranfield", "../shared/data/msmarco-5k", "../shared/data/cacm"]
BOOKS = "../shared/data/books"


class Fts5System:
    """SQLite FTS5 with the porter tokenizer, the query's words OR-ed, ranked by bm25()."""

    name = "SQLite FTS5"

    def index(self, docs: list[dict]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, title, body, tokenize='porter')")
        self.db.executemany(
            "INSERT INTO docs VALUES (?,?,?)", [(d["_id"], d.get("title", ""), d["text"]) for d in docs]
        )

    def search(self, text: str, k: int) -> list[str]:
        match = " OR ".join(f'"{w}"' for w in re.findall(r"\w+", text))
        if not match:
            return []
        sql = "SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?"
        return [r[0] for r in self.db.execute(sql, (match, k))]


class MiniLmSystem:
    """Exact cosine over the document vectors kenning stored for this corpus."""

    name = "MiniLM exact cosine"

    def __init__(self, index):
        self.embedder = index.embedder()
        fingerprint = index.embedding_model()["fingerprint"]
        with index.store.reading():
            ids, self.matrix = index.store.chunk_vectors(fingerprint)
            heads = index.store.chunk_heads([int(c) for c in ids])
        self.keys = [heads[int(c)][0] for c in ids]

    def scores(self, text: str) -> np.ndarray:
        return self.matrix @ self.embedder.embed([text], kind="query")[0].astype(np.float32)

    def search(self, text: str, k: int) -> list[str]:
        sims = self.scores(text)
        return [self.keys[i] for i in np.argsort(-sims, kind="stable")[:k]]


def rrf(lists: list[list[str]], k: int = 60, depth: int = 100) -> list[str]:
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked[:depth], 1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda d: (-fused[d], d))


def mean_ndcg(dataset, rankings: dict[str, list[str]]) -> float:
    return sum(ndcg_at(rankings[q], dataset.qrels[q]) for q in dataset.queries) / len(dataset.queries)


def quality_rows(directory: str) -> dict[str, float]:
    """nDCG@10 of every system on one dataset."""
    dataset = load_beir(directory)
    index, _, _ = open_eval_index(dataset.corpus_path, Path(directory), mode="hybrid")
    index.close()
    rows = {}
    for mode in ("lexical", "dense", "hybrid"):
        rows[f"kenning {mode}"] = evaluate(directory, mode=mode).ndcg_at_10
    docs = read_corpus(dataset.corpus_path)
    bm25s, tantivy, fts5 = Bm25sSystem(), TantivySystem(), Fts5System()
    bm25s.index(dataset.corpus_path, docs)
    tantivy.index(dataset.corpus_path, docs)
    fts5.index(docs)
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
    parser.add_argument("datasets", nargs="*", default=DATASETS)
    parser.add_argument("--books", default=BOOKS, help="a folder for the known-item check besides the sets")
    parser.add_argument("--known", type=int, default=60, help="sentences per corpus (default 60)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()

    table = {load_beir(d).name: quality_rows(d) for d in args.datasets}
    sets = list(table)
    systems = list(next(iter(table.values())))
    print("nDCG@10" + " " * 21 + "".join(f"{s:>12}" for s in sets))
    for system in systems:
        print(f"{system:<28}" + "".join(f"{table[s][system]:>12.4f}" for s in sets))

    result = sweep(args.datasets, args.jobs)
    bars = result["bars"]
    print(
        "\nbar per set: max(kenning lexical, dense, RRF of the two) + 0.01 = "
        + ", ".join(f"{s} {bars[s]:.4f}" for s in sets)
    )
    print("leave-one-set-out (fit on two sets by their smallest margin over the bar, reported on the third):")
    for label, mode in (("zscore family", "zscore"), ("every family", None)):
        folds = leave_one_out([r for r in result["rows"] if mode is None or r[0].mode == mode], bars)
        print(f"  {label:<14} {format_folds(folds)}")

    known = known_items([*args.datasets, args.books], args.known)
    print(
        f"\nknown-item Hit@1 ({args.known} pasted sentences each)"
        + "".join(f"{m:>10}" for m in ("default", "lexical", "dense"))
    )
    for name, modes in known.items():
        print(f"  {name:<41}" + "".join(f"{modes[m]:>10.3f}" for m in ("auto", "lexical", "dense")))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
