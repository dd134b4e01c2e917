"""The dense signal: cosine similarity between the query's embedding and every live chunk's.

Exact search (one matrix product) is fast and perfect up to tens of thousands of chunks; above
`ann.HNSW_THRESHOLD` live vectors an HNSW graph (usearch) answers instead, opened memory-mapped from
the file the writer keeps (kenning.sidefiles.ann), with the chunks committed since it was saved
searched exactly beside it; with no saved graph, exact search answers. The method used is reported in
every search. HNSW cannot filter while it walks, so it over-fetches and filters afterwards, falling back
to exact search over the allowed chunks when too few survive.
"""

from __future__ import annotations

import json
from functools import partial

import numpy as np

from kenning.common.blas import one_blas_thread
from kenning.kernels.topk import top_k
from kenning.sidefiles import ann
from kenning.signals.base import Channel
from kenning.store.errors import decoding
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META

# live chunks a saved graph may lack before a reader lists every chunk with a vector instead of
# looking the lacking ones up by id: on a large index one listing costs about as much as ten
# thousand lookups, whatever the number lacking
NEWER_BY_ID = 5_000


class DenseView:
    """The vectors of one committed generation for one embedder fingerprint.

    Two sources. When the writer has saved an HNSW graph (kenning.sidefiles.ann), the view is that
    file, memory-mapped: a chunk's vector is read from it, so opening costs no load of the corpus's
    vectors. If the index records that the graph holds exactly its committed vectors, that is all;
    if not (a commit since the graph was saved), the graph still answers for the chunks it holds
    that are live and have a vector, and the newer chunks it lacks are read into a small matrix and
    searched exactly beside it. Without a saved graph the vectors are read from the store into one
    matrix and searched exactly: a graph is never built at query time (ann)."""

    # the chunks a saved graph lacks (searched exactly beside it), and how many of its own are not
    # this view's (deleted, or without a vector now)
    newer_ids = np.zeros(0, dtype=np.int64)
    newer_matrix: np.ndarray | None = None
    _foreign = 0

    def __init__(
        self,
        store,
        fingerprint: str,
        live_mask: np.ndarray,
        hnsw_threshold: int | None = None,
        graph_file: ann.GraphFile | None = None,
        newer: NewerVectors | None = None,
    ):
        """`graph_file`: where the writer keeps the graph; `newer`: the vectors an earlier view of
        this process read beside it (kept by the Index); call inside store.reading()."""
        hnsw_threshold = ann.HNSW_THRESHOLD if hnsw_threshold is None else hnsw_threshold
        self._hnsw = None
        self._sample = None
        self.matrix: np.ndarray | None = None
        self.graph_file = graph_file
        self.graph_source = ""  # "file" when a saved graph answers
        saved, stale = None, False
        if graph_file is not None:
            record = store.get_meta(VECTOR_GRAPH_META)
            with decoding("the vector graph's record"):
                record = json.loads(record) if record else None
            saved = graph_file.open_recorded(record if isinstance(record, dict) else None)
            stale = saved is None
            saved = graph_file.open_latest() if stale else saved
        if saved is not None:
            keys = np.sort(np.asarray(saved.keys, dtype=np.int64))
            held = keys[_alive(keys, live_mask)]  # a live chunk keeps its vector: these are ours
            self.ids, self._foreign = held, len(keys) - len(held)
            if stale:  # and the live chunks the graph lacks that have a vector, searched exactly
                lacks = graph_file.read_lacks(store.get_meta(VECTOR_GRAPH_LACKS_META))
                self._add_newer(store, fingerprint, live_mask, keys, lacks, newer or NewerVectors())
            self._hnsw, self.graph_source = saved, "file"
        else:
            ids, matrix = store.chunk_vectors(fingerprint)
            keep = _alive(ids, live_mask)
            self.ids = ids[keep]
            self.matrix = np.ascontiguousarray(matrix[keep]) if len(ids) else matrix
        self.method = "hnsw" if saved is not None and len(self.ids) >= hnsw_threshold else "exact"

    def _add_newer(self, store, fingerprint, live_mask, keys, lacks, newer: NewerVectors) -> None:
        """The live chunks with a vector that the saved graph lacks. While an embed run commits
        between two saves of the graph, the index records them (`lacks`, kenning.sidefiles.ann); else,
        after a small write, the few live chunks the graph lacks are looked up by id, and when they
        are many the chunks with vectors are listed whole (one scan) instead. Vectors an earlier view
        of this process read are not read again (`newer`): otherwise a server searching while an
        embed run commits every few seconds would read every newer vector again, and list every
        chunk, at each new generation."""
        if lacks is not None:
            lacking = np.frombuffer(lacks.to_array(), dtype=np.uint32).astype(np.int64)
            lacking = np.setdiff1d(lacking[_alive(lacking, live_mask)], keys, assume_unique=True)
        else:
            lacking = np.setdiff1d(np.flatnonzero(live_mask).astype(np.int64), keys, assume_unique=True)
            if len(lacking) > NEWER_BY_ID:
                committed = store.vector_chunk_ids(fingerprint)
                lacking = np.intersect1d(lacking, committed, assume_unique=True)
        self.newer_ids, self.newer_matrix = newer.read(store, fingerprint, lacking)
        if len(self.newer_ids):  # (none of them is in the graph: the two id lists only interleave)
            self.ids = np.sort(np.concatenate([self.ids, self.newer_ids]))

    def __len__(self) -> int:
        return len(self.ids)

    def _rows(self, positions: np.ndarray) -> np.ndarray:
        """The vectors at these positions of `ids`: from the matrix, or from the saved graph and the
        newer chunks' matrix."""
        if self.matrix is not None:
            return self.matrix[positions]
        wanted = self.ids[positions]
        if not len(wanted):
            return np.zeros((0, self._hnsw.ndim), dtype=np.float32)
        if not len(self.newer_ids):  # the graph holds them all: read as they are, no copy
            return np.asarray(self._hnsw.get(wanted), dtype=np.float32).reshape(len(wanted), -1)
        out = np.zeros((len(wanted), self._hnsw.ndim), dtype=np.float32)
        newer = _members(wanted, self.newer_ids)
        if newer.any():
            out[newer] = self.newer_matrix[np.searchsorted(self.newer_ids, wanted[newer])]
        if (~newer).any():
            old = wanted[~newer]
            out[~newer] = np.asarray(self._hnsw.get(old), dtype=np.float32).reshape(len(old), -1)
        return out

    def _positions(self, chunk_ids) -> tuple[np.ndarray, np.ndarray]:
        """(which of `chunk_ids` have a vector, their positions in `ids`)."""
        wanted = np.asarray(chunk_ids, dtype=np.int64)
        pos = np.searchsorted(self.ids, wanted)
        clipped = np.minimum(pos, max(0, len(self.ids) - 1))
        known = (pos < len(self.ids)) & (self.ids[clipped] == wanted) if len(self.ids) else pos < 0
        return known, pos[known]

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (chunk ids, cosine similarities), best first. `allowed`: boolean mask over chunk ids."""
        if not len(self.ids) or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if self.method == "hnsw":
            found = self._search_hnsw(query, k, allowed)
            if found is not None:
                return found
        return self._search_exact(query, k, allowed)

    def _search_exact(self, query, k, allowed):
        ids, positions = self.ids, np.arange(len(self.ids))
        if allowed is not None:
            keep = allowed[np.minimum(ids, len(allowed) - 1)] & (ids < len(allowed))
            ids, positions = ids[keep], positions[keep]
        rows = self._rows(positions)
        with one_blas_thread():
            sims = rows @ query.astype(np.float32)
        return top_k(ids, sims, k)

    def _search_hnsw(self, query, k, allowed):
        # the graph's chunks that are not ours (deleted, or without a vector now) may come back first
        fetch = min(len(self._hnsw), (k * 4 if allowed is not None else k) + self._foreign)
        matches = self._hnsw.search(query.astype(np.float32), fetch)
        ids = np.asarray(matches.keys, dtype=np.int64)
        sims = 1.0 - np.asarray(matches.distances, dtype=np.float64)
        if self._foreign:
            ours = _members(ids, self.ids)
            ids, sims = ids[ours], sims[ours]
        if len(self.newer_ids):  # the chunks the graph lacks, exactly
            with one_blas_thread():
                newer_ids, newer_sims = self.newer_ids, self.newer_matrix @ query.astype(np.float32)
            ids, sims = np.concatenate([ids, newer_ids]), np.concatenate([sims, newer_sims])
        if allowed is not None:
            keep = allowed[np.minimum(ids, len(allowed) - 1)] & (ids < len(allowed))
            ids, sims = ids[keep], sims[keep]
            if len(ids) < k and len(ids) < int(allowed.sum()):
                return None  # the filter is too tight for the graph: let exact search answer
        order = np.lexsort((ids, -sims))[:k]
        return ids[order], sims[order]

    def similarity(self, query: np.ndarray, chunk_ids) -> np.ndarray:
        """Cosine similarity for given chunks (0 for chunks without a vector)."""
        out = np.zeros(len(chunk_ids))
        known, positions = self._positions(chunk_ids)
        if len(positions):
            rows = self._rows(positions)
            with one_blas_thread():
                out[known] = rows @ query.astype(np.float32)
        return out

    def background(self, query: np.ndarray, sample: int = 4096) -> tuple[float, float]:
        """Mean and standard deviation of the query's cosine over the corpus (a fixed random sample of
        at most `sample` vectors): what an unremarkable chunk scores, for this query."""
        if not len(self.ids):
            return 0.0, 0.0
        if self._sample is None:
            rows = np.arange(len(self.ids))
            if len(rows) > sample:
                rows = np.sort(np.random.default_rng(0).choice(rows, sample, replace=False))
            self._sample = np.ascontiguousarray(self._rows(rows))
        with one_blas_thread():
            sims = self._sample @ query.astype(np.float32)
        return float(sims.mean()), float(sims.std())

    def vector(self, chunk_id: int) -> np.ndarray | None:
        known, positions = self._positions([chunk_id])
        return self._rows(positions)[0] if len(positions) else None


class NewerVectors:
    """The vectors of the chunks a saved graph lacks that a process has read, kept from one view to
    the next (a chunk's vector never changes: chunk ids are not reused, and vectors belong to one
    embedder's fingerprint). Holds only what the last view wanted: one graph save's worth at most.
    Its state is one tuple, read once and replaced whole, so views made at once never mix two."""

    def __init__(self) -> None:
        self.state: tuple[str | None, np.ndarray, np.ndarray | None] = (
            None,
            np.zeros(0, dtype=np.int64),
            None,
        )

    def read(self, store, fingerprint: str, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(the ids of `wanted` (sorted) that have a vector, their vectors' matrix): those read
        before taken from here, the rest read from the store."""
        held_for, held_ids, held = self.state
        if held_for != fingerprint or not len(held_ids):
            held_ids, held = np.zeros(0, dtype=np.int64), None
        kept = _members(wanted, held_ids)
        found = store.vectors_of(fingerprint, wanted[~kept]) if (~kept).any() else {}
        ids = np.sort(np.concatenate([wanted[kept], np.fromiter(found, dtype=np.int64, count=len(found))]))
        matrix = None
        if len(ids):
            dim = held.shape[1] if kept.any() else len(next(iter(found.values())))
            matrix = np.empty((len(ids), dim), dtype=np.float32)
            old = _members(ids, held_ids)
            if old.any():
                matrix[old] = held[np.searchsorted(held_ids, ids[old])]
            for row in np.flatnonzero(~old):
                matrix[row] = found[int(ids[row])]
        self.state = (fingerprint, ids, matrix)
        return ids, matrix


def _members(ids: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Which of `ids` are in `sorted_ids` (ascending)."""
    if not len(sorted_ids):
        return np.zeros(len(ids), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return sorted_ids[at] == ids


def _alive(ids: np.ndarray, live_mask: np.ndarray) -> np.ndarray:
    if not len(ids):
        return np.zeros(0, dtype=bool)
    return (ids < len(live_mask)) & live_mask[np.minimum(ids, len(live_mask) - 1)]


# ------------------------------------------------------------------------------------------ the signal
class DenseSignal:
    """Cosine between the query's embedding and each chunk's. A chunk only vectors found must reach
    min_similarity (nearest neighbours always exist); feedback searches again with the query vector
    moved towards the first pass's top chunks."""

    name = "dense"
    weight = 3.0
    knobs = ()
    help = "cosine similarity of embeddings"

    def channel(self, ctx, query) -> Channel | None:
        if ctx.dense is None or not query.text.strip():
            return None
        if query.vector is None:
            query.vector = ctx.embed_query(query.text.strip())
            query.cosine = partial(ctx.dense.similarity, query.vector)
        ids, sims = ctx.dense.search(query.vector, query.depth, query.allowed)
        close = query.found(ids, known=sims)
        info = {
            "method": ctx.dense.method,
            **({"graph": ctx.dense.graph_source} if ctx.dense.graph_source else {}),  # "file"
            **({"newer": len(ctx.dense.newer_ids)} if len(ctx.dense.newer_ids) else {}),
            "vectors": len(ctx.dense),
            "returned": int(close.sum()),
            "below_min_similarity": int(len(close) - close.sum()),
        }
        return Channel(
            self.name, ids[close], sims[close], query.cosine, ctx.dense.background(query.vector), info
        )

    def feedback(self, ctx, query, learned) -> Channel | None:
        if learned.vector is None:
            return None
        ids, sims = ctx.dense.search(learned.vector, query.depth, query.allowed)
        keep = query.found(ids)  # the cosine that admits is the one with the query as asked
        moved = partial(ctx.dense.similarity, learned.vector)
        return Channel(self.name, ids[keep], sims[keep], moved, ctx.dense.background(learned.vector))


class ServerDenseView(DenseView):
    """The DenseView of a store that keeps its own HNSW index (the VectorSearch protocol: pgvector).

    Nothing is loaded when it opens but the ids of the chunks that have vectors: nearest neighbours
    come from the server's index, and the vectors a search needs (its candidates' cosines, the
    background sample) are read by id. The background sample is drawn as DenseView draws it, so
    confidence and fusion see the same numbers; only the neighbour search is approximate."""

    CACHE = 20000  # vectors kept between searches of one generation
    READ_AT_MOST = 256  # vectors read for one similarity call; beyond, the server computes cosines

    def __init__(self, store, fingerprint: str, live_mask: np.ndarray, dim: int):
        ids = store.vector_chunk_ids(fingerprint)
        self.dim = dim
        self.ids = ids[_alive(ids, live_mask)]
        self.store, self.fingerprint, self.live_mask = store, fingerprint, live_mask
        self.method, self.graph_source = "hnsw", "server"
        self.matrix, self._hnsw, self._sample = None, None, None
        self._vectors: dict[int, np.ndarray] = {}

    def _rows(self, positions: np.ndarray) -> np.ndarray:
        """The vectors at these positions of `ids`, read from the store when not cached."""
        chunk_ids = [int(i) for i in self.ids[positions]]
        wanted = [i for i in chunk_ids if i not in self._vectors]
        if wanted and len(self._vectors) + len(wanted) > self.CACHE:
            self._vectors.clear()  # start again, keeping only what this call needs
            wanted = chunk_ids
        if wanted:
            self._vectors.update(self.store.vectors_of(self.fingerprint, wanted))
        if not chunk_ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.array([self._vectors[i] for i in chunk_ids], dtype=np.float32)

    def similarity(self, query: np.ndarray, chunk_ids) -> np.ndarray:
        """As DenseView's; many chunks whose vectors are not at hand (a lexical candidate set) have
        their cosines computed by the server instead of their vectors read."""
        known, positions = self._positions(chunk_ids)
        missing = sum(int(i) not in self._vectors for i in self.ids[positions])
        if missing <= self.READ_AT_MOST:
            return super().similarity(query, chunk_ids)
        found = self.store.cosines_of(self.fingerprint, query, self.ids[positions])
        out = np.zeros(len(chunk_ids))
        out[known] = [found.get(int(i), 0.0) for i in self.ids[positions]]
        return out

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None):
        if not len(self.ids) or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        fetch = min(len(self.ids), k * 4 if allowed is not None else k)
        ids, _ = self.store.nearest_chunks(self.fingerprint, query.astype(np.float32), fetch)
        keep = _alive(ids, self.live_mask)
        if allowed is not None:
            keep &= (ids < len(allowed)) & allowed[np.minimum(ids, len(allowed) - 1)]
            if keep.sum() < k:  # the filter is too tight for the index: exact over what it allows
                return self._search_exact(query, k, allowed)
        ids = ids[keep]
        # the server found them; their cosines are computed here, as DenseView computes them, so an
        # order between near-equal neighbours does not depend on which side did the arithmetic
        sims = super().similarity(query, ids)
        order = np.lexsort((ids, -sims))[:k]
        return ids[order], sims[order]
