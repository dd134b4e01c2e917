"""IndexWriter: the write path, walk -> ingest -> chunk -> analyse -> segment -> embed -> commit.

Indexing is incremental by content: a file whose size and mtime are unchanged is skipped without being
read; a file whose bytes hash the same is skipped after reading; otherwise its chunks are compared by
content hash, so unchanged chunks keep their ids and only new ones are analysed. Files that vanished
from an indexed folder are removed. The whole run is one atomic commit. Embedding runs afterwards, in
blocks that each commit, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from pyroaring import BitMap

from kenning.analysis.analyzer import Analyzer, AnalyzerConfig
from kenning.entities.collect import EntityCollector
from kenning.indexing.allocator import release_freed_memory
from kenning.indexing.analysis import Analysed, ChunkAnalysis, early_worker
from kenning.indexing.segments import dead_segments, land_spilled, merge_plan, merge_segments
from kenning.indexing.spill import SpilledSegment, SpillFolder
from kenning.indexing.term_table import RawCountChanges
from kenning.indexing.tuning import DEFAULT_TUNING, WriterTuning
from kenning.ingest import ChunkOptions, IngestError, binary_reason, discover, parse_file
from kenning.ingest.limits import DEFAULT_MAX_FILE_BYTES, FileSkipped, read_bounded
from kenning.ingest.secrets import screen_chunks
from kenning.ingest.walk import CREDENTIALS_SKIP, path_key
from kenning.models.recorded import model_identity, recorded_embedder
from kenning.query.filters import DEFAULT_COLLECTION
from kenning.sidefiles import ann
from kenning.sidefiles.lengths_file import LengthsFile, build_lengths
from kenning.store import StorageError
from kenning.store.protocols import VectorSearch
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META


def display_path(path: str | Path) -> str:
    """A path as a person wants to read it: relative to the working directory when inside it (bytes
    that are not UTF-8 in a file name shown as \\xNN)."""
    text, cwd = os.fspath(path), os.getcwd()
    inside = cwd.rstrip(os.sep) + os.sep  # by its text, as Path.relative_to does, without its objects
    if text == cwd:
        text = "."
    elif text.startswith(inside):
        text = text[len(inside) :]
    return path_key(text)


@dataclass
class IndexReport:
    """What one `Index.add` run did."""

    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    chunks_added: int = 0
    chunks_kept: int = 0
    chunks_removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not indexed, by design
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why): could not be indexed
    missing: list[str] = field(default_factory=list)  # paths named on the command line that failed
    warnings: list[str] = field(default_factory=list)
    merged_segments: bool = False
    substring_indexed: int = 0  # chunks already stored, put in the substring index when it was turned on
    seconds: float = 0.0
    generation: int = 0

    def merge(self, other: IndexReport) -> None:
        """Add another run's counts to this one (several collections indexed by one command)."""
        for name, value in other.__dict__.items():
            if isinstance(value, bool):
                setattr(self, name, getattr(self, name) or value)
            elif isinstance(value, int | float) and name != "generation":
                setattr(self, name, getattr(self, name) + value)
            elif isinstance(value, list):
                getattr(self, name).extend(value)
        self.generation = other.generation

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["skipped"] = [{"path": p, "reason": r} for p, r in self.skipped]
        d["errors"] = [{"path": p, "error": e} for p, e in self.errors]
        return d

    def skip_reasons(self) -> dict[str, int]:
        """How many files were skipped for each reason (for the summary line)."""
        reasons: dict[str, int] = {}
        for _, reason in self.skipped:
            key = "link outside the indexed folders" if reason.startswith("link to ") else reason
            key = "past a size limit" if "limit" in reason else key
            key = CREDENTIALS_SKIP if reason.startswith("holds credentials") else key
            reasons[key] = reasons.get(key, 0) + 1
        return reasons


ProgressCallback = Callable[[str, int, int], None]


