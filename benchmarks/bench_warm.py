"""What a warm `kenning serve` saves the command line: wall time of `kenning search` as a new
process, with the server answering and without it (KENNING_NO_SERVER=1), on the same index.

    python benchmarks/bench_warm.py [FOLDER]      # default: this repository's docs/ and README
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]
QUERIES = ["how does incremental indexing work", "rotate keys", "fusion weights", "verify the index"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "folder", nargs="?", type=Path, default=Path(__file__).resolve().parents[1] / "docs", help="(docs/)"
    )
    source = parser.parse_args().folder
    if not source.is_dir():
        parser.error(f"{source} is not a folder")
    work = Path(tempfile.mkdtemp())
    try:
        shutil.copytree(source, work / "corpus")
        subprocess.run([*ENTRY, "index", "corpus", "-q"], cwd=work, check=True, capture_output=True)
        server = subprocess.Popen([*ENTRY, "serve", "--port", "0", "-q"], cwd=work)
        announce = work / ".kenning" / "serve.json"
        while not announce.exists():
            time.sleep(0.1)
        try:
            timings = {"warm": [], "cold": []}
            for _ in range(5):
                for query in QUERIES:
                    for kind, env in (("warm", {}), ("cold", {"KENNING_NO_SERVER": "1"})):
                        started = time.perf_counter()
                        subprocess.run(
                            [*ENTRY, "search", query, "-n", "5"],
                            cwd=work,
                            check=True,
                            stdout=subprocess.DEVNULL,
                            env={**os.environ, **env},
                        )
                        timings[kind].append(time.perf_counter() - started)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait()
        status = json.loads(
            subprocess.run([*ENTRY, "status", "--json"], cwd=work, capture_output=True, text=True).stdout
        )
        warm, cold = statistics.median(timings["warm"]), statistics.median(timings["cold"])
        mode = "hybrid" if status["embedder"] else "lexical"
        print(
            f"{status['chunks']} chunks, {mode}; `kenning search` as a new process, median of "
            f"{len(timings['warm'])}: warm server {warm * 1000:.0f} ms, no server {cold * 1000:.0f} ms "
            f"({cold / warm:.1f}x)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
