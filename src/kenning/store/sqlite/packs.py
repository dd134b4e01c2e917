"""Posting packs: a segment's short posting rows kept many to a row of the `posting_packs` table.

SQLite spends about 4-5 us inserting a row whatever it holds, and a small segment is mostly rare
words a few bytes long: the 10k-chunk segment a 1% re-index writes at the scale benchmark's 1M tier
has 103k terms, 98k of them under 40 bytes of postings, and inserting them was a third of the
re-index. Rows of at most PACK_ROW_BYTES go, in term order, into packs of up to PACK_ROWS rows or
about PACK_BYTES; longer rows stay one to a row of `postings`. A term of a segment lives in exactly
one of the two. Packs are kept small because a query's rare word reads and parses one whole.

A pack holds a run of terms (its first one keys it, with its last beside it) and no other pack of its
segment overlaps that run, so the pack that may hold a term is the one with the greatest first term
not after it. Rows of a run that came out of term order stay in `postings` (`PackWriter.take`).

Layout of a pack (little-endian): the number of rows n and the byte length of the terms (two
uint32), the terms as UTF-8 joined by NUL (a term holding a NUL is never packed), n x 5 uint16 lengths
(ids, title and body frequencies, title and body positions: each row's columns as
kenning.store.compact encodes them), then the columns, row after row.
"""

from __future__ import annotations

import bisect
import struct
from itertools import accumulate
from typing import NamedTuple

import numpy as np

from kenning import kernels
from kenning.store.checksum import digest_lines
from kenning.store.errors import IndexDamaged
from kenning.store.records import ROW_MEMORY_BYTES

PACK_ROW_BYTES = 256  # a row's stored bytes up to which it is packed (so each length fits two bytes)
PACK_ROWS = 128  # a pack is closed at this many rows
PACK_BYTES = 4096  # or once its columns reach this many bytes


_HEAD = struct.Struct("<II")


def row_bytes(row: tuple) -> int:
    """A row's stored bytes (its five columns; `row` = (term, ids, tft, tfb, pos_title, pos_body))."""
    return len(row[1]) + len(row[2]) + len(row[3]) + len(row[4]) + len(row[5])


def encode_pack(rows: list[tuple]) -> bytes:
    """Rows (terms ascending, none holding a NUL) as one pack."""
    terms = "\0".join([row[0] for row in rows]).encode("utf-8")
    columns = [column for row in rows for column in row[1:]]
    # lengths counted by map, at C speed: a list of lengths made for each row was half the time of
    # packing a range
    lengths = np.fromiter(map(len, columns), dtype="<u2", count=len(columns))
    return b"".join([_HEAD.pack(len(rows), len(terms)), terms, lengths.tobytes(), *columns])


class Pack:
    """A decoded pack: its terms, and each row's columns as slices of the stored bytes (found from
    the lengths when a row is asked for: a query reads one row of a pack)."""

    def __init__(self, blob: bytes):
        if not isinstance(blob, bytes | bytearray | memoryview):
            raise IndexDamaged(f"a posting pack is a {type(blob).__name__}")
        try:
            n, terms_len = _HEAD.unpack_from(blob, 0)
            start = _HEAD.size
            self.terms = bytes(blob[start : start + terms_len]).decode("utf-8").split("\0") if n else []
            start += terms_len
            self.lengths = np.frombuffer(blob, dtype="<u2", count=5 * n, offset=start)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise IndexDamaged(f"a posting pack: {exc}") from exc
        self.blob = blob
        self.data = start + 10 * n  # where the columns start
        if len(self.terms) != n or self.data + int(self.lengths.sum(dtype=np.int64)) != len(blob):
            raise IndexDamaged("a posting pack's lengths do not match its bytes")

    def find(self, term: str) -> tuple | None:
        """The row of `term` (None when the pack does not hold it)."""
        at = bisect.bisect_left(self.terms, term)
        if at == len(self.terms) or self.terms[at] != term:
            return None
        return self.row(at)

    def row(self, at: int) -> tuple:
        i, blob = 5 * at, self.blob
        b = list(accumulate(self.lengths[i : i + 5].tolist(), initial=self.column_start(at)))
        return (
            self.terms[at],
            bytes(blob[b[0] : b[1]]),
            bytes(blob[b[1] : b[2]]),
            bytes(blob[b[2] : b[3]]),
            bytes(blob[b[3] : b[4]]),
            bytes(blob[b[4] : b[5]]),
        )

    def rows(self, low: str | None = None, high: str | None = None) -> list[tuple]:
        """Its rows of terms in [low, high) (None: open), terms ascending."""
        first = 0 if low is None else bisect.bisect_left(self.terms, low)
        last = len(self.terms) if high is None else bisect.bisect_left(self.terms, high)
        if first >= last:
            return []
        # every column of the run cut in one flat pass, then dealt out five to a row: a generator of
        # five slices a row was half of merging two 10k-chunk segments at the 1M tier
        ends = list(accumulate(self.lengths[5 * first : 5 * last].tolist(), initial=self.column_start(first)))
        blob = self.blob
        if not isinstance(blob, bytes):
            blob = bytes(blob)
        columns = [blob[start:end] for start, end in zip(ends, ends[1:], strict=False)]
        return list(zip(self.terms[first:last], *(columns[i::5] for i in range(5)), strict=True))

    def column_start(self, at: int) -> int:
        """Where row `at`'s first column starts in the stored bytes."""
        return self.data + int(self.lengths[: 5 * at].sum(dtype=np.int64))