@dataclass
class EmbedReport:
    """What one `Index.embed` run did."""

    model: str = ""
    backend: str = ""
    total: int = 0
    embedded: int = 0
    remaining: int = 0  # still without a vector (a run with `limit` leaves the rest for the next)
    seconds: float = 0.0
    per_second: float = 0.0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class _VocabularyChanges:
    """Raw words of chunks added and removed in one run, to keep the spelling vocabulary exact:
    `counts` the run's changes so far (kenning.indexing.term_table.RawCountChanges), `removed` the
    removed chunks' texts not counted yet."""

    counts: RawCountChanges = field(default_factory=RawCountChanges)
    removed: list[str] = field(default_factory=list)

    def count_removed(self) -> None:
        """Take the removed texts so far off the counts. A run counts them while its workers finish
        analysing (the writer only waits then): a 1% re-index at 1M chunks spent 0.25 s of its 0.3 s
        settling on them."""
        if self.removed:
            self.counts.remove(self.removed)
            self.removed.clear()

    def take(self) -> dict[str, int]:
        """Each raw word's change in chunks (none at 0), the removed texts counted first."""
        self.count_removed()
        return self.counts.take()


# files whose sources one query looks up: a re-index of 10,000 files made 10,000 queries (and a
# PostgreSQL store as many round trips) to learn that 9,900 had not changed
SECRET_SOURCES_META = "secret_sources"  # files indexed with --include-secrets that hold credentials


@dataclass
class _FileRules:
    """What one run may read and keep: the size bound, whether credentials are kept, and the files
    an earlier --include-secrets run indexed with credentials in them (a later run without the flag
    reads these again, unchanged or not, so that it takes them out)."""

    max_file_bytes: int
    include_secrets: bool
    secret_sources: set[str]


SOURCE_LOOKUP = 1_000


