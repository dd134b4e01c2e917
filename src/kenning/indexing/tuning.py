"""WriterTuning: the sizes that bound an index write's memory and shape its segments, in one value.

An IndexWriter takes one (the defaults unless given) and hands each part of the write path the
fields it reads: chunk analysis (kenning.indexing.analysis) its batch and segment sizes, the segment
builder and merges (kenning.indexing.segments) their memory bounds and segment count, spill files
(kenning.indexing.spill) their mark spacing, the write run and the embed run their flush and save
intervals. None of these changes what an index holds or how it ranks: a write with other values
gives the same postings, vocabulary and vectors, only made in other pieces. Tests pass small values
to make a few chunks take the paths a large corpus takes.

The threshold from which an index keeps an HNSW graph (kenning.sidefiles.ann.HNSW_THRESHOLD) is not
here: readers decide by it too, so it is the index's setting, not the writer's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class WriterTuning:
    """Sizes for one write; every field a positive whole number."""

    batch: int = 2_000
    """Most chunks sent to analysis at once, and the run size from which worker processes analyse:
    a run smaller than this is analysed inline sooner than an interpreter starts."""

    batch_parts: int = 4
    """A batch is this fraction of its segment (at most `batch`), so a segment's worker starts on it
    while the writer still reads the segment's files."""

    early_start: int = 250
    """New chunks after which a run's first worker starts, its first batch not yet full: an
    interpreter takes a fraction of a second to start, which a small re-index would otherwise wait
    for with its first batch made."""

    first_flush_chunks: int = 2_000
    """Chunks a run's first two segments end at; the next two end at twice this, and so on up to
    `flush_chunks`, so the workers take turns on the few batches of a small run."""

    flush_chunks: int = 20_000
    """Most chunks in one segment: with `flush_text`, what bounds a worker's memory (a segment in the
    making is held whole). Also the merge size from which every worker helps merge."""

    flush_text: int = 24_000_000
    """Most characters of text in one segment: a count of chunks alone does not bound memory (long
    chunks hold many tokens), and making a segment needs ~70 bytes a token for a moment (~6
    characters make a token)."""

    kept_raws: int = 400_000
    """Raw tokens whose terms a segment builder keeps from one segment to the next (learning them
    anew costs a worker much of its time); past this it starts a fresh table, bounding it at ~50
    bytes a token plus ~100 a term."""

    spill_mark_bytes: int = 64 << 10
    """Merge memory between two marks of a spill file: a term range of a merge reads at most two
    marks' worth more than it needs."""

    merge_range_bytes: int = 8 << 20
    """Memory per term range of a merge (stored bytes, plus a fixed cost a row), over all the merged
    segments: a few ranges are in flight at once, decoded, joined and encoded."""

    max_segments: int = 10
    """Most segments an index keeps after a write; more and the newest are merged (a query visits
    every segment)."""

    vocabulary_flush_words: int = 1_000_000
    """Distinct raw words a write buffers for the spelling vocabulary before it writes them: one
    write per segment cost many upserts of the same words, one at the end holds them all."""

    graph_save_every: int = 50_000
    """Vectors after which a long embed run saves the HNSW graph, not only at its end: readers
    meanwhile search exactly the vectors the saved graph lacks, so this bounds that exact part."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"WriterTuning.{item.name} must be a positive whole number, got {value!r}")


DEFAULT_TUNING = WriterTuning()
