"""Building and merging the immutable postings segments that storage keeps.

A SegmentBuilder collects the terms (with positions) of newly indexed chunks and writes them as one
segment. `merge_segments` rewrites all segments as one, dropping postings of deleted chunks, so the
number of segments a query visits (and the dead weight it skips) stays small.

Chunk ids only grow, and segments are written (and merged) in id order, so concatenating segments in
segment order keeps every posting list sorted by chunk id.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import chain

import numpy as np
from pyroaring import BitMap

from kenning.analysis import Analyzer

MAX_SEGMENTS = 8
FLUSH_CHUNKS = 20_000
MAX_TF = 65535  # term frequencies are stored as uint16; positions beyond that are not kept


def _positions_by_term(terms: list[str], positions: list[int]) -> dict[str, list[int]]:
    by_term: dict[str, list[int]] = {}
    for term, pos in zip(terms, positions, strict=True):
        found = by_term.get(term)
        if found is None:
            by_term[term] = [pos]
        else:
            found.append(pos)
    return by_term


class SegmentBuilder:
    """Accumulates per-chunk field positions for title and body, then writes one segment."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer
        self._reset()

    def _reset(self) -> None:
        self.doc_ids: list[int] = []
        self.title_lens: list[int] = []
        self.body_lens: list[int] = []
        # term -> (ids, title positions per posting, body positions per posting)
        self.postings: dict[str, tuple[list, list, list]] = defaultdict(lambda: ([], [], []))

    def __len__(self) -> int:
        return len(self.doc_ids)

    def add(self, chunk_id: int, title: str, body: str) -> set[str]:
        """Collect one chunk's postings; returns its distinct raw tokens (for the spelling vocabulary)."""
        raws: set[str] = set()
        title_terms, title_pos = self.analyzer.positioned_terms(title, raws)
        body_terms, body_pos = self.analyzer.positioned_terms(body, raws)
        self.doc_ids.append(chunk_id)
        self.title_lens.append(len(title_terms))
        self.body_lens.append(len(body_terms))
        in_title = _positions_by_term(title_terms, title_pos)
        in_body = _positions_by_term(body_terms, body_pos)
        empty: list[int] = []
        for term in in_title.keys() | in_body.keys():
            ids, pt, pb = self.postings[term]
            ids.append(chunk_id)
            title_positions = in_title.get(term, empty)
            body_positions = in_body.get(term, empty)
            pt.append(title_positions if len(title_positions) <= MAX_TF else title_positions[:MAX_TF])
            pb.append(body_positions if len(body_positions) <= MAX_TF else body_positions[:MAX_TF])
        return raws

    def _rows(self):
        for term, (ids, pt, pb) in self.postings.items():
            tf_title = [len(p) for p in pt]
            tf_body = [len(p) for p in pb]
            yield (
                term,
                ids,
                tf_title,
                tf_body,
                np.fromiter(chain.from_iterable(pt), dtype=np.uint32, count=sum(tf_title)),
                np.fromiter(chain.from_iterable(pb), dtype=np.uint32, count=sum(tf_body)),
            )

    def flush(self, storage) -> int | None:
        """Write what was collected as a new segment (ids are ascending: chunk ids only grow)."""
        if not self.doc_ids:
            return None
        seg_id = storage.write_segment(
            np.array(self.doc_ids), np.array(self.title_lens), np.array(self.body_lens), self._rows()
        )
        self._reset()
        return seg_id


def needs_merge(storage, live: BitMap) -> bool:
    """Merge when a query would visit too many segments or most postings belong to deleted chunks."""
    segments = storage.conn.execute("SELECT id, n_docs FROM segments").fetchall()
    if len(segments) > MAX_SEGMENTS:
        return True
    total = sum(n for _, n in segments)
    return total > 1000 and len(live) < total * 0.5


def _keep_postings(ids: np.ndarray, tf: np.ndarray, positions: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The positions of the kept postings (positions are stored tf-many per posting)."""
    return positions[np.repeat(keep, tf.astype(np.int64))]


def merge_segments(storage, live: BitMap) -> int | None:
    """Rewrite all segments as one that holds only live chunks. Runs inside the caller's transaction."""
    segment_ids = [r[0] for r in storage.conn.execute("SELECT id FROM segments ORDER BY id")]
    if not segment_ids:
        return None
    live_ids = np.frombuffer(live.to_array(), dtype=np.uint32)
    max_id = int(live_ids[-1]) if len(live_ids) else 0
    live_mask = np.zeros(max_id + 2, dtype=bool)
    live_mask[live_ids] = True
    doc_ids, title_lens, body_lens = [], [], []
    for seg in segment_ids:
        data = storage.load_segment(seg)
        keep = live_mask[np.minimum(data.doc_ids, max_id + 1)]
        doc_ids.append(data.doc_ids[keep])
        title_lens.append(data.title_lens[keep])
        body_lens.append(data.body_lens[keep])
    merged: dict[str, list[tuple]] = defaultdict(list)
    for seg in segment_ids:  # in id order, so each term's concatenated ids stay sorted
        for term, ids, tft, tfb, pt, pb in storage.iter_segment_postings(seg):
            ids = np.frombuffer(ids, dtype=np.uint32)
            keep = live_mask[np.minimum(ids, max_id + 1)]
            if not keep.any():
                continue
            tft = np.frombuffer(tft, dtype=np.uint16)
            tfb = np.frombuffer(tfb, dtype=np.uint16)
            merged[term].append(
                (
                    ids[keep],
                    tft[keep],
                    tfb[keep],
                    _keep_postings(ids, tft, np.frombuffer(pt, dtype=np.uint32), keep),
                    _keep_postings(ids, tfb, np.frombuffer(pb, dtype=np.uint32), keep),
                )
            )

    def rows():
        for term in sorted(merged):
            parts = merged[term]
            yield (term, *(np.concatenate([p[i] for p in parts]) for i in range(5)))

    storage.drop_segments(segment_ids)
    if len(live_ids) == 0:
        return None
    all_ids = np.concatenate(doc_ids)
    if len(all_ids) > 1 and not np.all(all_ids[1:] > all_ids[:-1]):
        raise AssertionError("segments out of chunk-id order; refusing to merge")
    return storage.write_segment(all_ids, np.concatenate(title_lens), np.concatenate(body_lens), rows())
