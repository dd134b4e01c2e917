"""What kenning needs from storage, as small protocols; `Store` is all of them on one handle.

Everything above the store speaks these methods and the records in kenning.store.records; no SQL and
no connection object leave kenning/store/. Two stores implement them, SQLite (kenning.store.sqlite)
and PostgreSQL (kenning.store.postgres), sharing their SQL (kenning.store.sql);
tests/store/test_store_contract.py runs against any implementation. What a method promises is written
here, once; an implementation's docstring says only how it keeps the promise, where that matters.

Writes happen inside `transaction()` and become visible together at its end (one commit); reads
inside `reading()` all see one committed generation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from pyroaring import BitMap

from kenning.store.records import (
    ChunkGroup,
    ChunkHead,
    ChunkRow,
    EntityPosting,
    FrontMatterPairs,
    GlossaryGroupRow,
    GlossaryTermRow,
    MissingText,
    RawPostings,
    SegmentData,
    SegmentPostings,
    Snapshot,
    SourceFacets,
    SourceRow,
)


@runtime_checkable
class Commits(Protocol):
    """The commit and snapshot handle: transactions, consistent reads, index-wide metadata."""

    def transaction(self) -> AbstractContextManager[None]: ...
    def reading(self) -> AbstractContextManager[None]:
        """A read transaction: every read inside sees the same committed generation."""

    @property
    def in_transaction(self) -> bool: ...
    def read_snapshot(self) -> Snapshot: ...
    def generation(self) -> int: ...
    def get_meta(self, key: str, default=None): ...
    def meta_items(self) -> dict: ...  # every key but the store's own bookkeeping (migrate)
    def set_meta(self, key: str, value) -> None: ...
    def set_live(self, live: BitMap) -> None: ...
    def release_free_pages(self) -> int: ...
    def counts(self) -> dict: ...
    def size_on_disk(self) -> int: ...
    def clear(self) -> None:
        """Empty every indexed file, chunk, segment, word and entity (a forced rebuild); vectors and
        the glossary stay."""

    def close(self) -> None: ...


@runtime_checkable
class Documents(Protocol):
    """Indexed files (sources) and their chunks."""

    def source_by_path(self, path: str) -> SourceRow | None: ...
    def sources_by_paths(self, paths: Sequence[str]) -> dict[str, SourceRow]:
        """The sources of those paths that have one, by path (in a few statements, not one a path)."""

    def sources(self) -> list[SourceRow]: ...
    def upsert_source(
        self, path: str, kind: str, size: int, mtime_ns: int, content_hash: str, collection: str
    ) -> int: ...
    def touch_source(self, source_id: int, size: int, mtime_ns: int, collection: str) -> None: ...
    def set_source_chunk_count(self, source_id: int, n: int) -> None: ...
    def delete_source(self, source_id: int) -> list[int]:
        """Remove a source and its chunks; returns the removed chunk ids."""

    def collections(self) -> dict[str, int]: ...  # sources per collection
    def collection_chunks(self) -> dict[str, int]: ...  # chunks per collection
    def rename_collection(self, old: str, new: str) -> int:
        """Files of collection `old` now belong to `new` (glossary groups scoped to it follow)."""

    def chunk_hashes(self, source_id: int) -> list[tuple[int, str]]: ...
    def insert_chunks(
        self, source_id: int, items: Sequence[tuple], own_texts: Sequence[str] | None = None
    ) -> list[int]:
        """New chunks of one file, (ordinal, chunk, content hash) each, written together (their
        bodies in shared compressed blocks where the store keeps them so); their ids, in order.
        `own_texts`: each one's own text (kenning.store.records.own_text), when the caller has it."""

    # copies from another store, ids kept (kenning.integrity.migrate); later new ids come after them
    def restore_source(self, row: SourceRow) -> None: ...
    def restore_chunks(self, rows: Sequence[ChunkRow]) -> None: ...
    def move_chunk(self, chunk_id: int, ordinal: int, chunk) -> None:
        """An unchanged chunk of a changed file: update its position and time, keep its id and
        postings."""

    def retime_chunks(self, source_id: int, old_time: float, new_time: float) -> None:
        """Chunks of a source whose time was the file's old modification time take the new one."""

    def delete_chunks(self, ids: list[int]) -> None: ...
    def chunks_by_ids(self, ids: Sequence[int]) -> dict[int, ChunkRow]: ...
    def chunk_heads(self, ids: Sequence[int]) -> dict[int, ChunkHead]: ...
    def chunk_heads_and_groups(
        self, ids: Sequence[int]
    ) -> tuple[dict[int, ChunkHead], dict[int, ChunkGroup]]:
        """`chunk_heads(ids)`, and the conversation and message ids of the message-log chunks among
        `ids` (others are absent), read at once."""

    def chunks_of_doc(self, doc_key: str) -> list[ChunkRow]: ...
    def chunk_texts(self, ids: Sequence[int]) -> list[str]:
        """Title and body of chunks (before they are deleted, to keep the vocabulary exact)."""

    def iter_chunk_texts(self) -> Iterator[tuple[int, str, str]]:
        """(id, title, body) of every chunk, by id."""


