"""One measurement a fresh process, and kenning versions side by side.

A benchmark that needs a new process for each measurement (peak memory, the first query of a command)
re-runs itself as `python SCRIPT --worker JOB ARGS...`; the worker prints its result as one JSON line
(answer_worker) and the parent reads it (run_worker).

To compare versions of kenning, each version is a checkout's `src` folder put first on PYTHONPATH of
the worker processes (version_env), and the versions take turns, their order reversed every other
round (in_turn): a machine's speed drifts by tens of percent over minutes, so only measurements made
side by side are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def worker_env(**extra: str) -> dict[str, str]:
    """The environment of a measured process: no `kenning serve` answering for it, one BLAS thread."""
    return {
        **os.environ,
        "KENNING_NO_SERVER": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **extra,
    }


def version_env(src: str | Path) -> dict[str, str]:
    """worker_env with a checkout's src folder first on the path (its analysis workers inherit it)."""
    return worker_env(PYTHONPATH=str(Path(src).resolve()))


def run_worker(script: str | Path, *args, env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:
    """Run `python SCRIPT --worker ARGS...` and return the JSON object it printed last."""
    proc = subprocess.run(
        [sys.executable, str(script), "--worker", *map(str, args)],
        capture_output=True,
        text=True,
        env=env or worker_env(),
        cwd=cwd,
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker {args[:2]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def answer_worker(worker: Callable[[list[str]], dict]) -> bool:
    """In a worker process (argv starts with --worker), run `worker(args)`, print its JSON line and
    return True; in the parent return False."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2:])))
        return True
    return False


def in_turn(versions: list, round_: int) -> list:
    """The order of the versions in a round: as given in even rounds, reversed in odd ones."""
    return list(versions) if round_ % 2 == 0 else list(versions)[::-1]


def add_version_arguments(parser: argparse.ArgumentParser, versions_help: str, rounds: int) -> None:
    """The arguments every version comparison takes: the versions, a scale tier, the rounds."""
    parser.add_argument("versions", nargs="+", help=versions_help)
    parser.add_argument(
        "--tier", type=Path, default=Path(tempfile.gettempdir()) / "kenning-scale" / "chunks-1000000"
    )
    parser.add_argument("--rounds", type=int, default=rounds)
