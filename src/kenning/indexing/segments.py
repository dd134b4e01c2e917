"""Building and merging the immutable postings segments that store keeps.

A SegmentBuilder collects the terms (with positions) of newly indexed chunks and writes them as one
segment. `merge_plan` picks the newest segments to fold together after a commit (see there) and
`merge_segments` rewrites them as one, dropping postings of deleted chunks, so the number of
segments a query visits (and the dead weight it skips) stays small.

Chunk ids only grow, and segments are written (and merged) in id order, so concatenating segments in
segment order keeps every posting list sorted by chunk id.
"""

from __future__ import annotations

import heapq
import itertools
import unicodedata
from array import array
from operator import itemgetter

import numpy as np
from pyroaring import BitMap

from kenning import kernels
from kenning.analysis.analyzer import Analyzer, raw_tokens
from kenning.indexing.allocator import release_freed_memory
from kenning.indexing.spill import SpilledSegment, SpillRange, merge_columns, spill_ranges
from kenning.indexing.term_table import SEVERAL, TermTable
from kenning.indexing.tuning import WriterTuning
from kenning.kernels.arrays import bitmap_of, sorted_unique, stable_argsort
from kenning.store.compact import (
    decode_posting_row,
    encode_posting_row,
    encode_posting_rows,
    join_posting_rows,
)
from kenning.store.records import SegmentColumns

MAX_TF = 65535  # term frequencies are stored as uint16; positions beyond that are not kept


