"""Lexical search: kenning against bm25s and tantivy, in one process, on BEIR-layout datasets.

Each system indexes the corpus (title + text), then answers every judged query one at a time on one
thread, returning its top 10 document ids. Query time includes each system's own query analysis.
Importing kenning sets single-threaded BLAS (OPENBLAS_NUM_THREADS=1) for the whole process, so every
system here runs its numpy work on one thread, as the one-thread method intends.
Prints nDCG@10 (kenning's trec_eval-style metric, same for all), index seconds, QPS, and kenning's
QPS as a ratio to each peer.

    pip install -e '.[bench]'
    python benchmarks/bench_lexical.py ../shared/data/cranfield ../shared/data/msmarco-5k
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from kenning import Bm25Params, Index  # noqa: E402
from kenning.eval import load_beir, ndcg_at  # noqa: E402


def read_corpus(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def timed_queries(queries: dict[str, str], run, repeat: int) -> tuple[dict[str, list[str]], float]:
    """Run every query `repeat` times (after one warm-up pass); return rankings and the best QPS."""
    rankings = {qid: run(text) for qid, text in queries.items()}
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for text in queries.values():
            run(text)
        best = min(best, time.perf_counter() - started)
    return rankings, len(queries) / best


class KenningSystem:
    name = "kenning"

    def __init__(self, workdir: Path, params: Bm25Params | None = None):
        self.workdir = workdir
        self.params = params or Bm25Params()

    def index(self, corpus_path: Path, docs: list[dict]) -> None:
        self.ix = Index(self.workdir / "kenning")
        self.ix.add([corpus_path], force=True)

    def search(self, text: str, k: int) -> list[str]:
        hits = self.ix.search(text, limit=k, params=self.params, detail="heads", syntax="plain").hits
        return [h.doc_key for h in hits]


class Bm25sSystem:
    name = "bm25s"

    def index(self, corpus_path: Path, docs: list[dict]) -> None:
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.ids = [d["_id"] for d in docs]
        texts = [f"{d.get('title', '')} {d['text']}" for d in docs]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.n = len(docs)

    def search(self, text: str, k: int) -> list[str]:
        tokens = self.bm25s.tokenize([text], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = self.retriever.retrieve(tokens, k=min(k, self.n), show_progress=False, n_threads=1)
        return [self.ids[i] for i in docs[0]]


class TantivySystem:
    name = "tantivy"
    _special = re.compile(r"[^\w\s]")  # the query parser's operators; words are all we want

    def index(self, corpus_path: Path, docs: list[dict]) -> None:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", stored=False, tokenizer_name="en_stem")
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        schema = builder.build()
        self.index_ = tantivy.Index(schema)
        writer = self.index_.writer(heap_size=200_000_000, num_threads=1)
        for d in docs:
            writer.add_document(tantivy.Document(id=d["_id"], title=d.get("title", ""), body=d["text"]))
        writer.commit()
        writer.wait_merging_threads()
        self.index_.reload()
        self.searcher = self.index_.searcher()

    def search(self, text: str, k: int) -> list[str]:
        cleaned = self._special.sub(" ", text).strip().lower()  # lower: AND/OR/NOT are operators
        if not cleaned:
            return []
        query = self.index_.parse_query(cleaned, ["title", "body"])
        result = self.searcher.search(query, k)
        return [self.searcher.doc(addr)["id"][0] for _, addr in result.hits]


def bench_dataset(directory: str, k: int, repeat: int) -> list[dict]:
    dataset = load_beir(directory)
    docs = read_corpus(dataset.corpus_path)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kenning-bench-") as tmp:
        for system in (KenningSystem(Path(tmp)), Bm25sSystem(), TantivySystem()):
            started = time.perf_counter()
            system.index(dataset.corpus_path, docs)
            index_seconds = time.perf_counter() - started
            rankings, qps = timed_queries(dataset.queries, lambda q, s=system: s.search(q, k), repeat)
            ndcg = sum(ndcg_at(rankings[q], dataset.qrels[q]) for q in dataset.queries) / len(dataset.queries)
            rows.append(
                {
                    "dataset": dataset.name,
                    "system": system.name,
                    "ndcg@10": ndcg,
                    "index_seconds": index_seconds,
                    "qps": qps,
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "datasets",
        nargs="*",
        default=["../shared/data/cranfield", "../shared/data/msmarco-5k", "../shared/data/cacm"],
    )
    parser.add_argument("-k", type=int, default=10, help="results per query (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the queries; best is kept")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    all_rows = []
    for directory in args.datasets:
        rows = bench_dataset(directory, args.k, args.repeat)
        kenning_qps = next(r["qps"] for r in rows if r["system"] == "kenning")
        for r in rows:
            r["kenning_qps_ratio"] = kenning_qps / r["qps"]
        all_rows.extend(rows)
    if args.json:
        print(json.dumps(all_rows, indent=2))
        return 0
    print(f"{'dataset':<12} {'system':<8} {'nDCG@10':>8} {'index s':>8} {'QPS':>9} {'kenning/x':>10}")
    for r in all_rows:
        print(
            f"{r['dataset']:<12} {r['system']:<8} {r['ndcg@10']:>8.4f} {r['index_seconds']:>8.2f} "
            f"{r['qps']:>9.1f} {r['kenning_qps_ratio']:>9.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
