"""HNSW settings against exact search: recall@10, build seconds and query milliseconds per setting.

Takes the vectors of existing kenning indexes (the dev sets' eval indexes, built by `kenning eval
--mode hybrid`, and any index given with --index) and, as queries, the dev sets' queries embedded
with the index's model (or, for an index without a query file, 200 of its own vectors with a little
noise; `--queries FILE`, a JSON list of query texts such as the scale benchmark's queries.json, pairs
with the --index before it). For every (connectivity, expansion_add, expansion_search) it builds a
usearch graph over all the vectors, and reports recall@10 against exact cosine search, the build time
and the mean query time on one thread.

    python benchmarks/tune_ann.py [--no-dev-sets] [--index DIR [--queries FILE] ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
from lib.datasets import open_embedded_eval_index, set_dirs

from kenning import Index
from kenning.eval import load_beir
from kenning.sidefiles import ann

GRID = {"connectivity": (16, 32), "expansion_add": (128, 192, 256), "expansion_search": (192, 384, 512, 768)}


def pooled_dev_sets() -> tuple[np.ndarray, np.ndarray]:
    """Every dev set's vectors in one pool (ids renumbered), and their queries' vectors."""
    vectors, queries = [], []
    for directory in set_dirs():
        with open_embedded_eval_index(directory) as index:
            embedder = index.embedder()
            with index.store.reading():
                _, matrix = index.store.chunk_vectors(embedder.fingerprint())
            texts = list(load_beir(directory).queries.values())
            vectors.append(matrix)
            queries.append(embedder.embed(texts, kind="query"))
    return np.vstack(vectors), np.vstack(queries)


def own_vectors(directory: Path, count: int = 200, queries: Path | None = None) -> tuple:
    if not (directory / "index.db").exists():
        raise SystemExit(f"{directory}: no kenning index there")
    with Index(directory) as index:
        embedder = index.embedder()
        with index.store.reading():
            _, matrix = index.store.chunk_vectors(embedder.fingerprint())
        if queries is not None:
            return matrix, embedder.embed(json.loads(queries.read_text()), kind="query")
    rng = np.random.default_rng(7)
    picked = matrix[rng.choice(len(matrix), size=min(count, len(matrix)), replace=False)]
    noisy = picked + rng.normal(scale=0.02, size=picked.shape).astype(np.float32)
    return matrix, noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def sweep(name: str, vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> None:
    ids = np.arange(len(vectors), dtype=np.int64)
    exact = [set(np.argsort(-(vectors @ q))[:k].tolist()) for q in queries]
    print(f"{name}: {len(vectors):,} vectors, {len(queries)} queries")
    print(f"  {'M':>3s} {'ef_add':>6s} {'ef_search':>9s}   recall@{k}  build s  query ms")
    for m, ef_add in itertools.product(GRID["connectivity"], GRID["expansion_add"]):
        ann.CONNECTIVITY, ann.EXPANSION_ADD = m, ef_add
        graph = ann.new_graph(vectors.shape[1])
        started = time.perf_counter()
        graph.add(ids, vectors, threads=0)
        build = time.perf_counter() - started
        for ef_search in GRID["expansion_search"]:
            graph.expansion_search = ef_search
            started = time.perf_counter()
            found = [set(np.asarray(graph.search(q, k, threads=1).keys).tolist()) for q in queries]
            per_query = (time.perf_counter() - started) / len(queries)
            recall = float(np.mean([len(f & e) / k for f, e in zip(found, exact, strict=True)]))
            ms = 1000 * per_query
            print(f"  {m:3d} {ef_add:6d} {ef_search:9d}   {recall:9.3f}  {build:7.2f}  {ms:8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, action="append", default=[])
    ap.add_argument("--queries", type=Path, action="append", default=[], help="query texts for each --index")
    ap.add_argument("--no-dev-sets", dest="dev_sets", action="store_false")
    args = ap.parse_args()
    if args.dev_sets:
        sweep("dev sets pooled (cranfield + msmarco-5k + cacm)", *pooled_dev_sets())
    for i, directory in enumerate(args.index):
        queries = args.queries[i] if i < len(args.queries) else None
        sweep(str(directory), *own_vectors(directory, queries=queries))


if __name__ == "__main__":
    main()
