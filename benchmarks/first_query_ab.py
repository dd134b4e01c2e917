"""First queries in new processes, two or more versions of kenning (or tantivy) alternated.

    python benchmarks/first_query_ab.py --tier /tmp/kenning-scale/chunks-1000000 \
        --queries 20 --rounds 4 /tmp/old-checkout/src src tantivy

Each argument is a `src` directory put first on PYTHONPATH (or `tantivy`). For each round, each of the
tier's first --queries queries is answered once per version, each in its own process
(`scale.py --worker first`, which times opening the index and answering, the import apart), with the
index's files read into the page cache first, the versions' order reversed every other round
(lib/workers.py says why). Prints p50 / p95 per version and the median number of pages its processes first
touched while opening and answering (minor faults), the p50 of the package's import, and the p50 of
import and first query together (what a command pays end to end); then each query's median per version.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from lib.files import page_cache
from lib.timing import percentile
from lib.workers import add_version_arguments, in_turn, run_worker, version_env, worker_env

SCALE = Path(__file__).resolve().parent / "scale.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version_arguments(ap, "src directories to put on PYTHONPATH, or 'tantivy'", rounds=4)
    ap.add_argument("--queries", type=int, default=20)
    args = ap.parse_args()
    queries = json.loads((args.tier / "queries.json").read_text())[: args.queries]
    times: dict[tuple[str, int], list[float]] = {}
    faults: dict[str, list[int]] = {}
    imports: dict[str, list[float]] = {}
    end_to_end: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for i, query in enumerate(queries):
                one = Path(scratch) / f"q{i}.json"
                one.write_text(json.dumps([query]))
                for version in in_turn(args.versions, r):
                    system = "tantivy" if version == "tantivy" else "kenning"
                    env = worker_env() if system == "tantivy" else version_env(version)
                    index = args.tier / f"index-{system}"
                    page_cache(index, "warm")
                    measured = run_worker(SCALE, "first", system, index, one, env=env, cwd=Path(scratch))
                    times.setdefault((version, i), []).append(1000 * measured["seconds"])
                    faults.setdefault(version, []).append(measured["minor_faults"])
                    imports.setdefault(version, []).append(1000 * measured["import_s"])
                    both = measured["import_s"] + measured["seconds"]
                    end_to_end.setdefault(version, []).append(1000 * both)
    for version in args.versions:
        every = [t for i in range(len(queries)) for t in times[(version, i)]]
        p50, p95 = statistics.median(every), percentile(every, 0.95)
        pages = statistics.median(faults[version])
        times_text = f"p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  n={len(every)}"
        print(
            f"{version[-28:]:28s} first query {times_text}  faults {pages:.0f}  "
            f"import p50 {statistics.median(imports[version]):5.1f} ms  "
            f"import + first query p50 {statistics.median(end_to_end[version]):5.1f} ms"
        )
    for i, query in enumerate(queries):
        row = "  ".join(f"{statistics.median(times[(v, i)]):6.1f}" for v in args.versions)
        print(f"{i:3d} {row} | {query}")


if __name__ == "__main__":
    main()
