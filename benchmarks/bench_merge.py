"""Segment merging: how often each chunk is rewritten over many small commits (write amplification).

Indexes N one-file commits into a fresh index and counts the chunks every segment write holds
(flushes and merges alike), by wrapping `SqliteStore.write_encoded_segment`. Prints chunks written per chunk
indexed, the segments left, and the time taken.

    python benchmarks/bench_merge.py [--commits N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kenning import Index
from kenning.store.sqlite import SqliteStore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=400, help="one-file commits (400)")
    args = parser.parse_args(argv)
    written = [0]
    original = SqliteStore.write_encoded_segment

    def counting(self, doc_ids, *rest):
        written[0] += len(doc_ids)
        return original(self, doc_ids, *rest)

    SqliteStore.write_encoded_segment = counting
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "notes"
            root.mkdir()
            started = time.perf_counter()
            with Index(Path(tmp) / "ix") as index:
                for i in range(args.commits):
                    note = root / f"n{i}.md"
                    note.write_text(f"# Note {i}\n\nword{i} shared text\n")
                    index.add([note])
                segments = index.status()["segments"]
            seconds = time.perf_counter() - started
    finally:
        SqliteStore.write_encoded_segment = original
    if written[0] < args.commits:  # every commit writes its own chunk's segment at least
        raise SystemExit(
            f"counted {written[0]} chunks written for {args.commits} commits: the segment writes were "
            "not seen (SqliteStore.write_encoded_segment is no longer how segments are written?)"
        )
    print(
        f"{args.commits} commits: {written[0]} chunks written, "
        f"{written[0] / args.commits:.1f} per chunk indexed; {segments} segments; {seconds:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