@runtime_checkable
class Postings(Protocol):
    """Immutable inverted-index segments, and the spelling vocabulary."""

    def segment_sizes(self) -> list[tuple[int, int]]: ...  # (segment id, chunks in it), oldest first
    def load_segment(self, segment_id: int) -> SegmentData: ...
    def load_postings(self, segment_id: int, terms: Sequence[str]) -> dict[str, RawPostings]:
        """Postings of each term present in the segment."""

    # several segments' terms at once: {segment id: [terms]} -> {segment id: {term: postings}}
    def load_postings_of(self, wanted: dict[int, Sequence[str]]) -> dict[int, dict[str, RawPostings]]: ...
    # each term's postings summed over segments, deleted chunks' included, without reading them
    def posting_counts(self, segment_ids: Sequence[int], terms: Sequence[str]) -> dict[str, int]: ...
    def load_positions(self, segment_id: int, term: str, field: str) -> np.ndarray | None:
        """A term's positions in one field of one segment, concatenated in posting order."""

    def iter_segment_postings(self, segment_id: int) -> Iterator[SegmentPostings]:
        """Every posting row of a segment, positions included, terms ascending (merges rely on it)."""

    # merges move rows as stored and decode them where the work is done (posting_decoder); the
    # decoder is module-level so a merge can decode its term ranges in worker processes
    # (kenning.indexing.segments.merge_segments)
    posting_decoder: Callable[[tuple], SegmentPostings]

    def raw_postings(self, segment_id: int, low: str | None = None, high: str | None = None) -> list[tuple]:
        """A segment's rows as stored (for `posting_decoder`), terms ascending, those in [low, high)."""

    # the same rows as a merge hands them to a worker: that list, or an object whose expand() gives
    # it (rows the store keeps packed, opened in the worker)
    def raw_posting_part(
        self, segment_id: int, low: str | None = None, high: str | None = None
    ) -> object: ...
    def term_bounds(self, segment_ids: Sequence[int], budget: int) -> list[str]: ...

    # encodes one posting row (term, ids, tf_title, tf_body, pos_title, pos_body) -> (row, digest);
    # module-level, so an analysis worker process can run it (kenning.indexing.analysis)
    posting_encoder: Callable[..., tuple[tuple, bytes]]
    # turns a merged term range's (row, digest) pairs into what write_encoded_segment takes of a whole
    # range, in the worker that merged it (None: the pairs themselves); module-level like the encoder
    posting_bundler: Callable[[list], object] | None

    def write_encoded_segment(
        self, doc_ids: np.ndarray, title_lens: np.ndarray, body_lens: np.ndarray, encoded: Iterable[tuple]
    ) -> int:
        """Write one immutable segment and return its id: `doc_ids` ascending; `encoded` yields
        (row, digest) pairs from `posting_encoder`, terms each once, each row's ids ascending and
        each field's positions concatenated in posting order (tf positions per posting), or a term
        range of them as `posting_bundler` made it."""

    def drop_segments(self, segment_ids: Sequence[int]) -> None: ...
    def drop_postings_range(self, segment_ids: Sequence[int], low: str | None, high: str | None) -> None:
        """Delete the segments' rows of terms in [low, high) (None: open). A merge calls it on each
        range it has read, so the merged rows can reuse the space as it writes them."""

    def segment_checksums(self) -> dict[int, str]:
        """Each segment's checksum as written at its commit ('' if it was never recorded)."""

    def count_terms(self) -> int: ...
    def apply_vocabulary(self, delta: dict[str, int]) -> None: ...
    def vocabulary(self) -> dict[str, int]: ...


@runtime_checkable
class Vectors(Protocol):
    """One vector per (embedded text, embedder fingerprint)."""

    def chunks_missing_vectors(self, fingerprint: str) -> list[MissingText]: ...
    def put_vectors(self, fingerprint: str, hashes: list[str], vectors: np.ndarray) -> None: ...
    def chunk_vectors(self, fingerprint: str) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, float32 matrix) of every chunk that has a vector from this embedder."""

    def drop_orphan_vectors(self) -> int:
        """Drop the vectors whose text no chunk holds any more (after deletions); returns how many."""

    def keep_only_vectors_of(self, fingerprint: str) -> None:
        """Drop every other embedder's vectors (switching models)."""

    def count_vectors(self, fingerprint: str) -> int: ...
    def vector_chunk_ids(self, fingerprint: str) -> np.ndarray:
        """Ids of every chunk that has a vector from this embedder, ascending (no vectors read)."""

    def vectors_of(self, fingerprint: str, chunk_ids) -> dict[int, np.ndarray]:
        """The vectors of these chunks (those that have one)."""


