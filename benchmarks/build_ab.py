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
copying and rewriting counted too. With --steps N, each round's copy is re-indexed N times in a row,
other shards each time, as the scale benchmark's second re-index row does, and each step's seconds
are printed: the later steps merge the small segments the earlier ones wrote.

With --reindex --paired, each round copies the built index once for every version, rewrites the 1%
once, and runs the versions' re-indexes back to back (order alternating): the machine's speed moves
from one minute to the next, by more than a change worth having, and a pair's two runs share it.
Prints each round's seconds and each version's difference from the first, then the differences'
median and mean and how many rounds each version was the faster in.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
from pathlib import Path

import scale
from lib.files import page_cache
from lib.workers import add_version_arguments, in_turn, version_env


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(version: str, target: Path, corpus: Path) -> float:
    """Seconds of a full build of `corpus` into `target` by the kenning in `version`."""
    shutil.rmtree(target, ignore_errors=True)
    page_cache(corpus, "warm")
    return scale.run_worker("index", "kenning", target, corpus, env=version_env(version))["seconds"]


def paired_reindex(tier: Path, versions: list[str], rounds: int) -> None:
    """1% re-indexes of the versions back to back on one rewritten corpus a round (module docstring)."""
    group = scale.one_percent_shards(tier)[0]
    copies = [tier / f"index-kenning-paired-{n}" for n in range(len(versions))]
    seconds: dict[str, list[float]] = {v: [] for v in versions}
    from kenning.sidefiles.ann import seal_copy

    try:
        with scale.kept_shards(group) as (saved, restore):
            for r in range(rounds):
                restore()
                for copy in copies:
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(tier / "index-kenning", copy)
                    seal_copy(tier / "index-kenning", copy)  # the user's own copy: its graph stays trusted
                os.sync()
                scale.rewrite_shards(group, saved, scale.np.random.default_rng(scale.SEED + 100 + r))
                for n in in_turn(range(len(versions)), r):
                    measured = scale.run_worker(
                        "index", "kenning", copies[n], tier / "corpus", env=version_env(versions[n])
                    )
                    seconds[versions[n]].append(measured["seconds"])
                first = seconds[versions[0]][-1]
                shown = "  ".join(
                    f"{v} {seconds[v][-1]:.2f}" + (f" ({seconds[v][-1] - first:+.2f})" if n else "")
                    for n, v in enumerate(versions)
                )
                print(f"round {r + 1}  {shown}", flush=True)
    finally:
        for copy in copies:
            shutil.rmtree(copy, ignore_errors=True)
    for version in versions:
        print(f"{version:<40} median {statistics.median(seconds[version]):.3f} s  (n={rounds})")
    for version in versions[1:]:
        diffs = [b - a for a, b in zip(seconds[versions[0]], seconds[version], strict=True)]
        print(
            f"{version} - {versions[0]}: median {statistics.median(diffs):+.3f} s, mean "
            f"{statistics.mean(diffs):+.3f} s, faster in {sum(d < 0 for d in diffs)} of {len(diffs)} rounds"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version_arguments(ap, "src directories to put on PYTHONPATH", rounds=2)
    ap.add_argument("--reindex", action="store_true", help="time a 1%% re-index, not a full build")
    ap.add_argument("--steps", type=int, default=1, help="with --reindex: 1%% re-indexes in a row a round")
    ap.add_argument(
        "--paired", action="store_true", help="with --reindex: the versions back to back, one rewrite a round"
    )
    args = ap.parse_args()
    if args.steps != 1 and not args.reindex:
        ap.error("--steps times re-indexes in a row: it needs --reindex")
    if args.steps < 1:
        ap.error(f"--steps must be 1 or more, got {args.steps}")
    if args.paired and (not args.reindex or args.steps != 1 or len(args.versions) < 2):
        ap.error("--paired compares two or more versions' single re-indexes: it needs --reindex, no --steps")
    if args.paired:
        paired_reindex(args.tier, args.versions, args.rounds)
        return
    corpus = args.tier / "corpus"
    runs: dict[str, list[tuple[list[float], float]]] = {v: [] for v in args.versions}
    with tempfile.TemporaryDirectory(dir=args.tier) as scratch:
        for r in range(args.rounds):
            for version in in_turn(args.versions, r):
                before = children_cpu()
                if args.reindex:
                    env = version_env(version)
                    timed = scale.reindex_one_percent(args.tier, 1.0, steps=args.steps, env=env)
                    seconds = timed.get("reindex_steps_s", [timed["reindex_1pct_s"]])
                else:
                    seconds = [build(version, Path(scratch) / "index", corpus)]
                runs[version].append((seconds, children_cpu() - before))
                shown = " ".join(f"{s:7.2f}" for s in seconds)
                cpu = runs[version][-1][1]
                print(f"round {r + 1}  {version:<40} {shown} s  cpu {cpu:7.1f} s", flush=True)
    for version, done in runs.items():
        walls = [statistics.median(s[step] for s, _ in done) for step in range(len(done[0][0]))]
        cpu = statistics.median(c for _, c in done)
        shown = " ".join(f"{w:7.2f}" for w in walls)
        print(f"{version:<40} median {shown} s  cpu {cpu:7.1f} s  (n={len(done)})")


if __name__ == "__main__":
    main()