class SegmentBuilder:
    """Accumulates the positioned terms of new chunks, then writes them as one segment.

    Every token goes into four flat arrays (term id, chunk id, field, position) in the order it was
    read; `flush` groups them into posting lists with one stable sort by term id. Chunks arrive in
    ascending id order with title before body and positions ascending, so the sort leaves each
    term's tokens ordered by chunk, then field, then position, which is the store layout. Per
    token this costs a dict lookup and array appends; there is no per-posting Python work.
    """

    def __init__(self, analyzer: Analyzer, kept_raws: int = WriterTuning.kept_raws):
        """`kept_raws`: the most raw tokens whose terms are kept from one segment to the next
        (WriterTuning.kept_raws)."""
        self.analyzer = analyzer
        self.kept_raws = kept_raws
        self._new_table()
        self._reset()

    def _new_table(self) -> None:
        self.term_ids: dict[str, int] = {}  # term -> its id (ids are the builder's, not a segment's)
        self.table = TermTable()  # raw token -> its one term's id, and the chunks holding it

    def next_segment(self) -> dict[str, int]:
        """Start the next segment, keeping the raw tokens' terms learned so far (up to `kept_raws`):
        each segment of a build meets the corpus's words again, and learning them anew was a third
        of a worker's time on a segment of the 1M corpus. Their chunk counts go on adding up until
        taken (`raw_chunk_counts`); when the table is let go, the counts not yet taken are returned
        (else nothing is)."""
        counts: dict[str, int] = {}
        if len(self.table) > self.kept_raws:
            counts = self.raw_chunk_counts()
            self._new_table()
        self._reset()
        return counts

    def _reset(self) -> None:
        self.doc_ids: list[int] = []
        self.title_lens: list[int] = []
        self.body_lens: list[int] = []
        # every token's term and position, chunk by chunk, title then body; which chunk and field
        # each token belongs to follows from the lengths above (made at once in `columns`: two
        # array extends per field and chunk were 5% of a build's time)
        self.token_term = array("I")
        self.token_pos = array("I")

    def __len__(self) -> int:
        return len(self.doc_ids)

    def add(self, chunk_id: int, title: str, body: str) -> None:
        """Collect one chunk's tokens (and count the chunk for each of its raw tokens).

        Most texts hold only words that make one term each: the term table
        (kenning.indexing.term_table) gives their ids in one pass, learning the words new to it as
        it goes (a fresh table, as each worker of a 1% re-index starts with, met new words in most
        texts, and scanning each of those again once they were learned was ~0.05 s of a worker's
        5,000 chunks). A text holding an identifier or a CJK run (several terms at one place) goes
        token by token through the analyzer. Both give the same terms and positions
        (tests/indexing/test_segments.py)."""
        self.doc_ids.append(chunk_id)
        for text, lengths in ((title, self.title_lens), (body, self.body_lens)):
            if not text.isascii():
                text = unicodedata.normalize("NFC", text)
            ids = self.table.scan(text, chunk_id, self._learn)
            if ids is None:  # an identifier: several terms at one place (the chunk counted already)
                tokens = raw_tokens(text)
                terms, positions = self._slow_ids(tokens)
                self.token_term.extend(terms)
                self.token_pos.extend(positions)
                n = len(terms)
            else:
                self.token_term.frombytes(ids)
                n = len(ids) // 4
                self.token_pos.extend(range(n))
            lengths.append(n)

    def raw_chunk_counts(self) -> dict[str, int]:
        """How many chunks hold each raw token (the spelling vocabulary's counts), counted since the
        counts were last taken: they start again from zero."""
        return self.table.take_counts()

    def _learn(self, tokens: list[str]) -> None:
        """Give the table's new raw tokens their terms' ids (SEVERAL for several terms)."""
        number = self.term_ids.setdefault
        words, terms, others = self.analyzer.plain_word_terms(tokens)
        ids = [number(term, len(self.term_ids)) for term in terms]
        for raw in others:
            terms, _offsets, width = self.analyzer.token_analysis(raw)
            words.append(raw)
            ids.append(number(terms[0], len(self.term_ids)) if width == 1 else SEVERAL)
        self.table.learn(words, ids)

    def _slow_ids(self, tokens: list[str]) -> tuple[list[int], list[int]]:
        """Term ids and positions token by token, for a text with identifiers or CJK runs (several
        terms at one place); `_learn` has already given every one-term token its id."""
        number, plain = self.term_ids.setdefault, self.table.get
        ids: list[int] = []
        positions: list[int] = []
        pos = 0
        for raw in tokens:
            term_id = plain(raw)
            if term_id is not None:
                ids.append(term_id)
                positions.append(pos)
                pos += 1
                continue
            terms, offsets, width = self.analyzer.token_analysis(raw)
            ids.extend(number(t, len(self.term_ids)) for t in terms)
            positions.extend(pos + o for o in offsets)
            pos += width
        return ids, positions

    def columns(self) -> SegmentColumns | None:
        """The segment's postings as flat columns in term order (None when it holds no token).

        Call it once, when the segment ends: the token arrays are let go as soon as they are sorted,
        which keeps the peak (a segment's largest moment) near 40 bytes a token rather than 70.
        Terms come sorted by name, the order the store's key keeps them in, so the store appends
        each segment's rows to its index instead of inserting them all over it."""
        term = np.frombuffer(self.token_term, dtype=np.uint32)
        if not len(term):
            return None
        # the segment's terms (the builder knows every term of its earlier segments too), ranked
        # by name
        ids = np.flatnonzero(np.bincount(term, minlength=len(self.term_ids)))
        every = list(self.term_ids)
        held = [every[i] for i in ids.tolist()]
        by_name = sorted(range(len(held)), key=held.__getitem__)
        names = [held[i] for i in by_name]
        rank = np.zeros(len(every), dtype=np.uint32)
        rank[ids[by_name]] = np.arange(len(names), dtype=np.uint32)
        term = rank[term]
        del rank, every, held
        order = stable_argsort(term)
        per_field = np.empty(2 * len(self.doc_ids), dtype=np.int64)  # tokens per chunk and field
        per_field[0::2], per_field[1::2] = self.title_lens, self.body_lens
        doc = np.repeat(np.repeat(np.asarray(self.doc_ids, dtype=np.uint32), 2), per_field)[order]
        field = np.repeat(np.tile(np.array([0, 1], dtype=np.uint8), len(self.doc_ids)), per_field)[order]
        del per_field
        term, pos = term[order], np.frombuffer(self.token_pos, dtype=np.uint32)[order]
        del order
        self.token_term, self.token_pos = array("I"), array("I")
        # at most MAX_TF positions per (term, chunk, field): tf is stored as uint16
        group = np.flatnonzero(
            np.concatenate(
                ([True], (term[1:] != term[:-1]) | (doc[1:] != doc[:-1]) | (field[1:] != field[:-1]))
            )
        )
        sizes = np.diff(np.append(group, len(term)))
        if sizes.max() > MAX_TF:
            rank = np.arange(len(term)) - np.repeat(group, sizes)
            keep = rank < MAX_TF
            term, doc, field, pos = term[keep], doc[keep], field[keep], pos[keep]
            del rank, keep
        del group, sizes
        # one posting per (term, chunk)
        starts = np.flatnonzero(np.concatenate(([True], (term[1:] != term[:-1]) | (doc[1:] != doc[:-1]))))
        in_title = field == 0
        del field
        tf_title = np.add.reduceat(in_title, starts, dtype=np.uint32).astype(np.uint16)
        tf_body = (np.diff(np.append(starts, len(term))) - tf_title).astype(np.uint16)
        posting_doc, posting_term = doc[starts], term[starts]
        del doc, starts
        title_term, title_pos = term[in_title], pos[in_title]
        in_title = ~in_title
        body_term, body_pos = term[in_title], pos[in_title]
        del term, pos, in_title
        present = sorted_unique(posting_term)  # np.unique hashes: 0.1 s a 1M-corpus segment, against 6 ms

        def bounds(sorted_terms: np.ndarray) -> np.ndarray:
            """Where each present term's run starts in an array sorted by term, and the end."""
            return np.append(np.searchsorted(sorted_terms, present), len(sorted_terms))

        return SegmentColumns(
            [names[t] for t in present.tolist()],
            posting_doc,
            tf_title,
            tf_body,
            title_pos,
            body_pos,
            bounds(posting_term),
            bounds(title_term),
            bounds(body_term),
        )

    def rows(self):
        """(term, ids, tf_title, tf_body, pos_title, pos_body) per term, terms ascending."""
        columns = self.columns()
        if columns is not None:
            yield from columns.rows()


