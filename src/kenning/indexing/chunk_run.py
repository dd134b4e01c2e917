"""One write's changes to an index's chunks, inside its transaction: the add/remove run.

A run starts from the committed live set. Chunks go in (inserted, then analysed beside the writer:
kenning.indexing.analysis, whose segments spill to files, kenning.indexing.spill) and out (deleted
with their file, or replaced within it); the run keeps the live set, the spelling vocabulary's
changes and the entities found. After each segment the analysis completes, what the run has buffered
goes to the store, so a write's memory stays bounded however many chunks it adds. At its end the
spilled segments land in the store as one (`land_new_segments`) and `settle` writes the vocabulary
and the live set, drops the segments with no live chunk left and merges by the merge plan
(kenning.indexing.segments). All of it is one transaction: a crash loses the whole run, never half.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from pyroaring import BitMap

from kenning.analysis.analyzer import Analyzer
from kenning.entities.collect import EntityCollector
from kenning.indexing.allocator import release_freed_memory
from kenning.indexing.analysis import Analysed, ChunkAnalysis
from kenning.indexing.reports import IndexReport
from kenning.indexing.segments import dead_segments, land_spilled, merge_plan, merge_segments
from kenning.indexing.spill import SpilledSegment, SpillFolder
from kenning.indexing.term_table import RawCountChanges
from kenning.indexing.tuning import WriterTuning
from kenning.store.records import own_text

INSERT_BATCH = 1000  # new chunks of one file inserted with one statement


@dataclass
class VocabularyChanges:
    """Raw words of chunks added and removed in one run, to keep the spelling vocabulary exact:
    `counts` the run's changes so far (kenning.indexing.term_table.RawCountChanges), `removed` the
    removed chunks' texts not counted yet."""

    counts: RawCountChanges = field(default_factory=RawCountChanges)
    removed: list[str] = field(default_factory=list)

    def count_removed(self) -> None:
        """Take the removed texts so far off the counts. A run counts them while its workers finish
        analysing (the writer only waits then): a small re-index of a large index spent most of its
        settling on them otherwise."""
        if self.removed:
            self.counts.remove(self.removed)
            self.removed.clear()

    def take(self) -> dict[str, int]:
        """Each raw word's change in chunks (none at 0), the removed texts counted first."""
        self.count_removed()
        return self.counts.take()


