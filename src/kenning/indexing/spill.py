"""A run's segments in files until the run ends, then into the store once, merged.

A write is one transaction, so the segments a large run makes are never seen before its end, and its
end merges them into one. Inserting every segment's rows into the store and reading them back for
that merge cost a 1M-chunk build about half its time: each row crossed the pipe from the worker that
made it, was inserted, read back by term range, sent to a worker again, joined and inserted once
more. Now the worker that makes a segment writes its flat columns (kenning.store.records.
SegmentColumns: every posting and position of the segment in term order) to a file of its own, the
workers read their term ranges of all the files for the merge themselves and join them with a few
array operations (`merge_columns`), and only the merged rows are encoded, once, for the store.

A spill file is a JSON header (its length in the first 8 bytes) naming where each column lies, then
the columns: the terms' UTF-8 bytes and their offsets, the postings (chunk ids, title and body term
frequencies), the positions, and each term's bounds in them. A range reads only its slices. Marks
every `mark_bytes` (WriterTuning.spill_mark_bytes) of merge memory (the postings' bytes and
ROW_MEMORY_BYTES a term, as kenning.store term_bounds counts a stored segment) give the term ranges
to cut merges by and the terms each range reads.

The files live in a private folder beside the index (`SpillFolder`), removed when the run ends; a run
that was killed leaves one behind, which the next write removes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kenning.indexing.tuning import WriterTuning
from kenning.kernels.arrays import stable_argsort
from kenning.store.records import ROW_MEMORY_BYTES, SegmentColumns, range_bounds

SPILL_PREFIX = ".kenning-spill-"
_ARRAYS = (
    "ids",
    "tf_title",
    "tf_body",
    "pos_title",
    "pos_body",
    "posting_bounds",
    "title_bounds",
    "body_bounds",
)


@dataclass
class SpilledSegment:
    """One segment of the run, its columns in a spill file."""

    path: str
    doc_ids: np.ndarray
    title_lens: np.ndarray
    body_lens: np.ndarray
    marks: list[tuple[str, int, int]]  # (last term, merge memory, terms up to here) of each run of terms


@dataclass
class SpillRange:
    """One term range of a merge of spilled segments: [low, high) (None: open) and, for each segment
    in order, the terms [first, end) of its file that hold the range (and a few around it)."""

    low: str | None
    high: str | None
    pieces: list[tuple[str, int, int]]  # (path, first, end)

    def parts(self) -> list[SegmentColumns]:
        """Each segment's columns of the range."""
        return [read_columns(path, first, end, self.low, self.high) for path, first, end in self.pieces]


def empty_columns() -> SegmentColumns:
    """The columns of a segment whose chunks hold no term (it still counts their ids and lengths)."""
    none = np.zeros(0, dtype=np.uint32)
    start = np.zeros(1, dtype=np.int64)
    return SegmentColumns(
        [], none, none.astype(np.uint16), none.astype(np.uint16), none, none, start, start, start
    )


def write_spill(
    path: str, columns: SegmentColumns, mark_bytes: int = WriterTuning.spill_mark_bytes
) -> list[tuple[str, int, int]]:
    """Write a segment's columns; returns its marks, one every `mark_bytes` of merge memory."""
    names = [term.encode("utf-8", "surrogatepass") for term in columns.terms]
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(name) for name in names], out=offsets[1:])
    arrays = {"term_bytes": np.frombuffer(b"".join(names), dtype=np.uint8), "term_offsets": offsets}
    arrays.update((name, getattr(columns, name)) for name in _ARRAYS)
    header, at = {}, 0
    for name, array in arrays.items():
        header[name] = [at, len(array), array.dtype.str]
        at += array.nbytes
    head = json.dumps(header).encode()
    with open(path, "wb") as out:
        out.write(len(head).to_bytes(8, "little"))
        out.write(head)
        for array in arrays.values():
            out.write(np.ascontiguousarray(array).data)
    return _marks(columns, mark_bytes)


def _marks(columns: SegmentColumns, mark_bytes: int) -> list[tuple[str, int, int]]:
    """(last term, merge memory, terms so far) of each run of terms holding `mark_bytes` or more."""
    sizes = (
        np.diff(columns.posting_bounds) * 8  # chunk id and two frequencies, as stored at their widest
        + (np.diff(columns.title_bounds) + np.diff(columns.body_bounds)) * 4
        + ROW_MEMORY_BYTES
    )
    total = np.cumsum(sizes)
    if not len(total):
        return []
    ends = np.unique(np.searchsorted(total, np.arange(mark_bytes, int(total[-1]), mark_bytes)) + 1)
    ends = np.append(ends[ends < len(total)], len(total))
    held = np.diff(np.concatenate(([0], total[ends - 1])))
    return [
        (columns.terms[end - 1], int(size), int(end))
        for end, size in zip(ends.tolist(), held.tolist(), strict=True)
    ]


