"""`kenning verify`: check an index end to end and name what is wrong.

Stages, each counted in the report:

    engine    the database's own check of its pages and indexes (SQLite `PRAGMA integrity_check`)
    meta      the commit record: schema version, live-chunk bitmap, analyzer and embedder settings
    chunks    every chunk's text against the hash written with it; every chunk's file is known
    segments  every segment's checksum recomputed (a flipped byte in a postings list shows here);
              posting lists sorted and inside their segment; every live chunk in exactly one segment
    postings  a sample of live chunks analysed again and compared with what the segments hold for them
    vectors   every vector of the index's model: decodable, of its dimension, finite, unit length

Nothing is changed. A problem is something wrong (the exit status says so); a note is something to
know that is not damage (chunks waiting for `kenning embed`, vectors of texts no chunk holds).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap

from kenning.glossary.curation import stored_evidence
from kenning.indexing.segments import SegmentBuilder
from kenning.models.recorded import record_problem, recorded_embedder
from kenning.store.checksum import posting_digest, segment_checksum
from kenning.store.errors import DECODING_ERRORS, IndexDamaged, StorageError
from kenning.store.records import VECTOR_GRAPH_META, embedding_text, own_text, text_hash

MAX_MESSAGES = 20  # per stage; the rest are counted
DEFAULT_SAMPLE = 1000
UNIT_TOLERANCE = 1e-3

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class Problem:
    stage: str
    message: str


@dataclass
class VerifyReport:
    index: str
    problems: list[Problem] = field(default_factory=list)
    more: dict[str, int] = field(default_factory=dict)  # problems past MAX_MESSAGES, per stage
    checked: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, stage: str, message: str) -> None:
        if sum(p.stage == stage for p in self.problems) < MAX_MESSAGES:
            self.problems.append(Problem(stage, message))
        else:
            self.more[stage] = self.more.get(stage, 0) + 1

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "ok": self.ok,
            "problems": [{"stage": p.stage, "message": p.message} for p in self.problems],
            "more_problems": self.more,
            "checked": self.checked,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }


GRAPH_SAME_COSINE = 0.999  # a graph's copy of a vector is float32, as stored: equal up to rounding


def verify(
    store,
    analyzer,
    sample: int | None = DEFAULT_SAMPLE,
    quick: bool = False,
    progress: Progress | None = None,
) -> VerifyReport:
    """Check the index behind `store` (read only). `sample` live chunks are analysed again (None:
    all of them); `quick` asks the engine for its quicker check."""
    started = time.perf_counter()
    report = VerifyReport(index=str(store.directory or getattr(store, "location", "")))
    tell = progress or (lambda stage, done, total: None)
    with store.reading():
        tell("engine", 0, 1)
        for message in store.engine_problems(quick=quick):
            report.add("engine", message)
        report.checked["engine"] = 1
        live = _check_meta(store, report)
        if live is None:
            report.seconds = time.perf_counter() - started
            return report
        chunk_ids = _guarded(report, "chunks", BitMap(), _check_chunks, store, live, report, tell)
        sampled = _sample(live & chunk_ids, sample)
        empty = {"tf": {}, "lens": {}}
        stored = _guarded(report, "segments", empty, _check_segments, store, live, sampled, report, tell)
        _guarded(report, "postings", None, _check_postings, store, analyzer, sampled, stored, report, tell)
        _guarded(report, "vectors", None, _check_vectors, store, report, tell)
        _guarded(report, "graph", None, _check_graph, store, live, report, full=sample is None)
        _guarded(report, "views", None, _check_lengths_file, store, report)
        _guarded(report, "glossary", None, _check_glossary, store, report)
    report.seconds = time.perf_counter() - started
    return report


def _guarded(report: VerifyReport, stage: str, otherwise, check, *args, **kwargs):
    """`check(*args)`, or `otherwise` once what stopped it (a row it could not decode, an
    allocation a crafted size made impossible) is reported as damage at `stage`: the other checks
    still run, and verify reports instead of failing."""
    try:
        return check(*args, **kwargs)
    except DECODING_ERRORS + (StorageError,) as exc:
        report.add(stage, f"cannot be checked: {exc}")
        return otherwise


def _check_meta(store, report: VerifyReport) -> BitMap | None:
    """The committed state's record; None when it cannot be read at all (nothing else can be checked)."""
    try:
        snapshot = store.read_snapshot()
    except Exception as exc:  # a damaged bitmap or row: say so instead of failing the check itself
        report.add("meta", f"the commit record cannot be read ({type(exc).__name__}: {exc})")
        return None
    for key in ("analyzer", "embedder", "secret_sources"):
        raw = store.get_meta(key)
        if raw is None:
            continue
        try:
            json.loads(raw)
        except DECODING_ERRORS as exc:  # RecursionError too: JSON nested past Python's stack
            report.add("meta", f"the {key} record is not valid JSON ({type(exc).__name__})")
    problem = record_problem(store) or _built_in_fingerprint_problem(store)
    if problem:
        report.add("embedder", problem)
    report.checked["meta"] = 1
    return snapshot.live


