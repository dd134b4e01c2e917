"""Immutable postings segments and the spelling vocabulary in SQLite.

Each commit that adds chunks writes a new segment; deleting a chunk only removes it from the `live`
bitmap. Because a segment never changes, readers cache its postings by segment id without ever
invalidating them. Positions are stored per field and read only for phrase queries. A term's row is
in `postings`, or, when it is short, in one of the segment's posting packs (kenning.store.sqlite.packs).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np

from kenning.store.checksum import SegmentDigests, posting_digest, segment_checksum
from kenning.store.compact import (
    ID_HEAD_BYTES,
    id_count,
    pack_doc_ids,
    unpack_frequencies,
    unpack_ids,
    unpack_positions,
)
from kenning.store.errors import decoding
from kenning.store.field_lengths import pack_lengths
from kenning.store.records import ROW_MEMORY_BYTES, RawPostings, range_bounds
from kenning.store.sql import SqlPostings
from kenning.store.sql.dialect import batches, marks
from kenning.store.sqlite.packs import (
    Pack,
    PackedPart,
    PackedRange,
    PackWriter,
    encode_pack,
    pack_range,
    row_bytes,
)

# a row with a column of this many bytes or more is read through incremental blob I/O (load_postings).
# Rows of the 1M tier read in a new process, select against blob I/O: ids of 4-8 KB 23-31 / 27-43 us,
# 16-20 KB 48-83 / 52-75 us, 64-80 KB 156-210 / 84-108 us, 200-260 KB 422-569 / 183-218 us; a
# query's two commonest words (1.5 MB) 3.2-5.3 against 2.1 ms, with a third fewer new pages
BLOB_READ_FROM = 32 << 10
# whether a row's longest column (its ids packed, or a byte or two a posting of frequencies) is that long
_LONG = "max(length(ids), length(tf_title), length(tf_body)) >= ?"

# while writing a segment, its term at every this many stored bytes is kept in memory, for
# `term_bounds` to cut a later merge of segments this process wrote without reading their rows again
TERM_MARK_BYTES = 64 << 10


class SqlitePostings(SqlPostings):
    """The Postings protocol over the `segments`, `postings`, `posting_packs` and `vocabulary` tables."""

    @property
    def _term_marks(self) -> dict[int, list[tuple[str, int]]]:
        """Segment id -> (term, the merge memory of the rows from the previous mark up to and
        including this term's row, as term_bounds counts it) for the segments this process wrote;
        the last mark closes the segment. Only a guide to cutting merges into ranges: any cut merges
        correctly, so it never has to be exact."""
        found = self.__dict__.get("_marks_by_segment")
        if found is None:
            found = self.__dict__["_marks_by_segment"] = {}
        return found

    @decoding("a posting row")
    def load_postings(self, segment_id: int, terms: Sequence[str]) -> dict[str, RawPostings]:
        """A long row's columns are read through incremental blob I/O, straight from the pages into
        Python's bytes: a selected blob longer than a page is first copied whole into SQLite's own
        buffer, and then again into bytes."""
        rows = []
        blob_from = BLOB_READ_FROM if self._postings_have_rowids else 1 << 62  # (never: select them all)
        for batch in batches(list(terms)):
            rows += self.conn.execute(
                "SELECT term, " + ("rowid" if self._postings_have_rowids else "NULL") + f", {_LONG},"
                f" CASE WHEN {_LONG} THEN NULL ELSE ids END,"
                f" CASE WHEN {_LONG} THEN NULL ELSE tf_title END,"
                f" CASE WHEN {_LONG} THEN NULL ELSE tf_body END FROM postings"
                f" WHERE segment_id=? AND term IN ({marks(len(batch))})",
                (*[blob_from] * 4, segment_id, *batch),
            ).fetchall()
        rows = [
            (term, *self._blobs(rowid)) if long else (term, ids, tft, tfb)
            for term, rowid, long, ids, tft, tfb in rows
        ]
        found = {row[0] for row in rows}
        rows += [row[:4] for row in self._packed_rows(segment_id, [t for t in terms if t not in found])]
        out = {}
        for term, ids, tft, tfb in rows:
            ids = unpack_ids(ids, (tft, tfb))
            n = len(ids)
            out[term] = RawPostings(ids, unpack_frequencies(tft, n), unpack_frequencies(tfb, n))
        return out

    @property
    def _postings_have_rowids(self) -> bool:
        """Whether `postings` is a rowid table, as incremental blob I/O needs (indexes written before it
        was hold a WITHOUT ROWID one, which stays)."""
        found = self.__dict__.get("_rowids")
        if found is None:
            sql = self.conn.execute("SELECT sql FROM sqlite_master WHERE name='postings'").fetchone()
            if sql is None:  # (no table yet: asked again once there is one)
                return False
            found = self.__dict__["_rowids"] = "WITHOUT ROWID" not in sql[0].upper()
        return found

    def _blobs(self, rowid: int) -> tuple[bytes, bytes, bytes]:
        """A `postings` row's ids and term frequencies, each read through incremental blob I/O."""
        out = []
        for column in ("ids", "tf_title", "tf_body"):
            with self.conn.blobopen("postings", column, rowid, readonly=True) as blob:
                out.append(blob.read())
        return out[0], out[1], out[2]

    def posting_counts(self, segment_ids: Sequence[int], terms: Sequence[str]) -> dict[str, int]:
        """Each of `terms` with its number of postings summed over the segments, deleted chunks'
        included, from the length and first bytes of its rows' ids (kenning.store.compact.id_count):
        no postings read (the 70 commonest terms' rows at 1M chunks are 91 MB, their sizes 0.7 ms)."""
        out = dict.fromkeys(terms, 0)
        for segment_id in segment_ids:
            found: dict[str, int] = {}
            for batch in batches(list(terms)):
                for term, length, head in self.conn.execute(
                    f"SELECT term, length(ids), substr(ids, 1, {ID_HEAD_BYTES}) FROM postings"
                    f" WHERE segment_id=? AND term IN ({marks(len(batch))})",
                    (segment_id, *batch),
                ):
                    found[term] = id_count(head, length)
            for row in self._packed_rows(segment_id, [t for t in terms if t not in found]):
                found[row[0]] = id_count(row[1])
            for term, n in found.items():
                out[term] += n
        return out

    def _packed_rows(self, segment_id: int, terms: Sequence[str]) -> list[tuple]:
        """The stored rows of those of `terms` the segment's packs hold (the rest are in no pack)."""
        out, packs = [], {}
        for term in sorted(set(terms)):
            found = self.conn.execute(
                "SELECT first_term, data FROM posting_packs WHERE segment_id=? AND first_term<=?"
                " ORDER BY first_term DESC LIMIT 1",
                (segment_id, term),
            ).fetchone()
            if found is None:
                continue
            if found[0] not in packs:
                packs[found[0]] = Pack(found[1])
            row = packs[found[0]].find(term)
            if row is not None:
                out.append(row)
        return out

    def load_postings_of(self, wanted: dict[int, Sequence[str]]) -> dict[int, dict[str, RawPostings]]:
        """Several segments' postings (a local file: one segment after the other)."""
        return {seg: self.load_postings(seg, terms) for seg, terms in wanted.items()}

    def raw_postings(self, segment_id: int, low: str | None = None, high: str | None = None) -> list[tuple]:
        return self.raw_posting_part(segment_id, low, high).expand()

    def raw_posting_part(
        self, segment_id: int, low: str | None = None, high: str | None = None
    ) -> PackedPart:
        """`raw_postings` with its packs not yet opened (a merge worker opens them)."""
        where, args = "segment_id=?", [segment_id]
        if low is not None:
            where, args = where + " AND term >= ?", [*args, low]
        if high is not None:
            where, args = where + " AND term < ?", [*args, high]
        rows = self.conn.execute(
            "SELECT term, ids, tf_title, tf_body, pos_title, pos_body FROM postings"
            f" WHERE {where} ORDER BY term",
            args,
        ).fetchall()
        # the packs from the one that may hold `low` up to those starting before `high`
        where, args = "segment_id=?", [segment_id]
        if low is not None:
            where += (
                " AND first_term >= coalesce((SELECT max(first_term) FROM posting_packs"
                " WHERE segment_id=? AND first_term <= ?), '')"
            )
            args += [segment_id, low]
        if high is not None:
            where, args = where + " AND first_term < ?", [*args, high]
        packs = [blob for (blob,) in self.conn.execute(f"SELECT data FROM posting_packs WHERE {where}", args)]
        return PackedPart(rows, packs, low, high)

    def term_bounds(self, segment_ids: Sequence[int], budget: int) -> list[str]:
        """Terms that cut the segments' postings into ranges of about `budget` bytes of memory each
        in a merge (each row's stored bytes and ROW_MEMORY_BYTES; a range starts at a bound and ends
        before the next), ascending. From the marks kept while
        writing when this process wrote every one of the segments (a 1M-chunk build's final merge
        spent 32 s reading the lengths of 4M rows), else from the rows' lengths, not their bytes."""
        known = self._term_marks
        if all(seg in known for seg in segment_ids):
            sizes = sorted(mark for seg in segment_ids for mark in known[seg])
        else:
            sizes = self.conn.execute(
                "SELECT term, sum(length(ids) + length(tf_title) + length(tf_body) + length(pos_title)"
                f" + length(pos_body) + {ROW_MEMORY_BYTES})"
                f" FROM postings WHERE segment_id IN ({marks(len(segment_ids))})"
                " GROUP BY term ORDER BY term",
                list(segment_ids),
            ).fetchall()
            # a pack counts as its bytes and its rows, at its first term
            packed = self.conn.execute(
                "SELECT first_term, length(data), data FROM posting_packs"
                f" WHERE segment_id IN ({marks(len(segment_ids))})",
                list(segment_ids),
            ).fetchall()
            if packed:
                more = [
                    (first, size + len(Pack(blob).terms) * ROW_MEMORY_BYTES) for first, size, blob in packed
                ]
                sizes = sorted(sizes + more)
        return range_bounds(sizes, budget)

    def load_positions(self, segment_id: int, term: str, field: str) -> np.ndarray | None:
        tf, pos = {"title": ("tf_title", "pos_title"), "body": ("tf_body", "pos_body")}[field]
        row = self.conn.execute(
            f"SELECT length(ids), substr(ids, 1, {ID_HEAD_BYTES}), {tf}, {pos} FROM postings"
            " WHERE segment_id=? AND term=?",
            (segment_id, term),
        ).fetchone()
        if row is None:
            packed = self._packed_rows(segment_id, [term])
            if not packed:
                return None
            _, ids, tft, tfb, pos_title, pos_body = packed[0]
            row = (len(ids), ids, tft, pos_title) if field == "title" else (len(ids), ids, tfb, pos_body)
        count = int(unpack_frequencies(row[2], id_count(row[1], row[0])).sum(dtype=np.int64))
        return unpack_positions(row[3], count)

    # what a worker makes of a merged term range's encoded rows before handing them over: short rows
    # packed there (kenning.store.sqlite.packs), not one by one in the writer
    posting_bundler = staticmethod(pack_range)

    def write_encoded_segment(
        self, doc_ids: np.ndarray, title_lens: np.ndarray, body_lens: np.ndarray, encoded: Iterable[tuple]
    ) -> int:
        """Short rows go into the segment's packs (kenning.store.sqlite.packs), with the packs a
        merge worker made (PackedRange)."""
        self._require_txn()
        doc_ids = np.asarray(doc_ids, dtype=np.uint32)
        title_lens = np.minimum(title_lens, 65535).astype(np.uint16)
        body_lens = np.minimum(body_lens, 65535).astype(np.uint16)
        cur = self.conn.execute(
            "INSERT INTO segments(created, n_docs, doc_ids, title_lens, body_lens) VALUES (?,?,?,?,?)",
            (
                time.time(),
                len(doc_ids),
                pack_doc_ids(doc_ids),
                pack_lengths(title_lens),
                pack_lengths(body_lens),
            ),
        )
        seg_id = int(cur.lastrowid)
        digests = SegmentDigests(doc_ids, title_lens, body_lens)
        term_marks = _TermMarks()
        packs = PackWriter()

        def stored_rows():
            for item in encoded:
                if isinstance(item, PackedRange):
                    yield from bundled_rows(item)
                    continue
                row, digest = item
                digests.add(row[0], digest)
                term_marks.add(row[0], row_bytes(row) + ROW_MEMORY_BYTES)
                if not packs.take(row):
                    yield (seg_id, *row)

        def bundled_rows(bundle: PackedRange):
            for term, held in bundle.marks:
                term_marks.add(term, held)
            if bundle.lines:
                digests.add_run(bundle.first, bundle.last, bundle.lines)
            for packed in bundle.packs:
                if not packs.take_pack(packed):  # out of order with what came before: rows of their own
                    yield from ((seg_id, *row) for row in Pack(packed.blob).rows())
            for row in bundle.rows:
                yield (seg_id, *row)

        self.conn.executemany(
            "INSERT INTO postings(segment_id, term, ids, tf_title, tf_body, pos_title, pos_body)"
            " VALUES (?,?,?,?,?,?,?)",
            stored_rows(),
        )
        self.conn.executemany(
            "INSERT INTO posting_packs(segment_id, first_term, last_term, data) VALUES (?,?,?,?)",
            [(seg_id, p.first, p.last, p.blob) for p in packs.done()],
        )
        checksum = digests.checksum()
        if checksum is None:  # rows out of term order: from the rows as stored
            pairs = [(r.term, posting_digest(r.term, *r[1:])) for r in self.iter_segment_postings(seg_id)]
            checksum = segment_checksum(doc_ids, title_lens, body_lens, pairs)
        self.conn.execute("UPDATE segments SET checksum=? WHERE id=?", (checksum, seg_id))
        self._term_marks[seg_id] = term_marks.done()
        return seg_id

    def drop_postings_range(self, segment_ids: Sequence[int], low: str | None, high: str | None) -> None:
        self._require_txn()
        where, args = f"segment_id IN ({marks(len(segment_ids))})", list(segment_ids)
        if low is not None:
            where, args = where + " AND term >= ?", [*args, low]
        if high is not None:
            where, args = where + " AND term < ?", [*args, high]
        self.conn.execute(f"DELETE FROM postings WHERE {where}", args)
        self._drop_packed_range(segment_ids, low, high)

    def _drop_packed_range(self, segment_ids: Sequence[int], low: str | None, high: str | None) -> None:
        """The packs' rows of terms in [low, high): a pack inside the range goes, one reaching past
        either end is written again with its rows outside it."""
        where, args = f"segment_id IN ({marks(len(segment_ids))})", list(segment_ids)
        if low is not None:
            where, args = where + " AND last_term >= ?", [*args, low]
        if high is not None:
            where, args = where + " AND first_term < ?", [*args, high]
        overlapping = self.conn.execute(
            f"SELECT segment_id, first_term, last_term, data FROM posting_packs WHERE {where}", args
        ).fetchall()
        for seg, first, last, blob in overlapping:
            self.conn.execute("DELETE FROM posting_packs WHERE segment_id=? AND first_term=?", (seg, first))
            if (low is None or first >= low) and (high is None or last < high):
                continue
            pack = Pack(blob)
            kept = pack.rows(None, low) if low is not None else []
            kept += pack.rows(high, None) if high is not None else []
            if kept:
                self.conn.execute(
                    "INSERT INTO posting_packs(segment_id, first_term, last_term, data) VALUES (?,?,?,?)",
                    (seg, kept[0][0], kept[-1][0], encode_pack(kept)),
                )

    def drop_segments(self, segment_ids: Sequence[int]) -> None:
        self._require_txn()
        for seg in segment_ids:
            self._term_marks.pop(seg, None)
            self.conn.execute("DELETE FROM postings WHERE segment_id=?", (seg,))
            self.conn.execute("DELETE FROM posting_packs WHERE segment_id=?", (seg,))
            self.conn.execute("DELETE FROM segments WHERE id=?", (seg,))
        # packs older than every segment: a forced rebuild before d40b7de left its old segments'
        # (ids only grow, so they lie below the oldest segment; an index range, empty as a rule)
        self.conn.execute("DELETE FROM posting_packs WHERE segment_id < (SELECT min(id) FROM segments)")

    @decoding("a posting pack")
    def count_terms(self) -> int:
        packed = {
            term
            for (blob,) in self.conn.execute("SELECT data FROM posting_packs")
            for term in Pack(blob).terms
        }
        if not packed:
            return int(self.conn.execute("SELECT COUNT(DISTINCT term) FROM postings").fetchone()[0])
        return len(packed.union(term for (term,) in self.conn.execute("SELECT DISTINCT term FROM postings")))


class _TermMarks:
    """A segment's marks (SqlitePostings._term_marks) from its rows as they are written. Merges and
    the segment builder write rows in term order, marked as they come in a few entries whatever the
    segment's size; should rows come out of order, from the first one out of order they are kept
    and sorted at the end (as many as the segment's terms, which its size bounds; marks already
    made stand for their rows)."""

    def __init__(self):
        self.marks: list[tuple[str, int]] = []
        self.rows: list[tuple[str, int]] | None = None  # kept once out of order
        self.last, self.held = "", 0

    def add(self, term: str, size: int) -> None:
        if self.rows is not None:
            self.rows.append((term, size))
            return
        if term < self.last:
            self.rows = [*self.marks, (self.last, self.held), (term, size)]
            return
        self.last, self.held = term, self.held + size
        if self.held >= TERM_MARK_BYTES:
            self.marks.append((term, self.held))
            self.held = 0

    def done(self) -> list[tuple[str, int]]:
        if self.rows is not None:  # marked again, in term order
            ordered = _TermMarks()
            for term, size in sorted(self.rows):
                ordered.add(term, size)
            return ordered.done()
        return self.marks + ([(self.last, self.held)] if self.held else [])