class ChunkRun:
    """The chunks one write adds and removes, and what follows from them (the module docstring).
    The writer's analyzer is the run's: `IndexWriter` settles it before the run starts."""

    def __init__(self, store, analyzer: Analyzer, tuning: WriterTuning, report: IndexReport):
        self.store = store
        self.analyzer = analyzer
        self.tuning = tuning
        self.report = report
        self.live: BitMap = store.read_snapshot().live
        self.vocab = VocabularyChanges()
        self.entities: EntityCollector | None = None  # from `analysing` on
        self.entities_refreshed = False  # they were stale (an older extractor's), and found again
        self.analysis: ChunkAnalysis | None = None
        self.spill: SpillFolder | None = None
        self.spilled: list[SpilledSegment] = []

    @property
    def changed(self) -> bool:
        """The run added or removed chunks."""
        return bool(self.report.chunks_added or self.report.chunks_removed)

    @contextlib.contextmanager
    def analysing(self, early=None) -> Iterator[None]:
        """Within the block, new chunks (`add_chunk`) are analysed and their entities collected
        (kenning.entities.collect; stale ones found again first). `early`: the run's first analysis
        worker, started before the walk (analysis.early_worker). On the way out the workers stop and
        the spill folder goes."""
        self.entities = EntityCollector(self.store)
        self.entities_refreshed = self.entities.refresh_if_stale(self.live)
        self.spill = SpillFolder(self.store.directory)
        self.spill.remove_stale()
        codec = (self.store.posting_encoder, self.store.posting_decoder, self.store.posting_bundler)
        matcher = self.entities.matcher or None
        try:
            analysis = ChunkAnalysis(
                self.analyzer, matcher, codec, self._deliver, self.spill, early=early, tuning=self.tuning
            )
            with analysis:
                self.analysis = analysis
                yield
        finally:
            self.spill.close()

    def add_chunks(self, source_id: int, items: list[tuple]) -> None:
        """Insert a file's new chunks, (ordinal, chunk, content hash) each, and send them to analysis
        (call within `analysing`). They go to the store INSERT_BATCH at a time: one statement and
        one set of text blocks each (kenning.store.text_blocks), and a bounded batch of rows held."""
        for at in range(0, len(items), INSERT_BATCH):
            batch = items[at : at + INSERT_BATCH]
            owns = [own_text(chunk.title, chunk.body) for _, chunk, _ in batch]
            ids = self.store.insert_chunks(source_id, batch, owns)
            for chunk_id, (_, chunk, _), own in zip(ids, batch, owns, strict=True):
                self.analysis.add(chunk_id, chunk.title, own, chunk.meta)
                self.live.add(chunk_id)
            self.report.chunks_added += len(ids)

    def remove_chunks(self, chunk_ids: list[int]) -> None:
        """Delete chunks of a file that stays (its text changed there)."""
        self.vocab.removed.extend(self.store.chunk_texts(chunk_ids))
        self.store.delete_chunks(chunk_ids)
        for chunk_id in chunk_ids:
            self.live.discard(chunk_id)
        self.report.chunks_removed += len(chunk_ids)

    def drop_source(self, source) -> None:
        """Take an indexed file out of the index, with its chunks."""
        self.vocab.removed.extend(
            self.store.chunk_texts([row[0] for row in self.store.chunk_hashes(source.id)])
        )
        removed = self.store.delete_source(source.id)
        for chunk_id in removed:
            self.live.discard(chunk_id)
        self.report.files_removed += 1
        self.report.chunks_removed += len(removed)

    def forget(self, source) -> None:
        """A file this run leaves out on purpose: if an earlier run indexed it (`source` is what the
        index holds of it, or None), it goes."""
        if source is not None:
            self.drop_source(source)

    def _deliver(self, analysed: Analysed) -> None:
        """Take one batch's analysis: its words, its entities and, when it completed one, the
        segment (spilled), after which the run's buffers go to the store (`_segment_done`)."""
        self.vocab.counts.add(analysed.raws)
        for chunk_id, found in analysed.entities:
            self.entities.add_extracted(chunk_id, found)
        if analysed.segment is not None:
            self.spilled.append(analysed.segment)
            self._segment_done()

    def _segment_done(self) -> None:
        """With a segment the analysis completed, write what the run has buffered so far: the
        entities' chunk ids, and the words the new chunks add to the spelling vocabulary once there
        are many (one upsert per distinct word and segment cost many times one at the end)."""
        release_freed_memory()  # an inline segment's arrays are spilled and gone (kenning.indexing.allocator)
        self.entities.flush()
        if len(self.vocab.counts) >= self.tuning.vocabulary_flush_words:
            self.store.apply_vocabulary(self.analyzer.vocabulary_counts(self.vocab.take()))

    def land_new_segments(self) -> None:
        """End the analysis and write the run's spilled segments to the store as one of their live
        chunks (call within `analysing`, after the last chunk). The last batch goes out first, so a
        worker analyses it while the writer counts the removed chunks' words."""
        self.analysis.end_segment()
        self.vocab.count_removed()
        self.analysis.drain()
        land_spilled(self.store, self.spilled, self.live, self.analysis, self.tuning.merge_range_bytes)
        self.spill.close()

    def finish(self, force: bool = False) -> None:
        """The end of an add: `settle` when the run changed chunks (or rebuilt the index); else only
        the entities, if they were stale and found again."""
        if self.changed or force:
            self.settle()
        elif self.entities_refreshed:
            self.entities.flush()

    def settle(self) -> None:
        """The end of every write that changed chunks (its new segments landed): the vocabulary, the
        entities, the live set, then merges (which also drop deleted chunks from the entity
        postings; in the analysis workers when the run has them)."""
        if self.entities is not None:
            self.entities.flush()
        self.store.apply_vocabulary(self.analyzer.vocabulary_counts(self.vocab.take()))
        if self.report.chunks_removed:
            self.store.drop_orphan_vectors()
        self.store.set_live(self.live)
        dead = dead_segments(self.store, self.live)
        if dead:
            self.store.drop_segments(dead)
        merging = merge_plan(self.store, self.live, self.tuning.max_segments)
        if merging:
            merge_segments(self.store, self.live, merging, self.analysis, self.tuning.merge_range_bytes)
            self.store.compact_entities(self.live)
            self.store.release_free_pages()  # the merged segments' pages
            self.report.merged_segments = True
