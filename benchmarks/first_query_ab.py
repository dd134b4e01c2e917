"""First queries in new processes, two or more versions of kenning (or tantivy) alternated.

    python benchmarks/first_query_ab.py --tier /tmp/kenning-scale/chunks-1000000 \
        --queries 20 --rounds 4 /tmp/old-checkout/src src tantivy

Each argument is a `src` directory put first on PYTHONPATH (or `tantivy`). For each round, each of the
tier's first --queries queries is answered once per version, each in its own process
(`scale.py --worker first`, which times opening the index and answering, the import apart), with the
index's files read into the page cache first (scale.page_cache), the versions' order reversed every
other round. The machine's speed drifts over minutes, so only versions measured side by side like
this are compared. Prints p50 / p95 per version and the median number of pages its processes first
touched while opening and answering (minor faults), the p50 of the package's import, and the p50 of
import and first query together (what a command pays end to end); then each query's median per version.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scale  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="+", help="src directories to put on PYTHONPATH, or 'tantivy'")
    ap.add_argument(
        "--tier", type=Path, default=Path(tempfile.gettempdir()) / "kenning-scale" / "chunks-1000000"
    )
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=4)
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
                for version in args.versions if r % 2 == 0 else args.versions[::-1]:
                    system = "tantivy" if version == "tantivy" else "kenning"
                    env = dict(os.environ)
                    if system == "kenning":
                        env["PYTHONPATH"] = str(Path(version).resolve())
                    index = args.tier / f"index-{system}"
                    scale.page_cache(index, "warm")
                    command = [sys.executable, str(HERE / "scale.py"), "--worker", "first", system]
                    out = subprocess.run(
                        [*command, str(index), str(one)],
                        capture_output=True,
                        text=True,
                        env=env,
                        cwd=scratch,
                        check=True,
                    )
                    measured = json.loads(out.stdout)
                    times.setdefault((version, i), []).append(1000 * measured["seconds"])
                    faults.setdefault(version, []).append(measured["minor_faults"])
                    imports.setdefault(version, []).append(1000 * measured["import_s"])
                    both = measured["import_s"] + measured["seconds"]
                    end_to_end.setdefault(version, []).append(1000 * both)
    for version in args.versions:
        every = sorted(t for i in range(len(queries)) for t in times[(version, i)])
        p95 = every[int(0.95 * (len(every) - 1))]
        p50 = statistics.median(every)
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
