"""Crash discipline: SIGKILL `kenning index` at random moments and check that no commit is ever lost.

Each round puts a corpus of a different size in the one indexed file and rebuilds the index
(`--force`, which re-reads every indexed root) from it, and kills the process
after a random delay (sometimes before it starts writing, sometimes mid-transaction, sometimes after
it finished). After every kill the index must open, pass `kenning verify`, answer a search, and hold
exactly one complete state: the last one that committed (its chunk count), or the new one whole.

    python benchmarks/crash_kill.py --kills 300           # the long run (minutes)
    tests/indexing/test_crash.py runs the same rounds, a few of them, in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
WORDS = (
    "launch rotate signing keys backup restore storage deploy canary rollback quarter nightly cold "
    "plan budget approve review incident pager latency shard replica index segment merge commit"
).split()


def write_corpora(folder: Path, sizes: list[int], seed: int = 0) -> list[Path]:
    """BEIR-style corpus files of the given sizes (different sizes tell the states apart)."""
    rng = random.Random(seed)
    paths = []
    for n in sizes:
        path = folder / f"corpus-{n}.jsonl"
        with path.open("w") as fh:
            for i in range(n):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
                fh.write(json.dumps({"_id": f"d{i}", "title": f"doc {i}", "text": text}) + "\n")
        paths.append(path)
    return paths


def kenning(*args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def state(index: Path) -> tuple[int, int, bool, int]:
    """(chunks, generation, verify ok, hits for a search) of the index as a fresh process sees it."""
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys\n"
            "from kenning import Index\n"
            "from kenning.integrity import verify\n"
            "with Index(sys.argv[1], create=False) as ix:\n"
            "    report = verify(ix.store, ix.analyzer, sample=200)\n"
            "    s = ix.status()\n"
            "    hits = len(ix.search('rotate keys', mode='lexical', limit=5).hits)\n"
            "print(json.dumps([s['live_chunks'], s['generation'], report.ok, hits,"
            " [p.message for p in report.problems]]))",
            str(index),
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise AssertionError(f"the index cannot be opened after a kill: {probe.stderr.strip()}")
    chunks, generation, ok, hits, problems = json.loads(probe.stdout)
    if not ok:
        raise AssertionError(f"verify after a kill: {problems}")
    return chunks, generation, ok, hits


def run_kills(workdir: Path, kills: int, seed: int = 0, log=print) -> dict:
    """`kills` rounds; raises AssertionError at the first lost commit or unreadable index. Each kill
    comes after a random delay up to 1.2 times what a whole run takes here (timed first), so most
    runs die somewhere inside, a few just after they committed."""
    rng = random.Random(seed)
    corpora = write_corpora(workdir, [1500, 2500, 3500])
    index = workdir / "ix"
    current = workdir / "current.jsonl"  # the one indexed root; each round swaps its content
    shutil.copyfile(corpora[-1], current)
    timed = time.perf_counter()
    first = kenning("index", current, "--index", index, "--no-embed", "-q")
    assert first.wait() == 0, first.stderr.read().decode()
    max_delay = 1.2 * (time.perf_counter() - timed)
    committed, generation, _, _ = state(index)
    counts = {"killed_mid_run": 0, "finished_before_kill": 0}
    started = time.perf_counter()
    for round_ in range(kills):
        corpus = corpora[round_ % len(corpora)]
        target = int(corpus.stem.split("-")[1])
        shutil.copyfile(corpus, current.with_suffix(".tmp"))
        os.replace(current.with_suffix(".tmp"), current)
        proc = kenning("index", current, "--index", index, "--no-embed", "--force", "-q")
        time.sleep(rng.uniform(0.0, max_delay))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            counts["killed_mid_run"] += 1
        else:
            counts["finished_before_kill"] += 1
        code = proc.wait()
        chunks, new_generation, _, hits = state(index)
        if code == 0:  # it committed: the new state, whole
            assert chunks == target and new_generation > generation, (round_, chunks, target)
        else:  # killed: the last committed state, or the new one if the commit landed just before
            assert chunks in (committed, target), (round_, chunks, committed, target)
            assert new_generation >= generation, (round_, new_generation, generation)
        assert hits > 0
        committed, generation = chunks, new_generation
        if (round_ + 1) % 25 == 0:
            log(f"{round_ + 1} rounds, {counts['killed_mid_run']} killed mid-run, no commit lost")
    counts["rounds"] = kills
    counts["max_delay_s"] = round(max_delay, 2)
    counts["seconds"] = round(time.perf_counter() - started, 1)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run_kills(Path(tmp), args.kills, args.seed)
    print(json.dumps(result))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
