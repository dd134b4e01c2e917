"""Rankings on PostgreSQL against the embedded store, on every dev set.

For cranfield, msmarco-5k and cacm: the corpus is indexed and embedded once in a folder (kenning's
eval cache), copied to a PostgreSQL schema with `kenning migrate` (vectors included), and every
judged query runs on both in lexical, dense and hybrid mode. Printed per set and mode: nDCG@10 on
each store, their difference, the share of queries whose top 10 documents are identical, and
queries per second on each store.

    python benchmarks/store_parity.py                   # starts a private PostgreSQL (tests/pg_server.py)
    python benchmarks/store_parity.py --store URL       # or uses a server you give
    python benchmarks/store_parity.py --hnsw            # PostgreSQL's dense search through pgvector HNSW

Without --hnsw both stores search vectors exactly (the dev sets are below the HNSW threshold); with
it the PostgreSQL copy gets a pgvector HNSW index and every dense search goes through it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from lib.datasets import mean_ndcg, set_dirs
from lib.postgres import new_schema, postgres_server

from kenning import Index
from kenning.eval import load_beir, open_eval_index, ranked_doc_keys
from kenning.integrity.migrate import migrate
from kenning.lexical.bm25 import Bm25Params
from kenning.sidefiles import ann

MODES = ("lexical", "dense", "hybrid")
EXACT_FROM = ann.HNSW_THRESHOLD  # the embedded side's threshold, as configured


def run(index: Index, queries: dict, mode: str) -> tuple[dict, float]:
    started = time.perf_counter()
    runs = {qid: ranked_doc_keys(index, text, 100, Bm25Params(), mode) for qid, text in queries.items()}
    return runs, len(queries) / (time.perf_counter() - started)


def compare(dataset_dir: str, base_url: str, hnsw: bool = False) -> list[dict]:
    dataset = load_beir(dataset_dir)
    folder, _, _ = open_eval_index(dataset.corpus_path, Path(dataset_dir), mode="hybrid")
    folder.close()
    url = new_schema(base_url, "parity")
    exact_from = EXACT_FROM
    ann.HNSW_THRESHOLD = 0 if hnsw else exact_from  # the copy builds its pgvector index when asked
    copied = migrate(str(folder.directory), url)
    assert copied.ok, copied.checks
    rows = []
    with Index(folder.directory) as embedded, Index(url) as server:
        for mode in MODES:
            ann.HNSW_THRESHOLD = exact_from
            mine, qps_embedded = run(embedded, dataset.queries, mode)
            ann.HNSW_THRESHOLD = 0 if hnsw else exact_from
            theirs, qps_server = run(server, dataset.queries, mode)
            same = sum(mine[q][:10] == theirs[q][:10] for q in mine) / len(mine)
            rows.append(
                {
                    "set": dataset.name,
                    "mode": mode,
                    "ndcg_embedded": mean_ndcg(dataset, mine),
                    "ndcg_postgres": mean_ndcg(dataset, theirs),
                    "identical_top10": same,
                    "qps_embedded": qps_embedded,
                    "qps_postgres": qps_server,
                    "postgres_dense": server.search("x", mode="dense", limit=1).funnel.channels["dense"],
                }
            )
            print(format_row(rows[-1]), flush=True)
    return rows


def format_row(r: dict) -> str:
    diff = r["ndcg_postgres"] - r["ndcg_embedded"]
    return (
        f"{r['set']:<11} {r['mode']:<8} {r['ndcg_embedded']:.4f}  {r['ndcg_postgres']:.4f}  {diff:+.4f}"
        f"  {r['identical_top10']:>7.1%}  {r['qps_embedded']:>8.1f}  {r['qps_postgres']:>8.1f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a PostgreSQL URL (default: start a private server)")
    parser.add_argument("--hnsw", action="store_true", help="PostgreSQL's dense search through pgvector HNSW")
    parser.add_argument("datasets", nargs="*", default=set_dirs())
    args = parser.parse_args()
    with postgres_server(args.store) as base:
        print("set         mode     nDCG@10 embedded  postgres  diff  same top-10  qps embedded  postgres")
        for dataset_dir in args.datasets:
            rows = compare(dataset_dir, base, args.hnsw)
            dense = rows[-1]["postgres_dense"]
            print(f"  postgres dense search: {dense.get('method')} ({dense.get('graph', 'vectors read')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