class IndexWriter:
    """Writes one index: files in (add), vectors in (embed). `embedder_for(spec)` gives embedders
    (the index keeps them loaded between runs); `tuning` the sizes that bound a write's memory
    (kenning.indexing.tuning; the defaults unless given)."""

    def __init__(
        self,
        store,
        analyzer: Analyzer,
        embedder_for: Callable[[str | None], object],
        tuning: WriterTuning | None = None,
    ):
        self.store = store
        self.analyzer = analyzer
        self.embedder_for = embedder_for
        self.tuning = tuning or DEFAULT_TUNING
        self.directory = store.directory

    def add(
        self,
        paths: Sequence[str | os.PathLike],
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        force: bool = False,
        stem: bool | None = None,
        options: ChunkOptions | None = None,
        progress: ProgressCallback | None = None,
        collection: str = DEFAULT_COLLECTION,
        include_secrets: bool = False,
        follow_symlinks: bool = False,
        hidden: bool = False,
        substring_index: bool = False,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> IndexReport:
        """Index files and folders into a collection. Re-running on the same paths only re-indexes
        what changed.

        `force` rebuilds everything from scratch; `stem` chooses stemming for a new (or forced) index.
        A path that cannot be read is an error in the report, and what it contributed before stays:
        only files that are really gone from a folder that was read are removed. `include_secrets`
        and `follow_symlinks` lift the walk's defaults (kenning.ingest.walk). `substring_index` turns
        on the store's substring index for this index from now on (the chunks already stored are
        indexed in the same commit; kenning.signals.substring). A file larger than `max_file_bytes`
        is skipped unread (kenning.ingest.limits). A file skipped on purpose (a secret, a file past a
        limit) is taken out of the index if an earlier run put it there: what a run leaves out is
        not in the index after it.
        """
        if not collection or not collection.strip():
            raise ValueError("collection name must not be empty")
        if not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be a positive number of bytes, got {max_file_bytes!r}")
        started = time.perf_counter()
        options = options or ChunkOptions()
        report = IndexReport()
        # a run that walks folders starts its first analysis worker now: its interpreter starts
        # while the walk goes on (kenning.indexing.analysis.early_worker)
        walks = any(os.path.isdir(os.path.expanduser(p)) for p in paths)
        early = early_worker() if walks else None
        try:
            files = list(discover(list(paths), include, exclude, include_secrets, follow_symlinks, hidden))
            with self.store.transaction(), contextlib.ExitStack() as stack:
                self._configure_analyzer(force, stem)
                jobs = [(found, collection) for found in files]
                if force:  # read inside the lock: a run that committed meanwhile is kept too
                    jobs += self._rebuild_the_rest(paths, jobs, report, include_secrets, follow_symlinks)
                    self.store.clear()
                if substring_index:
                    report.substring_indexed = self.store.enable_substring_index()
                live = self.store.read_snapshot().live
                vocab = _VocabularyChanges()
                entities = EntityCollector(self.store)
                refreshed = entities.refresh_if_stale(live)
                spill = SpillFolder(self.store.directory)
                spill.remove_stale()
                stack.callback(spill.close)
                spilled: list[SpilledSegment] = []

                def deliver(analysed: Analysed) -> None:
                    vocab.counts.add(analysed.raws)
                    for chunk_id, found in analysed.entities:
                        entities.add_extracted(chunk_id, found)
                    if analysed.segment is not None:  # a write's memory stays bounded
                        spilled.append(analysed.segment)
                        self._segment_done(vocab, entities)

                analysis = stack.enter_context(
                    ChunkAnalysis(
                        self.analyzer,
                        entities.matcher or None,
                        self._codec(),
                        deliver,
                        spill,
                        early=early,
                        tuning=self.tuning,
                    )
                )
                held = set(json.loads(self.store.get_meta(SECRET_SOURCES_META) or "[]"))
                rules = _FileRules(max_file_bytes, include_secrets, set(held))
                seen: set[str] = set()
                unread: list[str] = []  # folders (or files) that failed: what they held before stays
                given = {str(Path(p).expanduser().absolute()) for p in paths}
                keys = [path_key(found.path) for found, _ in jobs]
                known: dict = {}  # the sources of the next SOURCE_LOOKUP files, looked up together
                for n, ((found, into), key) in enumerate(zip(jobs, keys, strict=True), 1):
                    if (n - 1) % SOURCE_LOOKUP == 0:
                        known = self.store.sources_by_paths(keys[n - 1 : n - 1 + SOURCE_LOOKUP])
                    if progress:
                        progress(display_path(found.path), n, len(jobs))
                    if found.error:
                        report.errors.append((display_path(found.path), found.error))
                        unread.append(key)
                        if str(found.path) in given:
                            report.missing.append(display_path(found.path))
                        continue
                    seen.add(key)  # skipped on purpose is not gone either
                    if found.skip:
                        report.skipped.append((display_path(found.path), found.skip))
                        self._forget(known.get(key), live, vocab, report)
                        rules.secret_sources.discard(key)
                        continue
                    report.files_seen += 1
                    self._index_file(
                        found.path,
                        key,
                        known.get(key),
                        force,
                        options,
                        live,
                        analysis,
                        vocab,
                        report,
                        into,
                        rules,
                    )
                analysis.end_segment()  # the last batch out first: a worker analyses it
                vocab.count_removed()  # while the writer counts the removed chunks' words
                analysis.drain()
                land_spilled(self.store, spilled, live, analysis, self.tuning.merge_range_bytes)
                spill.close()
                self._remove_vanished(paths, seen, unread, live, vocab, report)
                if rules.secret_sources != held:
                    self.store.set_meta(SECRET_SOURCES_META, json.dumps(sorted(rules.secret_sources)))
                if report.chunks_added or report.chunks_removed or force:
                    self._settle(live, vocab, report, entities, helpers=analysis)
                elif refreshed:
                    entities.flush()
        finally:  # (the run's ChunkAnalysis closes it once it has it; before, this does)
            if early is not None:
                early.close(abort=not early.has_chunks)
        if report.chunks_added or report.chunks_removed or force:
            self.sync_graph()
            self.save_lengths()
        report.generation = self.store.generation()
        report.seconds = time.perf_counter() - started
        return report

    def _segment_done(self, vocab, entities) -> None:
        """With a segment the analysis completed (spilled: kenning.indexing.spill), write what the
        run has buffered so far (the entities' chunk ids, and the words the new chunks add to the
        spelling vocabulary once there are many), so a write's memory stays bounded however many
        chunks it adds. All inside the run's transaction: a crash still loses the whole run, never
        half of it."""
        release_freed_memory()  # an inline segment's arrays are spilled and gone (kenning.indexing.allocator)
        entities.flush()
        # the spelling vocabulary only when its buffer is large: one upsert per distinct word and
        # flush made the 300k-chunk benchmark spend 7.9 s there against 0.7 s for one at the end
        if len(vocab.counts) >= self.tuning.vocabulary_flush_words:
            self.store.apply_vocabulary(self.analyzer.vocabulary_counts(vocab.take()))

    def _codec(self) -> tuple:
        return self.store.posting_encoder, self.store.posting_decoder, self.store.posting_bundler

    def _settle(self, live: BitMap, vocab, report: IndexReport, entities=None, helpers=None) -> None:
        """The end of every write (its last segment written): the vocabulary, the entities, the live
        set, merges (which also drop deleted chunks from the entity postings; `helpers`: the run's
        ChunkAnalysis, whose workers merge)."""
        if entities is not None:
            entities.flush()
        self.store.apply_vocabulary(self.analyzer.vocabulary_counts(vocab.take()))
        if report.chunks_removed:
            self.store.drop_orphan_vectors()
        self.store.set_live(live)
        dead = dead_segments(self.store, live)
        if dead:
            self.store.drop_segments(dead)
        merging = merge_plan(self.store, live, self.tuning.max_segments)
        if merging:
            merge_segments(self.store, live, merging, helpers, self.tuning.merge_range_bytes)
            self.store.compact_entities(live)
            self.store.release_free_pages()  # the merged segments' pages
            report.merged_segments = True

    def remove_collection(self, name: str) -> IndexReport:
        """Take every file of a collection out of the index (the files themselves are untouched)."""
        started = time.perf_counter()
        report = IndexReport()
        with self.store.transaction():
            live = self.store.read_snapshot().live
            vocab = _VocabularyChanges()
            for source in self.store.sources():
                if source.collection == name:
                    self._drop_source(source, live, vocab, report)
            if report.files_removed:
                self._settle(live, vocab, report)
        if report.files_removed:
            self.sync_graph()
            self.save_lengths()
        report.generation = self.store.generation()
        report.seconds = time.perf_counter() - started
        return report

    def _rebuild_the_rest(
        self, paths, jobs: list, report: IndexReport, include_secrets: bool, follow_symlinks: bool
    ) -> list:
        """A forced rebuild empties the index, so it must read again every file the index holds
        beyond this run's paths (other folders, other collections): the files to add to the run,
        each with its collection. A file under this run's paths that the walk no longer yields, or
        one that no longer exists, leaves the index and is counted as removed."""
        roots = [path_key(Path(p).expanduser().absolute().resolve()) for p in paths]
        this_run = {path_key(found.path) for found, _ in jobs}
        by_collection: dict[str, list[str]] = {}
        for source in self.store.sources():
            if source.path in this_run:
                continue
            under = any(source.path == r or source.path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
            if under or not os.path.lexists(source.path):
                report.files_removed += 1
                report.chunks_removed += source.n_chunks
                continue
            by_collection.setdefault(source.collection, []).append(source.path)
        more = []
        for name, files in by_collection.items():  # named files: the walk's rules for them still hold
            walked = discover(files, None, None, include_secrets, follow_symlinks, hidden=True)
            more += [(found, name) for found in walked]
        return more

    def _forget(self, source, live: BitMap, vocab, report: IndexReport) -> None:
        """A file this run leaves out on purpose: if an earlier run indexed it, it goes."""
        if source is not None:
            self._drop_source(source, live, vocab, report)

    def _drop_source(self, source, live: BitMap, vocab, report: IndexReport) -> None:
        vocab.removed.extend(self.store.chunk_texts([r[0] for r in self.store.chunk_hashes(source.id)]))
        removed = self.store.delete_source(source.id)
        for cid in removed:
            live.discard(cid)
        report.files_removed += 1
        report.chunks_removed += len(removed)

    def _configure_analyzer(self, force: bool, stem: bool | None) -> None:
        has_data = bool(self.store.read_snapshot().live)  # not counts(): four scans at 1M, 0.1 s
        current = self.analyzer.config
        wanted = AnalyzerConfig(stem=current.stem if stem is None else stem, language=current.language)
        if wanted != current and has_data and not force:
            raise StorageError(
                f"index at {self.directory} was built with stemming {'on' if current.stem else 'off'}; "
                "changing it needs a rebuild: add --force"
            )
        if wanted != current or self.store.get_meta("analyzer") is None:
            self.analyzer = Analyzer(wanted)
            self.store.set_meta("analyzer", json.dumps(wanted.to_dict()))

    def _index_file(
        self,
        path: Path,
        key: str,
        source,
        force: bool,
        options,
        live: BitMap,
        analysis: ChunkAnalysis,
        vocab,
        report,
        collection: str,
        rules: _FileRules,
    ) -> None:
        """`key`: the path as the index writes it (path_key); `source`: what the index holds of it."""
        try:
            stat = path.stat()
        except OSError as exc:
            report.errors.append((display_path(path), f"cannot stat: {exc.strerror or exc}"))
            return
        recheck = not rules.include_secrets and key in rules.secret_sources  # indexed with its secrets
        same = source and source.size == stat.st_size and source.mtime_ns == stat.st_mtime_ns
        if same and not force and not recheck:
            if source.collection != collection:
                self.store.touch_source(source.id, stat.st_size, stat.st_mtime_ns, collection)
            report.files_unchanged += 1
            return
        shown = display_path(path)  # (an unchanged file, most files of a re-index, needs no name shown)
        try:
            data = read_bounded(
                path, rules.max_file_bytes, shown, binary_head=lambda head: binary_reason(path, head)
            )
        except FileSkipped as exc:
            report.skipped.append((shown, str(exc).removeprefix(f"{shown}: ")))
            self._forget(source, live, vocab, report)
            return
        except IngestError as exc:
            report.errors.append((shown, str(exc).removeprefix(f"{shown}: ")))
            return
        file_hash = hashlib.sha256(data).hexdigest()
        if source and not force and not recheck and source.content_hash == file_hash:
            # same bytes, new time: chunks that took their time from the file take the new one
            self.store.retime_chunks(source.id, source.mtime_ns / 1e9, stat.st_mtime)
            self.store.touch_source(source.id, stat.st_size, stat.st_mtime_ns, collection)
            report.files_unchanged += 1
            return
        try:
            parsed = parse_file(path, options, display_name=shown, data=data, doc_key=key)
        except FileSkipped as exc:  # past a bound of kenning.ingest.limits
            report.skipped.append((shown, str(exc).removeprefix(f"{shown}: ")))
            self._forget(source, live, vocab, report)
            return
        except IngestError as exc:
            report.errors.append((shown, str(exc)))
            return
        except RecursionError:
            report.errors.append((shown, "cannot parse: nested too deeply"))
            return
        except Exception as exc:  # a parser bug must not lose the whole run
            report.errors.append((shown, f"cannot parse: {type(exc).__name__}: {exc}"))
            return
        report.warnings.extend(parsed.warnings)
        credential, redacted = screen_chunks(parsed.chunks, redact_tokens=not rules.include_secrets)
        if rules.include_secrets and (credential or redacted):
            rules.secret_sources.add(key)  # kept as asked; a run without the flag takes them out
        else:
            rules.secret_sources.discard(key)
            if credential:
                why = f"holds credentials ({credential}) (--include-secrets to index it)"
                report.skipped.append((shown, why))
                self._forget(source, live, vocab, report)
                return
            if redacted:
                kinds = ", ".join(sorted(set(redacted)))
                report.warnings.append(
                    f"{shown}: {len(redacted)} secret(s) redacted ({kinds}); --include-secrets keeps them"
                )
        report.files_indexed += 1
        source_id = self.store.upsert_source(
            key, parsed.kind, stat.st_size, stat.st_mtime_ns, file_hash, collection
        )
        reusable: dict[str, list[int]] = {}
        for chunk_id, content_hash in self.store.chunk_hashes(source_id):
            reusable.setdefault(content_hash, []).append(chunk_id)
        for ordinal, chunk in enumerate(parsed.chunks):
            content_hash = chunk.content_hash()
            if chunk.time is None:
                chunk.time = stat.st_mtime
            pool = reusable.get(content_hash)
            if pool:
                self.store.move_chunk(pool.pop(0), ordinal, chunk)
                report.chunks_kept += 1
                continue
            chunk_id = self.store.insert_chunk(source_id, ordinal, chunk, content_hash)
            analysis.add(chunk_id, chunk.title, chunk.body, chunk.meta)
            live.add(chunk_id)
            report.chunks_added += 1
        stale = [cid for ids in reusable.values() for cid in ids]
        if stale:
            vocab.removed.extend(self.store.chunk_texts(stale))
            self.store.delete_chunks(stale)
            for cid in stale:
                live.discard(cid)
            report.chunks_removed += len(stale)
        self.store.set_source_chunk_count(source_id, len(parsed.chunks))

    def _remove_vanished(
        self, roots, seen: set[str], unread: list[str], live: BitMap, vocab, report: IndexReport
    ) -> None:
        """Drop indexed files that no longer exist (or no longer match) under the given roots; what
        lies under a root or folder that could not be read is kept."""
        kept_prefixes = [(u, u + os.sep) for u in unread]
        # the sources read once, by path: `kenning repair` gives every indexed file as a root, and
        # reading them all again for each root was quadratic (10,100 roots x 10,100 sources: a 1M-chunk
        # repair sat here for minutes)
        sources = sorted(self.store.sources(), key=lambda s: s.path)
        paths = [s.path for s in sources]
        dropped: set[int] = set()
        for root in roots:
            root_key = path_key(Path(root).expanduser().absolute().resolve())
            if any(root_key == u or root_key.startswith(p) for u, p in kept_prefixes):
                continue
            prefix = root_key + os.sep
            inside = []  # the root itself, then every path under it (sorted: they follow it)
            at = bisect.bisect_left(paths, root_key)
            if at < len(paths) and paths[at] == root_key:
                inside.append(sources[at])
            at = bisect.bisect_left(paths, prefix)
            while at < len(paths) and paths[at].startswith(prefix):
                inside.append(sources[at])
                at += 1
            for source in inside:
                kept = any(source.path == u or source.path.startswith(p) for u, p in kept_prefixes)
                if not kept and source.path not in seen and source.id not in dropped:
                    dropped.add(source.id)
                    self._drop_source(source, live, vocab, report)

    def embed(
        self,
        embedder=None,
        batch_size: int = 32,
        commit_every: int = 512,
        progress: Callable[[int, int, float], None] | None = None,
        replace: bool = False,
        limit: int | None = None,
    ) -> EmbedReport:
        """Embed every chunk whose text has no vector from this embedder yet (at most `limit`).

        Texts are embedded shortest first (less padding) and committed every `commit_every`, so an
        interrupted run keeps what it finished and the next run resumes. Vectors from another model are
        refused unless `replace`, which re-embeds everything with the new one.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, got {limit}")
        spec = embedder if isinstance(embedder, str) or embedder is None else None
        embedder = self.embedder_for(spec) if spec is not None or embedder is None else embedder
        fingerprint = embedder.fingerprint()
        recorded = recorded_embedder(self.store)
        if recorded and recorded["fingerprint"] != fingerprint and not replace:
            if (recorded["backend"], recorded["model"]) == (embedder.backend, embedder.model):
                raise StorageError(
                    f"this index's record of {recorded['model']} ({recorded['backend']}) does not match "
                    "what that model gives here (another build, or a changed record: `kenning verify` "
                    "checks it): use --replace to re-embed everything"
                )
            raise StorageError(
                f"this index holds vectors from {recorded['model']} ({recorded['backend']}); embedding with "
                f"{embedder.model} ({embedder.backend}) would mix models: "
                "use --replace to re-embed everything"
            )
        with self.store.reading():
            missing = self.store.chunks_missing_vectors(fingerprint)
        missing.sort(key=lambda item: len(item.text))
        report = EmbedReport(model=embedder.model, backend=embedder.backend, total=len(missing))
        if limit is not None:
            missing = missing[:limit]
        started = time.perf_counter()
        description = model_identity(embedder.describe(), spec or (recorded or {}).get("spec"))
        if not missing and (recorded is None or replace) and recorded != description:
            with self.store.transaction():
                self._record_embedder(description, replace)
        unsaved = 0  # vectors committed since the graph was last saved
        lacks = self._graph_lacks(fingerprint)  # and their chunks, for readers (None: not known)
        for start in range(0, len(missing), commit_every):
            block = missing[start : start + commit_every]
            vectors = []
            for i in range(0, len(block), batch_size):
                vectors.append(
                    embedder.embed([item.text for item in block[i : i + batch_size]], kind="document")
                )
                if progress:
                    done = start + i + len(vectors[-1])
                    progress(done, len(missing), done / max(time.perf_counter() - started, 1e-9))
            with self.store.transaction():
                if start == 0:
                    self._record_embedder(description, replace)
                self.store.put_vectors(fingerprint, [item.text_hash for item in block], np.vstack(vectors))
                if lacks is not None and self.store.generation() != lacks[2]:
                    lacks = None  # another write committed meanwhile: what it changed is not known here
                if lacks is not None:
                    graph, ids, generation = lacks
                    ids.update(cid for item in block for cid in item.chunk_ids)
                    self.store.set_meta(VECTOR_GRAPH_LACKS_META, graph.lacks_record(ids))
                    lacks = (graph, ids, generation + 1)  # the generation this commit makes
            report.embedded += len(block)
            unsaved += len(block)
            if unsaved >= self.tuning.graph_save_every and start + commit_every < len(missing):
                self.sync_graph()  # readers meanwhile search the vectors the graph lacks exactly
                unsaved = 0
                lacks = self._graph_lacks(fingerprint)
        if report.embedded or replace:
            self.sync_graph()
        report.remaining = report.total - report.embedded
        report.seconds = time.perf_counter() - started
        report.per_second = report.embedded / report.seconds if report.seconds > 0 else 0.0
        return report

    def _graph_lacks(self, fingerprint: str) -> tuple[ann.GraphFile, BitMap, int] | None:
        """The saved graph of a folder index, the chunks with a committed vector it lacks, and the
        generation that holds for, when the index knows them: none when its record says the graph
        holds exactly the committed vectors, those of the record an earlier (interrupted) run left;
        None otherwise (readers then list every chunk's vector to find them). An embed run keeps the
        record in each commit (meta VECTOR_GRAPH_LACKS_META) while no other write commits between
        its own: while it commits between two saves of the graph, a reader of a new generation reads
        the few hundred new vectors instead of listing a million."""
        if not self.store.directory or isinstance(self.store, VectorSearch):
            return None
        graph = ann.GraphFile(self.directory, fingerprint)
        stamp = graph.read_stamp()
        if stamp is None:
            return None
        with self.store.reading():
            generation = self.store.generation()
            recorded = self.store.get_meta(VECTOR_GRAPH_META)
            lacks = graph.read_lacks(self.store.get_meta(VECTOR_GRAPH_LACKS_META))
        if recorded and all(json.loads(recorded).get(k) == stamp.get(k) for k in ann.STAMP_KEYS):
            return graph, BitMap(), generation
        return (graph, lacks, generation) if lacks is not None else None

    def save_lengths(self) -> None:
        """Save the committed generation's field lengths and live mask for readers to map
        (kenning.sidefiles.lengths_file); a folder that cannot take them leaves readers building them."""
        directory = self.store.directory
        if not directory:
            return
        with self.store.reading():
            snapshot = self.store.read_snapshot()
            arrays = build_lengths(snapshot, self.store.load_segment)
        try:
            LengthsFile(directory).save(self.store, snapshot, arrays)
        except OSError:
            pass

    def sync_graph(self) -> dict | None:
        """Bring the saved HNSW graph (kenning.sidefiles.ann) up to date with the committed vectors, so
        no reader has to build it, then record it in the index (meta VECTOR_GRAPH_META) unless another
        commit came in between. A crash before the record leaves readers building in memory until the
        next write."""
        recorded = recorded_embedder(self.store)
        if recorded and isinstance(self.store, VectorSearch):
            return self._sync_server_index(recorded)
        if not recorded or not self.store.directory:
            return None
        fingerprint = recorded["fingerprint"]
        graph = ann.GraphFile(self.directory, fingerprint)
        graph.remove_others()
        with self.store.reading():
            snapshot = self.store.read_snapshot()
            if len(snapshot.live) < ann.HNSW_THRESHOLD:  # fewer live chunks than the threshold: no graph
                graph.remove()
                return {"action": "none", "count": len(snapshot.live)}
            ids = self.store.vector_chunk_ids(fingerprint)
            ids = ids[np.isin(ids, np.frombuffer(snapshot.live.to_array(), dtype=np.uint32).astype(np.int64))]
            done = graph.sync(ids, partial(self._vectors_for, fingerprint, len(ids)))
        if done["action"] != "none":
            with self.store.transaction():
                if self.store.generation() == snapshot.generation:  # what this writer saved, not the file
                    self.store.set_meta(VECTOR_GRAPH_META, json.dumps(graph.stamp_for(ids)))
        return done

    def _vectors_for(self, fingerprint: str, of: int, wanted: np.ndarray) -> np.ndarray:
        """The vectors of `wanted` chunks (of `of` with vectors), read by id: a graph's update needs
        only those it lacks, a few of a million after a small write; a rebuild reads them all."""
        if len(wanted) > of // 2:
            every, matrix = self.store.chunk_vectors(fingerprint)
            return matrix[np.searchsorted(every, wanted)]
        found = self.store.vectors_of(fingerprint, wanted)
        return np.stack([found[int(i)] for i in wanted])

    def _sync_server_index(self, recorded: dict) -> dict:
        """A store with its own vector index (pgvector) builds it once the index is large enough for
        searches to use it (ann.HNSW_THRESHOLD live chunks); from then on the server keeps it."""
        with self.store.reading():
            live = len(self.store.read_snapshot().live)
        if live < ann.HNSW_THRESHOLD:
            return {"action": "none", "count": live}
        with self.store.transaction():
            built = self.store.build_vector_index(recorded["fingerprint"], recorded["dim"])
        return {"action": "built" if built else "kept", "count": live}

    def _record_embedder(self, description: dict, replace: bool) -> None:
        if replace:
            self.store.keep_only_vectors_of(description["fingerprint"])
        self.store.set_meta("embedder", json.dumps(description))