def read_columns(path: str, first: int = 0, end: int | None = None, low=None, high=None) -> SegmentColumns:
    """The columns of terms [first, end) of a spill file whose term is in [low, high) (None: open)."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        base = 8 + size

        def read(name: str, start: int, stop: int) -> np.ndarray:
            at, _, dtype = header[name]
            dtype = np.dtype(dtype)
            f.seek(base + at + start * dtype.itemsize)
            return np.frombuffer(f.read((stop - start) * dtype.itemsize), dtype=dtype)

        end = header["term_offsets"][1] - 1 if end is None else end
        offsets = read("term_offsets", first, end + 1)
        blob = read("term_bytes", int(offsets[0]), int(offsets[-1])).tobytes()
        starts = (offsets - offsets[0]).tolist()
        terms = [blob[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, starts[1:], strict=False)]
        lo = 0 if low is None else bisect_left(terms, low)
        hi = len(terms) if high is None else bisect_left(terms, high)
        first, end, terms = first + lo, first + hi, terms[lo:hi]
        bounds = {
            name: read(name, first, end + 1) for name in ("posting_bounds", "title_bounds", "body_bounds")
        }
        p, t, b = (bounds[name] for name in ("posting_bounds", "title_bounds", "body_bounds"))
        return SegmentColumns(
            terms,
            read("ids", int(p[0]), int(p[-1])),
            read("tf_title", int(p[0]), int(p[-1])),
            read("tf_body", int(p[0]), int(p[-1])),
            read("pos_title", int(t[0]), int(t[-1])),
            read("pos_body", int(b[0]), int(b[-1])),
            p - p[0],
            t - t[0],
            b - b[0],
        )


def merge_columns(parts: list[SegmentColumns], dead: np.ndarray) -> SegmentColumns:
    """Segments' columns (in chunk-id order) joined into one segment's, without the `dead` chunks
    (sorted): each term's postings and positions in segment order, as one segment holding all their
    chunks would have them. Each segment's run of a term is a block; the blocks are ordered by term,
    then by segment (one sort over blocks, not over postings), and each column is gathered once."""
    if not parts:
        return empty_columns()
    terms = sorted(set().union(*(part.terms for part in parts)))
    index = {term: n for n, term in enumerate(terms)}
    keys = np.concatenate(
        [np.fromiter((index[t] for t in part.terms), np.int64, len(part.terms)) for part in parts]
    )
    by_term = stable_argsort(keys)

    def gather(bounds: str, names: tuple[str, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The merged term bounds over one kind of column, and those columns gathered."""
        base = np.cumsum([0] + [len(getattr(part, names[0])) for part in parts[:-1]])
        starts = np.concatenate(
            [at + getattr(part, bounds)[:-1] for at, part in zip(base, parts, strict=True)]
        )
        lengths = np.concatenate([np.diff(getattr(part, bounds)) for part in parts])
        per_term = np.bincount(keys, weights=lengths, minlength=len(terms)).astype(np.int64)
        starts, lengths = starts[by_term], lengths[by_term]
        take = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        merged = [np.concatenate([getattr(part, name) for part in parts])[take] for name in names]
        return np.concatenate(([0], np.cumsum(per_term))), merged

    posting_bounds, (ids, tf_title, tf_body) = gather("posting_bounds", ("ids", "tf_title", "tf_body"))
    title_bounds, (pos_title,) = gather("title_bounds", ("pos_title",))
    body_bounds, (pos_body,) = gather("body_bounds", ("pos_body",))
    if len(dead):
        kept = ~np.isin(ids, dead)
        if not kept.all():
            title_kept = np.repeat(kept, tf_title.astype(np.int64))
            body_kept = np.repeat(kept, tf_body.astype(np.int64))
            posting_bounds = _kept_bounds(posting_bounds, kept)
            title_bounds, body_bounds = (
                _kept_bounds(title_bounds, title_kept),
                _kept_bounds(body_bounds, body_kept),
            )
            ids, tf_title, tf_body = ids[kept], tf_title[kept], tf_body[kept]
            pos_title, pos_body = pos_title[title_kept], pos_body[body_kept]
            present = np.diff(posting_bounds) > 0  # a term whose every posting was deleted goes
            terms = [term for term, here in zip(terms, present.tolist(), strict=True) if here]
            posting_bounds, title_bounds, body_bounds = (
                np.concatenate((b[:1], b[1:][present])) for b in (posting_bounds, title_bounds, body_bounds)
            )
    return SegmentColumns(
        terms, ids, tf_title, tf_body, pos_title, pos_body, posting_bounds, title_bounds, body_bounds
    )


def _kept_bounds(bounds: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Bounds over a column after keeping only its `kept` entries."""
    return np.concatenate(([0], np.cumsum(kept, dtype=np.int64)))[bounds]


def spill_ranges(spills: list[SpilledSegment], budget: int) -> list[SpillRange]:
    """The term ranges of a merge of `spills`, each about `budget` bytes of merge memory over all of
    them (as kenning.store term_bounds cuts a merge of stored segments), with the terms to read."""
    sizes = sorted((term, size) for spill in spills for term, size, _ in spill.marks)
    edges = [None, *range_bounds(sizes, budget), None]
    marked = [[term for term, _, _ in spill.marks] for spill in spills]
    out = []
    for low, high in zip(edges, edges[1:], strict=False):
        pieces = []
        for spill, terms in zip(spills, marked, strict=True):
            if not terms:
                continue
            # from the last mark before `low` (terms after it may still be below `low`: read_columns
            # leaves them) to the first mark at or after `high` (and the terms from `high` on)
            before = 0 if low is None else bisect_left(terms, low)
            after = len(terms) - 1 if high is None else min(bisect_left(terms, high), len(terms) - 1)
            first = spill.marks[before - 1][2] if before else 0
            pieces.append((spill.path, first, spill.marks[after][2]))
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