def encode_columns(columns: SegmentColumns, encode) -> list[tuple[tuple, bytes]]:
    """A segment's rows as `encode` (the store's posting_encoder) gives them, terms ascending: all at
    once when it is the compact codec's (kenning.store.compact.encode_posting_rows)."""
    if encode is encode_posting_row:
        return encode_posting_rows(columns)
    return [encode(*row) for row in columns.rows()]


def dead_segments(store, live: BitMap) -> list[int]:
    """The segments none of whose chunks is live any more. They are dropped whole: merged instead,
    every one of their rows was read, decoded and filtered to nothing. A second re-index of the same
    files (its first left a segment of their chunks) merged that segment with its own, 3.1 s of a
    6.2 s re-index at 1M chunks."""
    dead = []
    for seg_id, _ in store.segment_sizes():
        place = store.load_segment(seg_id).place
        if isinstance(place, slice):
            alive = live.range_cardinality(place.start, place.stop)
        else:
            alive = live.intersection_cardinality(bitmap_of(place))
        if not alive:
            dead.append(seg_id)
    return dead


def merge_plan(store, live: BitMap, max_segments: int = WriterTuning.max_segments) -> list[int]:
    """The segments to merge into one after a commit, oldest first ([] when none).

    - Over half of the indexed chunks deleted (more than 1000): all segments, to drop dead postings.
    - A segment smaller than all newer segments together: it and every newer one. Sizes then at
      least double towards the past, so there are about log2(N / smallest) segments and a chunk is
      rewritten O(log N) times over its life, not once per merge as when every merge took them all.
    - Still more than `max_segments`: the newest ones, enough to get back to the cap (the cheap end).

    A merge always takes the newest segments. The merged segment gets the next id and holds the
    highest chunk ids, so segment order stays chunk-id order.
    """
    rows = store.segment_sizes()
    ids = [seg_id for seg_id, _ in rows]
    total = sum(n for _, n in rows)
    if total > 1000 and len(live) < total * 0.5:
        return ids
    start = len(rows)
    newer = 0
    for i in range(len(rows) - 1, -1, -1):
        if rows[i][1] < newer:
            start = i
        newer += rows[i][1]
    if min(start, len(rows) - 1) + 1 > max_segments:  # segments left after merging from `start`
        start = max_segments - 1
    run = ids[start:]
    return run if len(run) > 1 else []


