"""An index's vectors as a search and a writer reach them: which model made them, the embedder
that reads a query the same way, and the generation's dense view.

The rule that keeps a handed-over index harmless lives here: the index names its model, never where
that model is served. kenning ships minilm and builds it from the record; a remote model's address
and a local model folder come only from the user (kenning.models.endpoints), else the search says
how to give them. What a search does when the vectors cannot be used is kenning.search.vectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kenning.common.cache import IndexCaches
from kenning.models.endpoints import (
    REMOTE_BACKENDS,
    EndpointError,
    not_configured,
    user_embedder,
    user_endpoint,
)
from kenning.models.recorded import recorded_embedder
from kenning.sidefiles import ann
from kenning.sidefiles.ann import GraphFile
from kenning.signals.dense import DenseView, NewerVectors, ServerDenseView
from kenning.store.protocols import Store, VectorSearch

if TYPE_CHECKING:
    from kenning.lexical.view import LexicalView
    from kenning.models.embed.base import Embedder


class IndexVectors:
    """The vector side of one open index (kenning.search.vectors.VectorSource): embedders built
    once per process and dense views once per generation."""

    def __init__(self, store: Store, caches: IndexCaches):
        self.store, self.caches = store, caches
        self.embedders: dict[str, Embedder] = {}  # by spec, as built or handed over by the caller
        self.newer = NewerVectors()  # vectors a saved graph lacks, read once (kenning.signals.dense)

    def recorded(self) -> dict[str, Any] | None:
        """The embedder that made this index's vectors: backend, model, dim, fingerprint, spec."""
        return recorded_embedder(self.store)

    def recorded_in(self, view: LexicalView) -> dict[str, Any] | None:
        """The record as it stands in `view`'s generation, read once per generation."""
        return self.caches.view(view.generation, "embedder", self.recorded)

    def embedder(self, spec: str | None = None) -> Embedder:
        """`spec` if given, else the model this index records, else the default (minilm). Raises
        EndpointError when the index records a model the user has not said where to find."""
        if not spec:
            recorded = self.recorded()
            chosen = self._chosen(recorded)
            if chosen is not None:
                return chosen
            spec = self._recorded_spec(recorded)
        if spec not in self.embedders:
            from kenning.models.embed import make_embedder  # loads model code only when vectors are used

            self.embedders[spec] = make_embedder(spec)
        return self.embedders[spec]

    def _chosen(self, recorded: dict[str, Any] | None) -> Embedder | None:
        """An embedder this process already built or was handed (by the caller, never by the index)
        whose fingerprint is the one the index records, so a search reuses the model that embedded."""
        if recorded is None:
            return None
        for embedder in self.embedders.values():
            if embedder.describe().get("fingerprint") == recorded["fingerprint"]:
                return embedder
        return None

    def _recorded_spec(self, recorded: dict[str, Any] | None) -> str:
        """The spec that rebuilds the recorded model: from the record only where kenning ships the
        model (minilm); a remote model's address and a model folder from the user, or EndpointError
        saying how to give them."""
        if recorded is None:
            return "minilm"
        backend, model = recorded["backend"], recorded["model"]
        if backend in ("minilm", "none"):
            spec: str = recorded["spec"]  # "minilm", "minilm:float32" or "none": built in
            return spec
        if backend in REMOTE_BACKENDS:
            url = user_endpoint(backend)
            if url is None:
                raise EndpointError(not_configured(backend, model))
            return f"{backend}:{model}@{url}"
        given = user_embedder() if backend == "sentence-transformers" else None
        if given is None:
            raise EndpointError(
                f"this index's vectors come from {backend} model {model!r}, and kenning never loads a "
                f"model an index names: give --embedder {backend}:DIR, or set KENNING_EMBEDDER"
                if backend == "sentence-transformers"
                else f"this index's vectors come from an unknown embedder {backend!r}: give --embedder"
            )
        return given

    def dense_view(self, recorded: dict[str, Any], view: LexicalView) -> DenseView:
        """The generation's dense view, built once: the server's own vector index when the store
        keeps one and the index is large enough to use it; else the vectors, exact or through the
        graph file beside a folder index."""
        key = ("dense", recorded["fingerprint"])
        return self.caches.view(view.generation, key, lambda: self._dense_view(recorded, view))

    def _dense_view(self, recorded: dict[str, Any], view: LexicalView) -> DenseView:
        fingerprint = recorded["fingerprint"]
        if (
            isinstance(self.store, VectorSearch)
            and len(view.live) >= ann.HNSW_THRESHOLD
            and self.store.vector_index_ready(fingerprint)
        ):
            return ServerDenseView(self.store, fingerprint, view.live_mask, recorded["dim"])
        directory = self.store.directory
        graph = GraphFile(directory, fingerprint) if directory else None
        return DenseView(self.store, fingerprint, view.live_mask, graph_file=graph, newer=self.newer)

    def status(self) -> dict[str, Any] | None:
        """The record with how many chunks have a vector and how many lack one (None: no vectors)."""
        recorded = self.recorded()
        if recorded is None:
            return None
        have = self.store.count_vectors(recorded["fingerprint"])
        return {**recorded, "vectors": have, "missing": self.store.counts()["chunks"] - have}
