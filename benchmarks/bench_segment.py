"""A segment's work in an analysis worker (`SegmentWork.run`: tokens to terms, grouping, spilling the
columns), with the compiled term table against the same table in Python, in turn in one process.

    python benchmarks/bench_segment.py [CORPUS_DIR] [--segments 4]

CORPUS_DIR holds BEIR-style part-*.jsonl shards (default: the 1M tier benchmarks/scale.py writes,
$TMPDIR/kenning-scale/chunks-1000000/corpus). Each segment is 20,000 chunks, as in an index build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from kenning.analysis.analyzer import Analyzer
from kenning.indexing import segments, term_table
from kenning.indexing.analysis import SegmentWork
from kenning.indexing.tuning import WriterTuning

BATCH, FLUSH_CHUNKS = WriterTuning.batch, WriterTuning.flush_chunks  # the writer's defaults

DEFAULT = Path(os.environ.get("TMPDIR", "/tmp")) / "kenning-scale" / "chunks-1000000" / "corpus"


def read_chunks(corpus: Path, wanted: int) -> list[tuple]:
    chunks = []
    for shard in sorted(corpus.glob("part-*.jsonl")):
        with shard.open(encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                chunks.append((len(chunks) + 1, doc.get("title") or "", doc["text"], None))
                if len(chunks) == wanted:
                    return chunks
    return chunks


def build(analyzer: Analyzer, chunks: list[tuple], table) -> float:
    """Seconds to make one segment of `chunks` with the given term table class."""
    segments.TermTable = table
    work = SegmentWork(analyzer, None)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        for i in range(0, len(chunks), BATCH):
            work.run(chunks[i : i + BATCH], i + BATCH >= len(chunks), os.path.join(folder, "segment.spill"))
        return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--segments", type=int, default=4)
    args = ap.parse_args()
    if not term_table.NATIVE:
        raise SystemExit("kenning.indexing._term_table is not compiled here: nothing to compare")
    chunks = read_chunks(args.corpus, FLUSH_CHUNKS * args.segments)
    parts = [chunks[i : i + FLUSH_CHUNKS] for i in range(0, len(chunks), FLUSH_CHUNKS)]
    times = {"compiled": [], "python": []}
    tables = {"compiled": term_table.TermTable, "python": term_table.PythonTermTable}
    analyzer = {name: Analyzer() for name in tables}  # each keeps its own plain words' terms
    for part in parts:
        for name, table in tables.items():
            times[name].append(build(analyzer[name], part, table))
    segments.TermTable = term_table.TermTable
    print(f"{len(parts)} segments of {FLUSH_CHUNKS:,} chunks from {args.corpus}")
    for name, seconds in times.items():
        shown = " ".join(f"{s:.2f}" for s in seconds)
        print(f"  {name:8} term table: {shown} s (median {statistics.median(seconds):.2f})")


if __name__ == "__main__":
    main()