def _built_in_fingerprint_problem(store) -> str | None:
    """A record of the model kenning ships whose fingerprint that model does not give: the record
    was changed (its vectors cannot be compared with any query kenning embeds)."""
    from kenning.models.embed.base import EmbedderError
    from kenning.models.embed.minilm import PRECISIONS, MiniLMEmbedder

    try:
        recorded = recorded_embedder(store)
    except (ValueError, KeyError, TypeError):
        return "the embedder record cannot be read"
    if recorded is None or recorded["backend"] != "minilm":
        return None
    try:
        known = {MiniLMEmbedder(precision=p).fingerprint() for p in PRECISIONS}
    except EmbedderError:
        return None  # the model package is missing: nothing to compare with
    if recorded["fingerprint"] not in known:
        return "the embedder record says minilm, but its fingerprint is not one minilm gives"
    return None


def _check_chunks(store, live: BitMap, report: VerifyReport, tell: Progress) -> BitMap:
    sources = {s.id: s for s in store.sources()}
    per_source: dict[int, int] = {}
    ids = BitMap()
    total = store.counts()["chunks"]
    for n, (chunk_id, source_id, title, body, stored_hash) in enumerate(store.iter_chunk_hashes(), 1):
        sound = not stored_hash or text_hash(embedding_text(title, body)) == stored_hash
        if sound:  # a damaged text is reported here and not analysed again below
            ids.add(chunk_id)
        per_source[source_id] = per_source.get(source_id, 0) + 1
        if source_id not in sources:
            report.add(
                "chunks", f"chunk {chunk_id} belongs to file #{source_id}, which the index does not know"
            )
        if not sound:
            report.add("chunks", f"chunk {chunk_id}: its text changed after it was written (hash mismatch)")
        if n % 5000 == 0:
            tell("chunks", n, total)
    tell("chunks", total, total)
    missing = live - ids
    if missing:
        report.add("chunks", f"{len(missing)} live chunk id(s) have no chunk row (first: {missing.min()})")
    for source in sources.values():
        if per_source.get(source.id, 0) != source.n_chunks:
            report.add(
                "chunks",
                f"{source.path}: {per_source.get(source.id, 0)} chunk(s) stored, {source.n_chunks} written",
            )
    report.checked["chunks"] = len(ids)
    report.checked["files"] = len(sources)
    return ids