@runtime_checkable
class VectorSearch(Protocol):
    """Optional: a store whose server keeps its own nearest-neighbour index (pgvector HNSW), so no
    process loads the vectors or builds a graph (kenning.signals.dense.ServerDenseView)."""

    def vector_index_ready(self, fingerprint: str) -> bool: ...
    def build_vector_index(self, fingerprint: str, dim: int) -> bool: ...
    def nearest_chunks(
        self, fingerprint: str, query: np.ndarray, fetch: int
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def cosines_of(self, fingerprint: str, query: np.ndarray, chunk_ids) -> dict[int, float]: ...


@runtime_checkable
class MetadataFilters(Protocol):
    """What scope filters need: source facets, and chunk conditions the store can index."""

    def source_facets(self) -> list[SourceFacets]: ...
    def chunks_matching(
        self,
        source_ids: Sequence[int] | None,
        since: float | None,
        before: float | None,
        meta: FrontMatterPairs,
    ) -> BitMap:
        """Chunks of these sources (None: of every source) whose time is in [since, before) and whose
        front matter has each (key, value) (a list value matches any of its items; case does not
        matter)."""


@runtime_checkable
class GlossaryTables(Protocol):
    """The glossary's alias groups and their members (small: read whole, changed row by row)."""

    def glossary_groups(self) -> list[GlossaryGroupRow]: ...
    def glossary_terms(self) -> list[GlossaryTermRow]: ...
    def add_glossary_group(self, scope: str, origin: str) -> int: ...
    def add_glossary_term(
        self,
        group_id: int,
        surface: str,
        key: str,
        status: str,
        protected: str | None,
        origin: str,
        evidence: str | None,
    ) -> int: ...
    def update_glossary_term(self, term_id: int, status: str, group_id: int | None = None) -> None: ...
    def delete_glossary_term(self, term_id: int) -> None: ...
    def set_glossary_group_origin(self, group_id: int, origin: str) -> None: ...
    def delete_glossary_group(self, group_id: int) -> None: ...


@runtime_checkable
class Integrity(Protocol):
    """What `kenning verify` reads to check an index end to end (kenning.integrity)."""

    def engine_problems(self, quick: bool = False) -> list[str]:
        """The database engine's own findings about the index ([] when all is well)."""

    def iter_chunk_hashes(self) -> Iterator[tuple[int, int, str, str, str]]:
        """(id, source id, title, body, stored text hash) of every chunk, by id."""

    def iter_vectors(self) -> Iterator[tuple[str, str, np.ndarray | None]]:
        """(text hash, fingerprint, vector) of every stored vector; None for one that is not float32s."""

    def vectorless_text_hashes(self, fingerprint: str) -> int:
        """How many chunks have no vector from this embedder."""


@runtime_checkable
class EntityTables(Protocol):
    """Entity posting lists (roaring bitmaps of chunk ids) for the entity graph."""

    def entity_postings(self) -> list[EntityPosting]: ...
    def add_entity_postings(self, added: dict[str, tuple[str, str, BitMap]]) -> None:
        """Union chunk ids into each entity's bitmap (a new entity keeps its first surface form)."""

    def compact_entities(self, live: BitMap) -> int:
        """Drop dead chunk ids from every bitmap and entities left with none; returns how many went."""

    def clear_entities(self) -> None: ...


@runtime_checkable
class Substrings(Protocol):
    """The optional substring index: chunks that may hold a casefolded word (three characters or
    more), a superset the substring signal confirms on the text. The store keeps it in step with
    every chunk it inserts or deletes once it is enabled."""

    def substring_index_enabled(self) -> bool: ...
    def enable_substring_index(self) -> int:
        """Create the index and index every chunk already stored; returns how many (0 if it existed)."""

    def substring_candidates(self, word: str) -> np.ndarray:
        """Ids of the chunks that may hold `word` (casefolded, three characters or more): every chunk
        that does, and perhaps a few that do not."""

    def substring_texts(self, ids: Sequence[int]) -> dict[int, str]:
        """The text the substring signal searches (kenning.store.records.substring_text) of each of
        these chunks."""


@runtime_checkable
class Store(
    Commits,
    Documents,
    Postings,
    Vectors,
    MetadataFilters,
    GlossaryTables,
    EntityTables,
    Integrity,
    Substrings,
    Protocol,
):
    """Everything kenning keeps, behind one handle."""

    # the folder the index keeps its side files in (the vector graph, the lengths file, a write's
    # spill files); None for a store on a server, which keeps none
    directory: Path | None