def _keep_postings(ids: np.ndarray, tf: np.ndarray, positions: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The positions of the kept postings (positions are stored tf-many per posting)."""
    return positions[np.repeat(keep, tf.astype(np.int64))]


def _live_part(posting: tuple, order: int, dead: np.ndarray):
    """(term, order, ids, tf_title, tf_body, pos_title, pos_body) without the dead chunks' postings
    (None when none is left); `dead` sorted."""
    term, ids, tft, tfb, pt, pb = posting
    if len(dead):
        at = np.minimum(np.searchsorted(dead, ids), len(dead) - 1)
        keep = dead[at] != ids
        if not keep.all():
            if not keep.any():
                return None
            return (
                term,
                order,
                ids[keep],
                tft[keep],
                tfb[keep],
                _keep_postings(ids, tft, pt, keep),
                _keep_postings(ids, tfb, pb, keep),
            )
    return term, order, ids, tft, tfb, pt, pb  # the common case (a fresh build deletes nothing): no copies


def _each_then_trim(ranges):
    """The rows of each merged range in turn (or the range whole, as the store's posting_bundler made
    it in a worker); once a range is written, its buffers go back to the OS (kenning.indexing.allocator: the
    writer's heap would otherwise keep them)."""
    for rows in ranges:
        if isinstance(rows, list):
            yield from rows
        else:
            yield rows
        release_freed_memory()


def merge_range(parts: list[list[tuple]], dead: np.ndarray, decode, encode) -> list[tuple[tuple, bytes]]:
    """One term range of a merge, encoded: `parts[i]` holds the i-th merged segment's stored rows of
    the range, terms ascending, as a list or as the store's raw_posting_part gave them (`decode`
    reads them, `encode` writes the merged rows, both the store's); `dead`: the deleted chunk ids
    among the merged segments, sorted. Each term's parts are joined in segment order, so its ids
    stay ascending. A store that keeps rows in the compact codec has them joined from their bytes in
    C where the kernels are built (`kernels.join_rows`); without them, with nothing deleted (a fresh
    build) term by term from their bytes (`join_posting_rows`), else through flat columns. Other
    codecs decode, join and encode each term."""
    parts = [part if isinstance(part, list) else part.expand() for part in parts]
    compact = (decode, encode) == (decode_posting_row, encode_posting_row)
    if compact and kernels.NATIVE:
        # the rows joined from their bytes, the deleted chunks' postings dropped, in C: merging two
        # 1% re-index segments at the 1M tier spent ~1.2 s of worker time a range set in Python, 0.23 s
        return kernels.join_rows(parts, dead)
    if compact and len(dead):
        # rows lose postings: decoded into flat columns, joined and filtered as spilled segments
        # are (spill.merge_columns), encoded at once; term by term this was ~15 us a row in Python
        # (a second 1% re-index at 1M merged ~200k rows in 3.1 s)
        return encode_posting_rows(merge_columns([_columns_of(rows) for rows in parts], dead))
    carry = join_posting_rows if compact else None  # no row loses postings: joined from their bytes
    streams = [((raw[0], order, raw) for raw in rows) for order, rows in enumerate(parts)]
    out = []
    for term, group in itertools.groupby(heapq.merge(*streams, key=itemgetter(0, 1)), key=itemgetter(0)):
        group = list(group)
        if carry is not None:
            out.append(carry([raw for _, _, raw in group]))
            continue
        live = [p for p in (_live_part(decode(raw), order, dead) for _, order, raw in group) if p is not None]
        if len(live) == 1:
            out.append(encode(term, *live[0][2:]))
        elif live:
            out.append(encode(term, *(np.concatenate([p[i] for p in live]) for i in range(2, 7))))
    return out


def _columns_of(rows: list[tuple]) -> SegmentColumns:
    """Stored posting rows (terms ascending, the compact codec's) as one segment's flat columns."""
    decoded = [decode_posting_row(raw) for raw in rows]

    def column(i: int, dtype) -> np.ndarray:
        return (
            np.concatenate([d[i] for d in decoded]).astype(dtype, copy=False)
            if decoded
            else np.zeros(0, dtype)
        )

    def bounds(i: int) -> np.ndarray:
        return np.concatenate(([0], np.cumsum([len(d[i]) for d in decoded], dtype=np.int64)))

    return SegmentColumns(
        [d[0] for d in decoded],
        column(1, np.uint32),
        column(2, np.uint16),
        column(3, np.uint16),
        column(4, np.uint32),
        column(5, np.uint32),
        bounds(1),
        bounds(4),
        bounds(5),
    )


def merge_segments(
    store,
    live: BitMap,
    segment_ids: list[int] | None = None,
    helpers=None,
    range_bytes: int = WriterTuning.merge_range_bytes,
) -> int | None:
    """Rewrite segments (all, or the newest ones given) as one that holds only their live chunks.
    Runs inside the caller's transaction.

    The merge goes by ranges of terms, each about `range_bytes` of memory over all the merged segments
    (stored bytes, and kenning.store.records.ROW_MEMORY_BYTES a row: cut by a count of terms, ranges of
    common words reached hundreds of megabytes at 1M chunks). The writer reads a range's rows from
    every merged segment, `merge_range` joins them, the writer inserts the result. `helpers`
    (kenning.indexing.analysis.ChunkAnalysis) run `merge_range` in its worker processes, several
    ranges at once, results in order; without, it runs here. Memory holds a few ranges, not the
    segments."""
    every = [seg_id for seg_id, _ in store.segment_sizes()]
    segment_ids = every if segment_ids is None else sorted(segment_ids)
    if not segment_ids:
        return None
    if segment_ids != every[len(every) - len(segment_ids) :]:
        raise ValueError("only the newest segments can be merged (segment order is chunk-id order)")
    all_ids, title_lens, body_lens, dead = _surviving([store.load_segment(seg) for seg in segment_ids], live)
    if len(all_ids) == 0:
        store.drop_segments(segment_ids)
        return None
    bounds = store.term_bounds(segment_ids, range_bytes)
    ranges = list(zip([None, *bounds], [*bounds, None], strict=True))

    def read_and_free(low, high) -> list[list[tuple]]:
        """A range's rows from every merged segment, deleted once read: their pages go back to the
        free list while the merge runs, and the merged rows reuse them. Deleting the old segments only
        at the end left their pages as a hole as large as the index, which giving back to the file
        system then filled by moving every page after it (67 of 500 s of a 1M-chunk build)."""
        parts = [store.raw_posting_part(seg, low, high) for seg in segment_ids]
        store.drop_postings_range(segment_ids, low, high)
        return parts

    jobs = (read_and_free(low, high) for low, high in ranges)
    decode, encode = store.posting_decoder, store.posting_encoder
    if helpers is not None:
        merged = helpers.merge_ranges(jobs, dead, len(all_ids))
    else:
        merged = (merge_range(parts, dead, decode, encode) for parts in jobs)
    # the merged segment is written while the old ones are read, then they go (all in the caller's
    # transaction)
    merged_id = store.write_encoded_segment(all_ids, title_lens, body_lens, _each_then_trim(merged))
    store.drop_segments(segment_ids)
    return merged_id


def land_spilled(
    store,
    spills: list[SpilledSegment],
    live: BitMap,
    helpers=None,
    range_bytes: int = WriterTuning.merge_range_bytes,
) -> int | None:
    """Write a run's spilled segments (kenning.indexing.spill) to the store as one segment of their
    live chunks, by term ranges as `merge_segments` merges: each range's columns are read from the
    files, joined and encoded (in the workers, when `helpers` has them), and the writer inserts the
    rows. A lone segment goes the same way (a spilled segment's rows are encoded only now)."""
    if not spills:
        return None
    all_ids, title_lens, body_lens, dead = _surviving(spills, live)
    if len(all_ids) == 0:
        return None
    ranges = spill_ranges(spills, range_bytes)
    if helpers is not None:
        merged = helpers.merge_ranges(ranges, dead, len(all_ids))
    else:
        merged = (merge_spill_range(job, dead, store.posting_encoder) for job in ranges)
    return store.write_encoded_segment(all_ids, title_lens, body_lens, _each_then_trim(merged))


def merge_spill_range(job: SpillRange, dead: np.ndarray, encode) -> list[tuple[tuple, bytes]]:
    """One term range of the spilled segments, joined without the `dead` chunks and encoded."""
    return encode_columns(merge_columns(job.parts(), dead), encode)


def _surviving(segments, live: BitMap) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The live chunks' ids and field lengths of segments given in chunk-id order, and the deleted
    chunks' ids (sorted)."""
    live_ids = np.frombuffer(live.to_array(), dtype=np.uint32)
    max_id = int(live_ids[-1]) if len(live_ids) else 0
    live_mask = np.zeros(max_id + 2, dtype=bool)
    live_mask[live_ids] = True
    doc_ids, title_lens, body_lens, dead = [], [], [], []
    for data in segments:
        keep = live_mask[np.minimum(data.doc_ids, max_id + 1)]
        doc_ids.append(data.doc_ids[keep])
        title_lens.append(data.title_lens[keep])
        body_lens.append(data.body_lens[keep])
        dead.append(data.doc_ids[~keep])
    all_ids = np.concatenate(doc_ids)
    if len(all_ids) > 1 and not np.all(all_ids[1:] > all_ids[:-1]):
        raise AssertionError("segments out of chunk-id order; refusing to merge")
    return all_ids, np.concatenate(title_lens), np.concatenate(body_lens), np.sort(np.concatenate(dead))
