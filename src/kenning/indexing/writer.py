"""IndexWriter: the write path, walk -> ingest -> chunk -> analyse -> segment -> commit, then embed.

The writer coordinates; each concern has a module of its own. An `add` walks the paths
(kenning.ingest), then in one transaction brings each file in (kenning.indexing.files: what changed
in it) as a run of chunk changes (kenning.indexing.chunk_run: analysis, segments, merges), and after
the commit brings the side files up to date (kenning.indexing.sidefile_sync). `embed` gives vectors
to the chunks that lack them (kenning.indexing.embed_run), in blocks that each commit, so an
interrupted run keeps what it finished. Sizes that bound memory come in one WriterTuning
(kenning.indexing.tuning).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kenning.analysis.analyzer import Analyzer, AnalyzerConfig
from kenning.indexing.analysis import early_worker
from kenning.indexing.chunk_run import ChunkRun
from kenning.indexing.embed_run import EmbedProgress, EmbedRun
from kenning.indexing.files import FileIndexer, FileRules, files_to_reread
from kenning.indexing.reports import EmbedReport, IndexReport, ProgressCallback
from kenning.indexing.sidefile_sync import SideFileSync
from kenning.indexing.tuning import DEFAULT_TUNING, WriterTuning
from kenning.ingest import ChunkOptions, discover
from kenning.ingest.limits import DEFAULT_MAX_FILE_BYTES
from kenning.query.filters import DEFAULT_COLLECTION
from kenning.store import StorageError

if TYPE_CHECKING:
    from kenning.models.embed.base import Embedder
    from kenning.store.protocols import Store


class IndexWriter:
    """Writes one index: files in (add), files out (remove_collection), vectors in (embed).
    `embedder_for(spec)` gives embedders (the index keeps them loaded between runs); `tuning` the
    sizes that bound a write's memory (the defaults unless given)."""

    def __init__(
        self,
        store: Store,
        analyzer: Analyzer,
        embedder_for: Callable[[str | None], Embedder],
        tuning: WriterTuning | None = None,
    ) -> None:
        self.store = store
        self.analyzer = analyzer
        self.embedder_for = embedder_for
        self.tuning = tuning or DEFAULT_TUNING
        self.directory = store.directory
        self.side_files = SideFileSync(store)

    def add(
        self,
        paths: Sequence[str | os.PathLike[str]],
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
        what changed (kenning.indexing.files).

        `force` rebuilds everything from scratch; `stem` chooses stemming for a new (or forced) index.
        A path that cannot be read is an error in the report, and what it contributed before stays:
        only files that are really gone from a folder that was read are removed. `include_secrets`
        and `follow_symlinks` lift the walk's defaults (kenning.ingest.walk). `substring_index` turns
        on the store's substring index for this index from now on (the chunks already stored are
        indexed in the same commit; kenning.signals.substring). A file larger than `max_file_bytes`
        is skipped unread (kenning.ingest.limits).
        """
        if not collection or not collection.strip():
            raise ValueError("collection name must not be empty")
        if not isinstance(max_file_bytes, int) or max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be a positive number of bytes, got {max_file_bytes!r}")
        started = time.perf_counter()
        report = IndexReport()
        # a run that walks folders starts its first analysis worker now: its interpreter starts
        # while the walk goes on (kenning.indexing.analysis.early_worker)
        walks = any(os.path.isdir(os.path.expanduser(p)) for p in paths)
        early = early_worker() if walks else None
        try:
            found = list(discover(list(paths), include, exclude, include_secrets, follow_symlinks, hidden))
            with self.store.transaction():
                self._configure_analyzer(force, stem)
                jobs = [(each, collection) for each in found]
                if force:  # read inside the lock: a run that committed meanwhile is kept too
                    jobs += files_to_reread(self.store, paths, jobs, report, include_secrets, follow_symlinks)
                    self.store.clear()
                if substring_index:
                    report.substring_indexed = self.store.enable_substring_index()
                run = ChunkRun(self.store, self.analyzer, self.tuning, report)
                rules = FileRules.read(self.store, max_file_bytes, include_secrets)
                with run.analysing(early):
                    files = FileIndexer(run, rules, options or ChunkOptions(), force)
                    files.index(jobs, paths, progress)
                    run.land_new_segments()
                    files.remove_vanished(paths)
                    rules.save(self.store)
                    run.finish(force)
        finally:  # (the run's ChunkAnalysis closes it once it has it; before, this does)
            if early is not None:
                early.close(abort=not early.has_chunks)
        if run.changed or force:
            self.sync_graph()
            self.save_lengths()
        report.generation = self.store.generation()
        report.seconds = time.perf_counter() - started
        return report

    def remove_collection(self, name: str) -> IndexReport:
        """Take every file of a collection out of the index (the files themselves are untouched)."""
        started = time.perf_counter()
        report = IndexReport()
        with self.store.transaction():
            run = ChunkRun(self.store, self.analyzer, self.tuning, report)
            for source in self.store.sources():
                if source.collection == name:
                    run.drop_source(source)
            if report.files_removed:
                run.settle()
        if report.files_removed:
            self.sync_graph()
            self.save_lengths()
        report.generation = self.store.generation()
        report.seconds = time.perf_counter() - started
        return report

    def embed(
        self,
        embedder: str | Embedder | None = None,
        batch_size: int = 32,
        commit_every: int = 512,
        progress: EmbedProgress | None = None,
        replace: bool = False,
        limit: int | None = None,
    ) -> EmbedReport:
        """Embed every chunk whose text has no vector from this embedder yet (at most `limit`), in
        blocks of `commit_every` that each commit (kenning.indexing.embed_run). `embedder`: an
        embedder, a spec for one, or None for the index's own. Vectors from another model are
        refused unless `replace`, which re-embeds everything with the new one.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be 0 or more, got {limit}")
        spec = embedder if isinstance(embedder, str) or embedder is None else None
        embedder = self.embedder_for(spec) if spec is not None or embedder is None else embedder
        save_every = self.tuning.graph_save_every
        run = EmbedRun(self.store, embedder, spec, self.side_files, self.sync_graph, save_every)
        return run.run(batch_size, commit_every, progress, replace, limit)

    def sync_graph(self) -> dict[str, Any] | None:
        """Bring the saved HNSW graph up to date with the committed vectors (SideFileSync.sync_graph)."""
        return self.side_files.sync_graph()

    def save_lengths(self) -> None:
        """Save the committed field lengths for readers to map (SideFileSync.save_lengths)."""
        self.side_files.save_lengths()

    def _configure_analyzer(self, force: bool, stem: bool | None) -> None:
        """Settle the analyzer of this write: `stem` changes stemming for an empty index or with
        `force` only (the postings hold the terms the old setting made)."""
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