def _check_segments(store, live: BitMap, sampled: BitMap, report: VerifyReport, tell: Progress) -> dict:
    """Checksums and structure of every segment; returns what they hold for the sampled chunks:
    {"tf": {(term, chunk): (tf_title, tf_body)}, "lens": {chunk: (title_len, body_len)}}."""
    stored_sums = store.segment_checksums()
    sizes = store.segment_sizes()
    seen = BitMap()
    twice = BitMap()
    held = {"tf": {}, "lens": {}}
    sample = np.array(sampled.to_array(), dtype=np.uint32)
    for n, (seg_id, _) in enumerate(sizes, 1):
        tell("segments", n - 1, len(sizes))
        where = f"segment {seg_id}"
        try:  # (a crafted row may claim billions of chunks: what that costs is an error here too)
            seg = store.load_segment(seg_id)
            docs = seg.doc_ids
            seg.title_lens, seg.body_lens  # noqa: B018 (decoded here, where a failure is reported)
        except Exception as exc:
            report.add("segments", f"{where} cannot be read ({type(exc).__name__}: {exc})")
            continue
        if not (len(docs) == len(seg.title_lens) == len(seg.body_lens)):
            report.add("segments", f"{where}: {len(docs)} chunk ids but field lengths for a different number")
            continue
        if len(docs) > 1 and not (np.diff(docs.astype(np.int64)) > 0).all():
            report.add("segments", f"{where}: its chunk ids are not in ascending order")
        members = BitMap(docs)
        twice |= seen & members
        seen |= members
        digests = []
        try:
            for row in store.iter_segment_postings(seg_id):  # streamed: a segment can be large
                digests.append((row.term, posting_digest(row.term, *row[1:])))
                problem = _posting_problem(row, docs)
                if problem:
                    report.add("segments", f"{where}, term {row.term!r}: {problem}")
                hit = np.isin(row.ids, sample, assume_unique=True) if len(sample) else ()
                for i in np.flatnonzero(hit):
                    held["tf"][(row.term, int(row.ids[i]))] = (int(row.tf_title[i]), int(row.tf_body[i]))
        except Exception as exc:
            report.add("segments", f"{where}: its postings cannot be read ({type(exc).__name__}: {exc})")
            continue
        stored = stored_sums.get(seg_id, "")
        if not stored:
            report.add("segments", f"{where} has no checksum (written before checksums, and not migrated)")
        elif segment_checksum(docs, seg.title_lens, seg.body_lens, digests) != stored:
            report.add(
                "segments", f"{where}: checksum mismatch, its postings changed after they were written"
            )
        for i in np.flatnonzero(np.isin(docs, sample)) if len(sample) else ():
            held["lens"][int(docs[i])] = (int(seg.title_lens[i]), int(seg.body_lens[i]))
    tell("segments", len(sizes), len(sizes))
    unindexed = live - seen
    if unindexed:
        report.add("segments", f"{len(unindexed)} live chunk(s) are in no segment (first: {unindexed.min()})")
    doubled = live & twice
    if doubled:
        report.add("segments", f"{len(doubled)} live chunk(s) are in more than one segment")
    report.checked["segments"] = len(sizes)
    return held


def _posting_problem(row, docs: np.ndarray) -> str | None:
    ids = row.ids
    if not (len(ids) == len(row.tf_title) == len(row.tf_body)):
        return "ids and term frequencies differ in number"
    if len(ids) > 1 and not (np.diff(ids.astype(np.int64)) > 0).all():
        return "chunk ids are not in ascending order"
    if len(ids) and not _all_held(ids, docs):
        return "lists chunks its segment does not hold"
    if len(ids) and ((row.tf_title.astype(np.int64) + row.tf_body) == 0).any():
        return "a posting with no occurrence"
    if len(row.pos_title) != int(row.tf_title.sum()) or len(row.pos_body) != int(row.tf_body.sum()):
        return "positions and term frequencies disagree"
    return None


def _all_held(ids: np.ndarray, docs: np.ndarray) -> bool:
    """Whether every id is one of the segment's `docs` (ascending), by binary search: np.isin would
    sort the segment's ids again for every row, which makes `kenning verify` of a large index take
    tens of minutes in this one call."""
    at = np.searchsorted(docs, ids)
    return bool((at < len(docs)).all() and (docs[np.minimum(at, len(docs) - 1)] == ids).all())


