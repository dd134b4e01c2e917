"""Full builds of one tier's corpus by two or more versions of kenning, in turn.

    python benchmarks/build_ab.py --tier /tmp/kenning-scale/chunks-1000000 --rounds 2 \
        /tmp/old-checkout/src src

Each argument is a `src` directory put first on PYTHONPATH (its analysis workers run the same code).
Each round builds the tier's corpus once per version (`scale.py --worker index`, into a scratch
folder, the corpus read into the page cache first), the versions' order reversed every other round:
the machine's speed drifts over minutes, so only builds made side by side are compared. Prints each
build's seconds and the CPU seconds of all its processes (the writer and its workers), then the
medians per version.

With --reindex, each round times a 1% re-index instead (`scale.reindex_one_percent`: a copy of the
tier's built kenning index, 1% of the shards rewritten, re-indexed in a new process), the CPU of
copying and rewriting counted too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scale  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(version: str, target: Path, corpus: Path) -> float:
    """Seconds of a full build of `corpus` into `target` by the kenning in `version`."""
    shutil.rmtree(target, ignore_errors=True)
    scale.page_cache(corpus, "warm")
    env = dict(os.environ, PYTHONPATH=str(Path(version).resolve()))
    command = [sys.executable, str(HERE / "scale.py"), "--worker", "index", "kenning"]
    out = subprocess.run(
        command + [str(target), str(corpus)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="+", help="src directories to put on PYTHONPATH")
    ap.add_argument(
        "--tier", type=Path, default=Path(tempfile.gettempdir()) / "kenning-scale" / "chunks-1000000"
    )
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reindex", action="store_true", help="time a 1%% re-index, not a full build")
    args = ap.parse_args()
    corpus = args.tier / "corpus"
    runs: dict[str, list[tuple[float, float]]] = {v: [] for v in args.versions}
    with tempfile.TemporaryDirectory(dir=args.tier) as scratch:
        for r in range(args.rounds):
            for version in args.versions if r % 2 == 0 else args.versions[::-1]:
                before = children_cpu()
                if args.reindex:
                    os.environ["PYTHONPATH"] = str(Path(version).resolve())  # the re-index process's
                    seconds = scale.reindex_one_percent(args.tier, 1.0)["reindex_1pct_s"]
                else:
                    seconds = build(version, Path(scratch) / "index", corpus)
                runs[version].append((seconds, children_cpu() - before))
                print(
                    f"round {r + 1}  {version:<40} {seconds:7.2f} s  cpu {runs[version][-1][1]:7.1f} s",
                    flush=True,
                )
    for version, done in runs.items():
        wall = statistics.median(s for s, _ in done)
        cpu = statistics.median(c for _, c in done)
        print(f"{version:<40} median {wall:7.2f} s  cpu {cpu:7.1f} s  (n={len(done)})")


if __name__ == "__main__":
    main()
