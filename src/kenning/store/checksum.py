"""Segment checksums: a digest of everything one immutable segment holds, written at commit and
recomputed by `kenning verify`.

SQLite checks its own page structure, not the bytes inside a row, so a flipped bit in a postings
list would otherwise be read back as a different ranking. The digest covers the segment's chunk ids
and field lengths and every posting row (term, ids, term frequencies, positions), taken in term
order so any store can compute it the same way from what it hands out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

_DTYPES = (np.uint32, np.uint16, np.uint16, np.uint32, np.uint32)  # ids, tf_title, tf_body, positions


def posting_digest(term: str, ids, tf_title, tf_body, pos_title, pos_body) -> bytes:
    """The digest of one posting row, arrays as the store keeps them."""
    columns = []
    for array, dtype in zip((ids, tf_title, tf_body, pos_title, pos_body), _DTYPES, strict=True):
        data = np.ascontiguousarray(array, dtype=dtype)
        columns.append((len(data), data.tobytes()))
    return digest_of_columns(term, columns)


def digest_of_columns(term: str, columns) -> bytes:
    """`posting_digest` from each column's (count, bytes), the bytes little-endian in the widths of
    `_DTYPES`: an encoder that has those bytes already digests without converting again."""
    parts = [term.encode("utf-8", "surrogatepass")]
    for count, data in columns:
        parts += (count.to_bytes(8, "little"), data)
    return hashlib.blake2b(b"".join(parts), digest_size=16).digest()  # one call: a segment has ~150k rows


def segment_checksum(doc_ids, title_lens, body_lens, posting_digests: Iterable[tuple[str, bytes]]) -> str:
    """The checksum of a segment from its columns and its rows' (term, posting_digest) pairs."""
    h = _columns_hash(doc_ids, title_lens, body_lens)
    h.update(digest_lines(sorted(posting_digests)))  # one update of the rows joined, not ~100k calls
    return h.hexdigest()


def digest_lines(pairs: Iterable[tuple[str, bytes]]) -> bytes:
    """(term, digest) pairs as the checksum hashes them, in the order given."""
    return b"".join([term.encode("utf-8", "surrogatepass") + b"\x00" + digest for term, digest in pairs])


class SegmentDigests:
    """The checksum of a segment being written, hashed as its rows come: one row at a time, or a run
    of rows whose lines (`digest_lines`) were joined elsewhere (a worker's term range). Nothing of a
    row is kept once hashed: building a (term, digest) pair a row to sort at the end cost ~0.2 s of
    a 1% re-index at 1M chunks, and a million-chunk segment's pairs hundreds of MB. Rows must come
    in term order; when one does not, `checksum()` is None and the writer computes the checksum
    from the rows it stored (`segment_checksum`)."""

    FLUSH_ROWS = 4096  # single rows' lines hashed together

    def __init__(self, doc_ids, title_lens, body_lens):
        self.hash = _columns_hash(doc_ids, title_lens, body_lens)
        self.pending: list[bytes] = []
        self.last: str | None = None
        self.ordered = True

    def add(self, term: str, digest: bytes) -> None:
        self._follows(term, term)
        self.pending.append(term.encode("utf-8", "surrogatepass") + b"\x00" + digest)
        if len(self.pending) >= self.FLUSH_ROWS:
            self._flush()

    def add_run(self, first: str, last: str, lines: bytes) -> None:
        """A run of rows, terms ascending from `first` to `last`, as `digest_lines` joins them."""
        self._follows(first, last)
        self._flush()
        self.hash.update(lines)

    def checksum(self) -> str | None:
        """The segment's checksum, or None when its rows came out of term order."""
        if not self.ordered:
            return None
        self._flush()
        return self.hash.hexdigest()

    def _follows(self, first: str, last: str) -> None:
        if self.last is not None and first <= self.last:
            self.ordered = False
        self.last = last

    def _flush(self) -> None:
        if self.pending:
            self.hash.update(b"".join(self.pending))
            self.pending = []


def _columns_hash(doc_ids, title_lens, body_lens):
    h = hashlib.blake2b(digest_size=16)
    for array, dtype in ((doc_ids, np.uint32), (title_lens, np.uint16), (body_lens, np.uint16)):
        data = np.ascontiguousarray(array, dtype=dtype)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data.tobytes())
    return h
