"""A run's segments in files until the run ends, then into the store once.

A write is one transaction, so the segments a large run makes are never seen before its end, and
its end merges them into one. Inserting every segment's rows into the store and reading them back
for that merge cost a 1M-chunk build about half its time: the rows crossed the pipe from the worker
that made them, were inserted row by row, read back by term range, sent to a worker again and
inserted once more. Now the worker that makes a segment writes its rows to a file of its own
(sequential writes), the workers read their term ranges of the files for the merge themselves, and
the store takes each row once, merged.

A spill file is a sequence of frames, each the pickle of the next rows in term order (with their
digests) after its length in 8 bytes; a frame ends at SPILL_MARK_BYTES of merge memory (the rows'
bytes and their Python objects, as kenning.store.records.ROW_MEMORY_BYTES counts them). Each frame's
mark (its last term, its memory, where it ends) gives the term ranges to cut merges by and the file
offsets to read each range from. The files are private to the run that writes them (a folder only
it can open) and never read by another, so pickle's speed is safe here: it writes a segment in half
the time of a row-by-row format.

The files live in a private folder beside the index (`SpillFolder`), removed when the run ends; a
run that was killed leaves one behind, which the next write removes.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kenning.store.records import ROW_MEMORY_BYTES

SPILL_MARK_BYTES = 16 << 10  # merge memory between marks: a range reads at most two marks' worth more
SPILL_PREFIX = ".kenning-spill-"


@dataclass
class SpilledSegment:
    """One segment of the run, its rows in a spill file."""

    path: str
    doc_ids: np.ndarray
    title_lens: np.ndarray
    body_lens: np.ndarray
    marks: list[tuple[str, int, int]]  # (last term, merge memory, file offset after it) of each frame
    rows: int
    digested: bool  # the rows were spilled with their digests (else a merge makes them)


@dataclass
class SpillRange:
    """One term range of a merge of spilled segments: [low, high) (None: open) and, for each segment
    in order, the bytes of its file that hold the range (and a little around it)."""

    low: str | None
    high: str | None
    pieces: list[tuple[str, int, int]]  # (path, start, end)

    def parts(self) -> list[list[tuple]]:
        """Each segment's rows of the range as the store hands them out (`raw_postings`)."""
        return [
            [row for row, _ in read_rows(path, start, end, self.low, self.high)]
            for path, start, end in self.pieces
        ]


def write_spill(path: str, rows: list[tuple[tuple, bytes]]) -> tuple[list[tuple[str, int, int]], int]:
    """Write encoded (row, digest) pairs, terms ascending, as frames of about SPILL_MARK_BYTES of
    merge memory; returns the marks (one a frame) and the row count."""
    sizes = [len(r[1]) + len(r[2]) + len(r[3]) + len(r[4]) + len(r[5]) + ROW_MEMORY_BYTES for r, _ in rows]
    marks: list[tuple[str, int, int]] = []
    offset = start = held = 0
    with open(path, "wb") as out:
        for end, size in enumerate(sizes, 1):
            held += size
            if held >= SPILL_MARK_BYTES or end == len(sizes):
                frame = pickle.dumps(rows[start:end], pickle.HIGHEST_PROTOCOL)
                out.write(len(frame).to_bytes(8, "little"))
                out.write(frame)
                offset += 8 + len(frame)
                marks.append((rows[end - 1][0][0], held, offset))
                start, held = end, 0
    return marks, len(rows)


def read_rows(
    path: str, start: int = 0, end: int | None = None, low: str | None = None, high: str | None = None
) -> Iterator[tuple[tuple, bytes]]:
    """The (row, digest) pairs in the frames at bytes [start, end) of a spill file whose term is in
    [low, high)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(end - start)
    at = 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 8], "little")
        frame = pickle.loads(data[at + 8 : at + 8 + size])
        at += 8 + size
        for pair in frame:
            term = pair[0][0]
            if high is not None and term >= high:
                return
            if low is None or term >= low:
                yield pair


def spill_ranges(spills: list[SpilledSegment], budget: int) -> list[SpillRange]:
    """The term ranges of a merge of `spills`, each about `budget` bytes of merge memory over all of
    them (as kenning.store term_bounds cuts a merge of stored segments), with where to read them."""
    sizes = sorted((term, size) for spill in spills for term, size, _ in spill.marks)
    bounds: list[str] = []
    held = 0
    for term, size in sizes:
        if held and held + size > budget and (not bounds or bounds[-1] != term):
            bounds.append(term)
            held = 0
        held += size
    edges = [None, *bounds, None]
    terms = [[term for term, _, _ in spill.marks] for spill in spills]
    out = []
    for low, high in zip(edges, edges[1:], strict=False):
        pieces = []
        for spill, marked in zip(spills, terms, strict=True):
            # from the last mark before `low` (rows after it may still be below `low`: read_rows skips
            # them) to the first mark at or after `high` (rows from `high` on are read and dropped)
            before = 0 if low is None else bisect_left(marked, low)
            after = len(marked) - 1 if high is None else min(bisect_left(marked, high), len(marked) - 1)
            start = spill.marks[before - 1][2] if before else 0
            end = spill.marks[after][2] if marked else 0
            pieces.append((spill.path, start, end))
        out.append(SpillRange(low, high, pieces))
    return out


class SpillFolder:
    """A run's private folder for spill files, beside the index (or in the system's temporary
    folder for a store without one); removed when the run ends, and a killed run's on the next."""

    def __init__(self, near: str | os.PathLike | None):
        self.parent = Path(near) if near is not None else Path(tempfile.gettempdir())
        self.path: Path | None = None
        self.count = 0

    def remove_stale(self) -> None:
        """Folders a killed run left beside the index (call holding its write lock; in the shared
        temporary folder another index's run may be writing, so nothing is removed there)."""
        if self.parent == Path(tempfile.gettempdir()):
            return
        for old in self.parent.glob(SPILL_PREFIX + "*"):
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)

    def next_file(self) -> str:
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix=SPILL_PREFIX, dir=self.parent))
        self.count += 1
        return str(self.path / f"segment-{self.count:06d}.spill")

    def close(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
