"""The scale benchmark's tiers on PostgreSQL beside the embedded store.

For one tier of benchmarks/scale.py (its corpus and queries, made by that script and cached under
--work), on the embedded store (a folder) and on PostgreSQL (a schema, here or on --store):
- index: building the lexical index from the corpus files, wall seconds and peak RSS of the kenning
  process (the PostgreSQL server's own processes are not counted), and the disk each index takes;
- first query: opening the index and answering one query in a fresh process, p50/p95;
- warm: one process answers half the queries to warm up, then times the other half, p50/p95,
  lexical and hybrid.
Hybrid needs vectors: the folder index is embedded once (`--embedded DIR` reuses one already
embedded), the vectors copied to PostgreSQL by `kenning migrate` (which builds the pgvector HNSW
index), so both stores search the same vectors; dense recall@10 of pgvector against exact search
is printed too.

    python benchmarks/scale.py --chunks 100k --systems kenning    # makes the tier, if not there yet
    python benchmarks/scale_postgres.py --chunks 100k [--embedded DIR] [--store URL]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from lib import workers
from lib.files import disk_mb
from lib.memory import TreePeak, peak_rss_mb
from lib.postgres import new_schema, postgres_server
from lib.tables import text_table
from lib.timing import p50_p95
from scale import parse_size


def worker(args: list[str]) -> dict:
    """One measurement in this process (a fresh one for each), printed as a JSON line."""
    job, location = args[0], args[1]
    started = time.perf_counter()
    from kenning import Index

    imported = time.perf_counter()
    if job == "index":
        sampler = TreePeak()
        with Index(location) as index:
            report = index.add([args[2]])
        return {
            "seconds": time.perf_counter() - imported,
            "chunks": report.chunks_added,
            "peak_mb": peak_rss_mb(),
            "tree_mb": sampler.stop(),
        }
    queries = json.loads(Path(args[2]).read_text())
    mode = args[3]
    if job == "first":
        with Index(location, create=False) as index:
            index.search(queries[0], mode=mode, limit=10, detail="heads")
        return {"seconds": time.perf_counter() - imported, "import_s": imported - started}
    if job == "warm":
        with Index(location, create=False) as index:
            half = len(queries) // 2
            for q in queries[:half]:
                index.search(q, mode=mode, limit=10, detail="heads")
            times = []
            for q in queries[half:]:
                t = time.perf_counter()
                index.search(q, mode=mode, limit=10, detail="heads")
                times.append(time.perf_counter() - t)
        return {"times": times}
    if job == "recall":
        return pg_recall(location, queries)
    raise SystemExit(f"unknown job {job}")


def pg_recall(url: str, queries: list[str], k: int = 10) -> dict:
    """Recall@k of the pgvector HNSW index against exact search over the same vectors."""
    from kenning import Index
    from kenning.signals.dense import DenseView, ServerDenseView

    with Index(url, create=False) as index:
        recorded = index.embedding_model()
        fingerprint = recorded["fingerprint"]
        with index.store.reading():
            ids, _ = index.store.chunk_vectors(fingerprint)
            live = np.ones(int(ids.max()) + 1, dtype=bool)
            exact = DenseView(index.store, fingerprint, live, hnsw_threshold=10**12)
            server = ServerDenseView(index.store, fingerprint, live, recorded["dim"])
        vectors = index.embedder().embed(queries, kind="query")
        found, times = [], []
        for v in vectors:
            t = time.perf_counter()
            approximate = set(server.search(v, k)[0].tolist())
            times.append(time.perf_counter() - t)
            found.append(len(approximate & set(exact.search(v, k)[0].tolist())) / k)
    return {"recall": float(np.mean(found)), "p50_ms": 1000 * statistics.median(times)}


def run(*args) -> dict:
    """One job of worker() in a fresh process: its JSON result."""
    return workers.run_worker(__file__, *args)


def latencies(location: str, queries_file: Path, mode: str, firsts: int) -> dict:
    one = queries_file.with_name("first-query-pg.json")
    queries = json.loads(queries_file.read_text())
    first = []
    for q in queries[:firsts]:
        one.write_text(json.dumps([q]))
        first.append(run("first", location, one, mode)["seconds"] * 1000)
    warm = [t * 1000 for t in run("warm", location, queries_file, mode)["times"]]
    (first_p50, first_p95), (warm_p50, warm_p95) = p50_p95(first), p50_p95(warm)
    return {
        f"{mode} first p50 ms": first_p50,
        f"{mode} first p95 ms": first_p95,
        f"{mode} warm p50 ms": warm_p50,
        f"{mode} warm p95 ms": warm_p95,
    }


def store_disk_mb(url: str) -> float:
    from kenning.store import open_store

    store = open_store(url, create=False)
    try:
        return store.size_on_disk() / 2**20
    finally:
        store.close()


def measure(rows: dict[str, dict], base: str, folder: Path, tier: Path, args) -> None:
    """Build, size and query the tier on both stores (and, with --embedded, hybrid on both)."""
    corpus, queries_file = tier / "corpus", tier / "queries.json"
    url = new_schema(base, "scale")
    for name, location in (("embedded", str(folder)), ("postgres", url)):
        built = run("index", location, corpus)
        rows[name]["index s"] = built["seconds"]
        rows[name]["index peak RSS MB"] = built["peak_mb"]
        rows[name]["disk MB (lexical)"] = disk_mb(folder) if name == "embedded" else store_disk_mb(url)
        rows[name] |= latencies(location, queries_file, "lexical", args.first)
        print(f"{name}: {json.dumps(rows[name])}", file=sys.stderr, flush=True)
    if args.embedded:
        dense_url = new_schema(base, "dense")
        started = time.perf_counter()
        copied = subprocess.run(
            ["kenning", "migrate", "--from", str(args.embedded), "--to", dense_url, "--json", "-q"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(copied.stdout)["ok"]
        print(f"migrate + pgvector index: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        for name, location in (("embedded", str(args.embedded)), ("postgres", dense_url)):
            rows[name] |= latencies(location, queries_file, "hybrid", args.first)
            rows[name]["disk MB (with vectors)"] = (
                disk_mb(args.embedded) if name == "embedded" else store_disk_mb(dense_url)
            )
        rows["postgres"]["pgvector recall@10"] = run("recall", dense_url, queries_file, "dense")["recall"]


def main() -> int:
    if workers.answer_worker(worker):
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", default="100k")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kenning-scale"))
    ap.add_argument("--store", help="a PostgreSQL URL (default: start a private server, tests/pg_server.py)")
    ap.add_argument("--embedded", type=Path, help="an embedded copy of the tier's index to reuse for hybrid")
    ap.add_argument("--first", type=int, default=5, help="fresh processes per first-query latency")
    args = ap.parse_args()
    n = parse_size(args.chunks)
    tier = args.work / f"chunks-{n}"
    queries_file = tier / "queries.json"
    if not queries_file.is_file():
        raise SystemExit(f"no tier at {tier}: run benchmarks/scale.py --chunks {args.chunks} first")
    folder = tier / "index-kenning-pgbench"
    shutil.rmtree(folder, ignore_errors=True)
    rows: dict[str, dict] = {"embedded": {}, "postgres": {}}
    with postgres_server(args.store) as base:
        try:
            measure(rows, base, folder, tier, args)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"{n:,} chunks, {len(json.loads(queries_file.read_text()))} queries")
    table = []
    for key in rows["postgres"]:
        mine, theirs = rows["embedded"].get(key), rows["postgres"][key]
        ratio = f"{theirs / mine:.2f}x" if mine else ""
        table.append([key, f"{mine:.2f}" if mine is not None else "", f"{theirs:.2f}", ratio])
    print(text_table(["", "embedded", "postgres", "ratio"], table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