def _sample(ids: BitMap, size: int | None) -> BitMap:
    """Up to `size` ids spread evenly over the range (all of them for None), the same on every run."""
    if size is None or len(ids) <= size:
        return BitMap(ids)
    array = np.array(ids.to_array())
    picks = np.linspace(0, len(array) - 1, num=max(size, 0)).round().astype(np.int64)
    return BitMap(array[np.unique(picks)])


def _check_postings(
    store, analyzer, sampled: BitMap, held: dict, report: VerifyReport, tell: Progress
) -> None:
    """Analyse the sampled chunks' text again; what the segments hold for them must be exactly that."""
    rows = store.chunks_by_ids(list(sampled))
    builder = SegmentBuilder(analyzer)
    for chunk_id in sampled:
        if chunk_id in rows:
            row = rows[chunk_id]
            builder.add(chunk_id, row.title, own_text(row.title, row.body))
    expected = {}
    for term, ids, tft, tfb, _pt, _pb in builder.rows():
        for i, chunk_id in enumerate(ids.tolist()):
            expected[(term, chunk_id)] = (int(tft[i]), int(tfb[i]))
    lens = {
        cid: (min(t, 65535), min(b, 65535))
        for cid, t, b in zip(builder.doc_ids, builder.title_lens, builder.body_lens, strict=True)
    }
    wrong: dict[int, str] = {}
    for key in expected.keys() | held["tf"].keys():
        want, have = expected.get(key), held["tf"].get(key)
        if want != have and key[1] not in wrong:
            wrong[key[1]] = (
                f"term {key[0]!r}: the text gives tf {want or (0, 0)} (title, body), the index holds "
                f"{have or (0, 0)}"
            )
    for chunk_id, (title_len, body_len) in lens.items():
        if held["lens"].get(chunk_id) != (title_len, body_len) and chunk_id not in wrong:
            wrong[chunk_id] = (
                f"field lengths {held['lens'].get(chunk_id)} stored, {(title_len, body_len)} in its text"
            )
    for chunk_id, why in sorted(wrong.items()):
        report.add("postings", f"chunk {chunk_id}: its postings do not match its text ({why})")
    tell("postings", len(sampled), len(sampled))
    report.checked["postings_sampled"] = len(rows)


def _check_vectors(store, report: VerifyReport, tell: Progress) -> None:
    recorded = recorded_embedder(store)
    if recorded is None:
        report.checked["vectors"] = 0
        return
    fingerprint, dim = recorded["fingerprint"], int(recorded["dim"])
    hashes = {h for _, _, _, _, h in store.iter_chunk_hashes()}
    checked = orphans = others = 0
    for text, fp, vector in store.iter_vectors():
        if fp != fingerprint:
            others += 1
            continue
        checked += 1
        if text not in hashes:
            orphans += 1
        if vector is None:
            report.add("vectors", f"the vector of text {text[:12]}… is not a list of float32 numbers")
        elif len(vector) != dim:
            report.add(
                "vectors", f"the vector of text {text[:12]}… has {len(vector)} numbers, the model gives {dim}"
            )
        elif not np.isfinite(vector).all():
            report.add("vectors", f"the vector of text {text[:12]}… holds NaN or infinite numbers")
        elif abs(float(np.linalg.norm(vector)) - 1.0) > UNIT_TOLERANCE:
            report.add(
                "vectors",
                f"the vector of text {text[:12]}… is not unit length (changed after it was written)",
            )
    tell("vectors", checked, checked)
    report.checked["vectors"] = checked
    missing = store.vectorless_text_hashes(fingerprint)
    if missing:
        report.notes.append(f"{missing} chunk(s) have no vector yet (`kenning embed` adds them)")
    if orphans:
        report.notes.append(f"{orphans} vector(s) belong to text no chunk holds any more (harmless)")
    if others:
        report.notes.append(f"{others} vector(s) come from another model than the index's")


