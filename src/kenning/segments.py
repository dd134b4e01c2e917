"""Building and merging the immutable postings segments that storage keeps.

A SegmentBuilder collects the terms of newly indexed chunks and writes them as one segment.
`merge_segments` rewrites many segments as one, dropping postings of deleted chunks, so the number of
segments a query visits (and the dead weight it skips) stays small.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
from pyroaring import BitMap

from kenning.analysis import Analyzer

MAX_SEGMENTS = 8
FLUSH_CHUNKS = 20_000


class SegmentBuilder:
    """Accumulates per-chunk term frequencies for title and body, then writes one segment."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer
        self._reset()

    def _reset(self) -> None:
        self.doc_ids: list[int] = []
        self.title_lens: list[int] = []
        self.body_lens: list[int] = []
        self.postings: dict[str, tuple[list, list, list]] = defaultdict(lambda: ([], [], []))

    def __len__(self) -> int:
        return len(self.doc_ids)

    def add(self, chunk_id: int, title: str, body: str) -> None:
        title_terms = self.analyzer.terms(title)
        body_terms = self.analyzer.terms(body)
        self.doc_ids.append(chunk_id)
        self.title_lens.append(len(title_terms))
        self.body_lens.append(len(body_terms))
        tf_title = Counter(title_terms)
        tf_body = Counter(body_terms)
        for term in tf_title.keys() | tf_body.keys():
            ids, tft, tfb = self.postings[term]
            ids.append(chunk_id)
            tft.append(tf_title.get(term, 0))
            tfb.append(tf_body.get(term, 0))

    def flush(self, storage) -> int | None:
        """Write what was collected as a new segment (ids are ascending: chunk ids only grow)."""
        if not self.doc_ids:
            return None
        seg_id = storage.write_segment(self.doc_ids, self.title_lens, self.body_lens, self.postings)
        self._reset()
        return seg_id


def needs_merge(storage, live: BitMap) -> bool:
    """Merge when a query would visit too many segments or most postings belong to deleted chunks."""
    snapshot_segments = storage.conn.execute("SELECT id, n_docs FROM segments").fetchall()
    if len(snapshot_segments) > MAX_SEGMENTS:
        return True
    total = sum(n for _, n in snapshot_segments)
    return total > 1000 and len(live) < total * 0.5


def merge_segments(storage, live: BitMap) -> int | None:
    """Rewrite all segments as one that holds only live chunks. Runs inside the caller's transaction."""
    segment_ids = [r[0] for r in storage.conn.execute("SELECT id FROM segments ORDER BY id")]
    if not segment_ids:
        return None
    live_ids = np.frombuffer(live.to_array(), dtype=np.uint32)
    max_id = int(live_ids[-1]) if len(live_ids) else 0
    title_len = np.zeros(max_id + 1, dtype=np.uint16)
    body_len = np.zeros(max_id + 1, dtype=np.uint16)
    live_mask = np.zeros(max_id + 1, dtype=bool)
    live_mask[live_ids] = True
    for seg in segment_ids:
        data = storage.load_segment(seg)
        keep = data.doc_ids <= max_id
        ids = data.doc_ids[keep]
        title_len[ids] = data.title_lens[keep]
        body_len[ids] = data.body_lens[keep]
    merged: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = defaultdict(list)
    for seg in segment_ids:
        for term, ids, tft, tfb in storage.iter_segment_postings(seg):
            ids = np.frombuffer(ids, dtype=np.uint32)
            keep = (ids <= max_id) & live_mask[np.minimum(ids, max_id)]
            if keep.any():
                merged[term].append(
                    (
                        ids[keep],
                        np.frombuffer(tft, dtype=np.uint16)[keep],
                        np.frombuffer(tfb, dtype=np.uint16)[keep],
                    )
                )

    def rows():
        for term in sorted(merged):
            parts = merged[term]
            ids = np.concatenate([p[0] for p in parts])
            order = np.argsort(ids, kind="stable")
            yield (
                term,
                ids[order],
                np.concatenate([p[1] for p in parts])[order],
                np.concatenate([p[2] for p in parts])[order],
            )

    storage.drop_segments(segment_ids)
    if len(live_ids) == 0:
        return None
    return storage.write_segment_arrays(live_ids, title_len[live_ids], body_len[live_ids], rows())