class PackWriter:
    """Packs a segment's short rows as they come; what it does not take goes to `postings`. Each
    pack keeps the bytes its rows hold in a merge (their stored bytes and ROW_MEMORY_BYTES a row)."""

    def __init__(self):
        self.packs: list[Packed] = []
        self.rows: list[tuple] = []
        self.size = 0
        self.last: str | None = None  # the last term packed (a pack's run never goes back)

    def take(self, row: tuple) -> bool:
        """Pack `row` if it is short and comes after every row packed so far (False: store it as a
        row of its own)."""
        term = row[0]
        size = row_bytes(row)
        if size > PACK_ROW_BYTES or "\0" in term or (self.last is not None and term <= self.last):
            return False
        self.rows.append(row)
        self.last, self.size = term, self.size + size
        if self.size >= PACK_BYTES or len(self.rows) >= PACK_ROWS:
            self.close()
        return True

    def take_pack(self, packed: Packed) -> bool:
        """Keep a pack made elsewhere (a worker's, `pack_range`) if its run comes after every row
        packed so far (False: store its rows as rows)."""
        if self.last is not None and packed.first <= self.last:
            return False
        self.close()
        self.packs.append(packed)
        self.last = packed.last
        return True

    def close(self) -> Packed | None:
        """Close the pack in the making (None when it holds nothing)."""
        if not self.rows:
            return None
        held = self.size + len(self.rows) * ROW_MEMORY_BYTES
        packed = Packed(self.rows[0][0], self.rows[-1][0], encode_pack(self.rows), held)
        self.packs.append(packed)
        self.rows, self.size = [], 0
        return packed

    def done(self) -> list[Packed]:
        """Every pack."""
        self.close()
        return self.packs


class Packed(NamedTuple):
    """A pack and what the writer keeps of it besides: its first and last terms and the bytes its
    rows hold in a merge."""

    first: str
    last: str
    blob: bytes
    held: int


class PackedPart(NamedTuple):
    """A stored segment's rows of a term range [low, high) (None: open) as a merge hands them to a
    worker: its rows of their own, and the packs that may hold rows of the range, not yet opened.
    Opened in the writer and pickled row by row, the packs of a merge of three 10k-chunk segments
    at the 1M tier cost the writer ~0.5 s (cProfile) of a 1.3 s merge."""

    loose: list[tuple]
    packs: list[bytes]
    low: str | None
    high: str | None

    def expand(self) -> list[tuple]:
        """Every row of the range, terms ascending (SqlitePostings.raw_postings)."""
        packed = [row for blob in self.packs for row in Pack(blob).rows(self.low, self.high)]
        if not packed:
            return self.loose
        return sorted(self.loose + packed, key=lambda row: row[0])


class PackedRange(NamedTuple):
    """A term range of a new segment's encoded rows as a worker hands it to the writer
    (`pack_range`): its long rows, its short rows already packed, and the marks a
    merge cuts ranges by ((term, bytes held) in term order: a row, or a pack at its last term), and
    every row's line of the segment checksum (kenning.store.checksum.digest_lines), in term order
    from `first` to `last`. Packed in the worker, the writer neither packs nor unpickles the short
    rows one by one, nor makes a (term, digest) pair of each for the checksum."""

    rows: list[tuple]
    packs: list[Packed]
    marks: list[tuple[str, int]]
    first: str | None = None
    last: str | None = None
    lines: bytes = b""


def pack_range(encoded: list[tuple[tuple, bytes]]) -> PackedRange:
    """A merged range's (row, digest) pairs, terms ascending, as a PackedRange. The loop runs in C
    (kenning.kernels.pack_rows) where it is built: row by row here it took 0.10-0.16 s of the land
    of a 1% re-index at 1M chunks (103k rows), ~0.02 s there; `pack_range_python` is the same here."""
    if not isinstance(encoded, list):
        encoded = list(encoded)
    made = kernels.pack_rows(encoded, Packed, PACK_ROW_BYTES, PACK_ROWS, PACK_BYTES, ROW_MEMORY_BYTES)
    if made is None:
        return pack_range_python(encoded)
    rows, packs, marks, lines = made
    if not encoded:
        return PackedRange(rows, packs, marks)
    if lines is not None:  # terms strictly ascending: the order segment_checksum sorts them in
        return PackedRange(rows, packs, marks, encoded[0][0][0], encoded[-1][0][0], lines)
    pairs = sorted([(row[0], digest) for row, digest in encoded])
    return PackedRange(rows, packs, marks, pairs[0][0], pairs[-1][0], digest_lines(pairs))


def pack_range_python(encoded: list[tuple[tuple, bytes]]) -> PackedRange:
    """`pack_range` row by row (where the C module is not built; tests/lexical/test_kernels.py holds the two
    equal)."""
    writer, rows, marks = PackWriter(), [], []
    for row, _ in encoded:
        packs_before = len(writer.packs)
        if not writer.take(row):
            rows.append(row)
            marks.append((row[0], row_bytes(row) + ROW_MEMORY_BYTES))
        elif len(writer.packs) > packs_before:  # this row closed a pack: marked at its last term
            marks.append((writer.packs[-1].last, writer.packs[-1].held))
    last = writer.close()
    if last is not None:
        marks.append((last.last, last.held))
    if not encoded:
        return PackedRange(rows, writer.packs, marks)
    # sorted as segment_checksum sorts (a range comes in term order: one pass that changes nothing)
    pairs = sorted([(row[0], digest) for row, digest in encoded])
    return PackedRange(rows, writer.packs, marks, pairs[0][0], pairs[-1][0], digest_lines(pairs))
