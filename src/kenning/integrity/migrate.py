"""`kenning migrate`: copy an index between stores (a folder and a PostgreSQL schema, either way),
vectors included, so nothing is embedded again; then check that the copy holds what the original
holds.

Everything goes through the Store protocols, in one transaction on the destination: a failed or
interrupted copy leaves the destination as it was. Chunk and file ids are kept (the live set,
postings and entity bitmaps name chunks by id); segments are written again row for row, with their
checksums computed afresh. The original is only read, inside one snapshot.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from kenning.store import StorageError, open_store
from kenning.store.protocols import Store

BATCH = 1000  # chunks or vectors per step
Progress = Callable[[str, int, int], None]


@dataclass
class MigrateReport:
    source: str
    destination: str
    copied: dict = field(default_factory=dict)  # what went across, by kind
    checks: dict = field(default_factory=dict)  # each count on both sides: {"chunks": [n, n], ...}
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(a == b for a, b in self.checks.values())

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def migrate(source: str, destination: str, progress: Progress | None = None) -> MigrateReport:
    """Copy the index at `source` (folder or URL) into `destination`, which must hold no index yet
    (or an empty one). Raises StorageError naming the problem; the report's checks compare counts."""
    import time

    started = time.perf_counter()
    progress = progress or (lambda stage, n, total: None)
    src = open_store(source, create=False)
    try:
        dst = open_store(destination, create=True)
        try:
            report = MigrateReport(_shown(src, source), _shown(dst, destination))
            if dst.counts()["chunks"] or dst.counts()["sources"] or dst.glossary_terms():
                raise StorageError(
                    f"{report.destination} already holds an index: migrate copies into an empty one only"
                )
            with src.reading(), dst.transaction():
                _copy(src, dst, report, progress)
            report.checks = _compare(src, dst)
        finally:
            dst.close()
    finally:
        src.close()
    if report.ok:
        _save_graph(destination)
    report.seconds = time.perf_counter() - started
    return report


def _copy(src: Store, dst: Store, report: MigrateReport, progress: Progress) -> None:
    for key, value in src.meta_items().items():
        dst.set_meta(key, value)
    sources = src.sources()
    for row in sources:
        dst.restore_source(row)
    chunk_ids = [row[0] for row in src.iter_chunk_hashes()]
    for start in range(0, len(chunk_ids), BATCH):
        rows = src.chunks_by_ids(chunk_ids[start : start + BATCH])
        dst.restore_chunks([rows[chunk_id] for chunk_id in chunk_ids[start : start + BATCH]])
        progress("chunks", min(start + BATCH, len(chunk_ids)), len(chunk_ids))
    segments = src.segment_sizes()
    for n, (segment_id, _size) in enumerate(segments, 1):
        data = src.load_segment(segment_id)
        rows = (dst.posting_encoder(*src.posting_decoder(raw)) for raw in src.raw_postings(segment_id))
        dst.write_encoded_segment(data.doc_ids, data.title_lens, data.body_lens, rows)
        progress("segments", n, len(segments))
    dst.set_live(src.read_snapshot().live)
    dst.apply_vocabulary(src.vocabulary())
    report.copied["vectors"] = _copy_vectors(src, dst, progress)
    groups = {}
    for group in src.glossary_groups():
        groups[group.id] = dst.add_glossary_group(group.scope, group.origin)
    for term in src.glossary_terms():
        dst.add_glossary_term(
            groups[term.group_id],
            term.surface,
            term.key,
            term.status,
            term.protected,
            term.origin,
            term.evidence,
        )
    entities = src.entity_postings()
    dst.add_entity_postings({e.key: (e.surface, e.kind, e.docs) for e in entities})
    if src.substring_index_enabled():
        dst.enable_substring_index()
    report.copied.update(
        sources=len(sources),
        chunks=len(chunk_ids),
        segments=len(segments),
        glossary_terms=len(src.glossary_terms()),
        entities=len(entities),
        substring_index=src.substring_index_enabled(),
    )


def _copy_vectors(src: Store, dst: Store, progress: Progress) -> int:
    """Every stored vector, by fingerprint, in batches (as written: no embedder runs)."""
    batch: dict[str, tuple[list, list]] = {}
    copied = 0

    def flush(fingerprint: str) -> None:
        hashes, vectors = batch.pop(fingerprint)
        dst.put_vectors(fingerprint, hashes, np.vstack(vectors))

    for text_hash, fingerprint, vector in src.iter_vectors():
        if vector is None:
            raise StorageError(
                f"the vector of text {text_hash} ({fingerprint}) is damaged: run `kenning verify`"
            )
        hashes, vectors = batch.setdefault(fingerprint, ([], []))
        hashes.append(text_hash)
        vectors.append(vector)
        copied += 1
        if len(hashes) >= BATCH:
            flush(fingerprint)
            progress("vectors", copied, 0)
    for fingerprint in list(batch):
        flush(fingerprint)
    return copied


def _compare(src: Store, dst: Store) -> dict:
    """The counts that must agree between the original and the copy, each as [original, copy]."""

    def facts(store: Store) -> dict:
        with store.reading():
            snapshot = store.read_snapshot()
            out = dict(store.counts())
            out.pop("segments")
            out["live_chunks"] = len(snapshot.live)
            out["postings_terms"] = store.count_terms()
            out["vocabulary"] = len(store.vocabulary())
            out["glossary_terms"] = len(store.glossary_terms())
            out["entities"] = len(store.entity_postings())
            fingerprints = sorted({fp for _, fp, _ in store.iter_vectors()})
            for fp in fingerprints:
                out[f"vectors {fp[:24]}"] = store.count_vectors(fp)
            out["live_digest"] = hashlib.sha1(snapshot.live.to_array().tobytes()).hexdigest()[:16]
            out["meta"] = sorted((k, str(v)) for k, v in store.meta_items().items() if k != "live")
        return out

    mine, theirs = facts(src), facts(dst)
    return {key: [mine.get(key), theirs.get(key)] for key in sorted(set(mine) | set(theirs))}


def _save_graph(location: str) -> None:
    """The copy's nearest-neighbour index, as `kenning embed` leaves it: the HNSW graph file beside a
    folder index, or the server's pgvector index, so the first search need not build one; and a
    folder's saved lexical arrays (kenning.sidefiles.lengths_file), as any write leaves them."""
    from kenning.api.index import Index

    with Index(location, create=False) as index:
        writer = index.writer()
        writer.sync_graph()
        writer.save_lengths()


def _shown(store, location) -> str:
    return getattr(store, "location", None) or str(location)