def _check_glossary(store, report: VerifyReport) -> None:
    """Every glossary term's evidence is the JSON the miner wrote (the listings decode it)."""
    terms = store.glossary_terms()
    for term in terms:
        if term.evidence:
            try:
                stored_evidence(term)
            except IndexDamaged as exc:
                why = type(exc.__cause__ or exc).__name__
                report.add("glossary", f"term {term.id}'s evidence is not the JSON kenning writes ({why})")
    report.checked["glossary"] = len(terms)


def _check_lengths_file(store, report: VerifyReport) -> None:
    """A lengths file (kenning.sidefiles.lengths_file) that is there but not used, being unsealed or
    made for another commit: a note, as searches build the arrays from the segments instead."""
    directory = store.directory
    if not directory:
        return
    from kenning.sidefiles.lengths_file import LengthsFile

    lengths = LengthsFile(directory)
    if os.path.lexists(lengths.path) and lengths.open(store, store.read_snapshot()) is None:
        report.notes.append(
            "views/lengths.bin is not one this user's kenning wrote for this commit: unused (searches "
            "build the lengths from the segments; the next write replaces it)"
        )


def _check_graph(store, live: BitMap, report: VerifyReport, full: bool) -> None:
    """The saved HNSW graph (kenning.sidefiles.ann) against the stored vectors, when the index records
    that it holds exactly the committed ones (readers then trust it alone): its chunks are the live
    chunks with a vector, and (`full`) each of its vectors is the stored one. A stored vector that is
    gone or changed while the graph keeps its copy is a vector detached from what dense search
    answers with."""
    directory = store.directory
    recorded = recorded_embedder(store)
    claim = store.get_meta(VECTOR_GRAPH_META)
    if not directory or recorded is None or not claim:
        return
    from kenning.sidefiles import ann

    graph_file = ann.GraphFile(directory, recorded["fingerprint"])
    try:
        record = json.loads(claim)
    except ValueError:
        report.add("graph", "the vector graph's record is not JSON")
        return
    graph = graph_file.open_recorded(record if isinstance(record, dict) else None)
    if graph is None:
        report.notes.append("the saved vector graph is not the one the index records (searched exactly)")
        return
    ids = store.vector_chunk_ids(recorded["fingerprint"])
    ids = ids[np.isin(ids, np.frombuffer(live.to_array(), dtype=np.uint32).astype(np.int64))]
    keys = np.sort(np.asarray(graph.keys, dtype=np.int64))
    lost, extra = np.setdiff1d(keys, ids), np.setdiff1d(ids, keys)
    if len(lost):
        report.add(
            "graph", f"the vector graph holds {len(lost)} chunk(s) without a stored vector (e.g. {lost[0]})"
        )
    if len(extra):
        report.add("graph", f"the vector graph lacks {len(extra)} chunk(s) with a vector (e.g. {extra[0]})")
    report.checked["graph"] = len(keys)
    if not full or not len(ids):
        return
    both = np.intersect1d(keys, ids)
    stored = store.vectors_of(recorded["fingerprint"], both)
    differ = 0
    for start in range(0, len(both), 4096):
        part = both[start : start + 4096]
        held = np.asarray(graph.get(part), dtype=np.float32).reshape(len(part), -1)
        mine = np.stack([stored[int(i)] for i in part]).astype(np.float32)
        cos = np.einsum("ij,ij->i", held, mine) / np.maximum(
            np.linalg.norm(held, axis=1) * np.linalg.norm(mine, axis=1), 1e-12
        )
        differ += int((cos < GRAPH_SAME_COSINE).sum())
    if differ:
        report.add("graph", f"{differ} chunk(s) have a stored vector unlike the vector graph's copy")
