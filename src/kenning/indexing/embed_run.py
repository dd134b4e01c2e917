"""Vectors in: embed every chunk whose text has no vector from the index's embedder yet.

Texts are embedded shortest first (less padding) and committed in blocks, so an interrupted run
keeps what it finished and the next run resumes. An index holds one model's vectors: a run with
another model is refused unless it replaces them all. A long run saves the HNSW graph every
WriterTuning.graph_save_every vectors, not only at its end; between saves each commit records the
chunks with a vector the saved graph lacks (kenning.indexing.sidefile_sync.GraphLacks), so a reader
meanwhile searches only those exactly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np

from kenning.indexing.reports import EmbedReport
from kenning.indexing.sidefile_sync import SideFileSync
from kenning.models.recorded import model_identity, recorded_embedder
from kenning.store import StorageError

EmbedProgress = Callable[[int, int, float], None]  # (texts embedded, texts in all, texts a second)


class EmbedRun:
    """One `embed` of an index with one embedder. `save_graph` brings the saved graph up to date (the
    writer's, so that it is the one step a run and a write share); `side_files` tells what the saved
    graph lacks."""

    def __init__(
        self,
        store,
        embedder,
        spec: str | None,
        side_files: SideFileSync,
        save_graph: Callable[[], object],
        save_every: int,
    ):
        """`spec`: what the embedder was asked for by (None: an embedder object was given), kept in
        the index's record of the model; `save_every`: vectors between two saves of the graph."""
        self.store = store
        self.embedder = embedder
        self.spec = spec
        self.side_files = side_files
        self.save_graph = save_graph
        self.save_every = save_every

    def run(
        self,
        batch_size: int,
        commit_every: int,
        progress: EmbedProgress | None,
        replace: bool,
        limit: int | None,
    ) -> EmbedReport:
        """Embed the chunks without a vector (at most `limit`), `batch_size` texts a call to the
        embedder and `commit_every` a commit; `replace` drops every other model's vectors."""
        embedder = self.embedder
        fingerprint = embedder.fingerprint()
        recorded = recorded_embedder(self.store)
        if recorded and recorded["fingerprint"] != fingerprint and not replace:
            raise self._mixing_models(recorded)
        with self.store.reading():
            missing = self.store.chunks_missing_vectors(fingerprint)
        missing.sort(key=lambda item: len(item.text))
        report = EmbedReport(model=embedder.model, backend=embedder.backend, total=len(missing))
        if limit is not None:
            missing = missing[:limit]
        started = time.perf_counter()
        description = model_identity(embedder.describe(), self.spec or (recorded or {}).get("spec"))
        if not missing and (recorded is None or replace) and recorded != description:
            with self.store.transaction():
                self._record_embedder(description, replace)
        unsaved = 0  # vectors committed since the graph was last saved
        lacks = self.side_files.graph_lacks(fingerprint)  # and their chunks, for readers (None: not known)
        for start in range(0, len(missing), commit_every):
            block = missing[start : start + commit_every]
            vectors = []
            for i in range(0, len(block), batch_size):
                texts = [item.text for item in block[i : i + batch_size]]
                vectors.append(embedder.embed(texts, kind="document"))
                if progress:
                    done = start + i + len(vectors[-1])
                    progress(done, len(missing), done / max(time.perf_counter() - started, 1e-9))
            with self.store.transaction():
                if start == 0:
                    self._record_embedder(description, replace)
                self.store.put_vectors(fingerprint, [item.text_hash for item in block], np.vstack(vectors))
                if lacks is not None:
                    lacks = lacks.record(self.store, (cid for item in block for cid in item.chunk_ids))
            report.embedded += len(block)
            unsaved += len(block)
            if unsaved >= self.save_every and start + commit_every < len(missing):
                self.save_graph()  # readers meanwhile search the vectors the graph lacks exactly
                unsaved = 0
                lacks = self.side_files.graph_lacks(fingerprint)
        if report.embedded or replace:
            self.save_graph()
        report.remaining = report.total - report.embedded
        report.seconds = time.perf_counter() - started
        report.per_second = report.embedded / report.seconds if report.seconds > 0 else 0.0
        return report

    def _mixing_models(self, recorded: dict) -> StorageError:
        """Why this embedder may not add vectors to an index that holds another model's."""
        embedder = self.embedder
        if (recorded["backend"], recorded["model"]) == (embedder.backend, embedder.model):
            return StorageError(
                f"this index's record of {recorded['model']} ({recorded['backend']}) does not match "
                "what that model gives here (another build, or a changed record: `kenning verify` "
                "checks it): use --replace to re-embed everything"
            )
        return StorageError(
            f"this index holds vectors from {recorded['model']} ({recorded['backend']}); embedding with "
            f"{embedder.model} ({embedder.backend}) would mix models: "
            "use --replace to re-embed everything"
        )

    def _record_embedder(self, description: dict, replace: bool) -> None:
        if replace:
            self.store.keep_only_vectors_of(description["fingerprint"])
        self.store.set_meta("embedder", json.dumps(description))
