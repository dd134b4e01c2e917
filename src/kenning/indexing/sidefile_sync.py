"""The writer's half of the files kept beside an index (kenning.sidefiles): brought up to date after
a commit, so that no reader has to build them.

After a write that changes which live chunks have vectors, the saved HNSW graph
(kenning.sidefiles.ann) takes the new vectors and drops the gone ones, and the index records which
graph it holds (meta VECTOR_GRAPH_META); a store with its own vector index (pgvector) builds that
instead. After a write that changes chunks, the committed generation's field lengths and live mask
are saved (kenning.sidefiles.lengths_file). Both are optional for readers: a missing or stale file
leaves them searching exactly or building the lengths in memory, so a folder that cannot take a file
costs speed, never answers. A store without a folder keeps no side files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np
from pyroaring import BitMap

from kenning.models.recorded import recorded_embedder
from kenning.sidefiles import ann
from kenning.sidefiles.lengths_file import LengthsFile, build_lengths
from kenning.store.errors import decoding
from kenning.store.protocols import Store, VectorSearch
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META


@dataclass
class GraphLacks:
    """What the saved graph of a folder index lacks: the chunks with a committed vector it does not
    hold, as of `generation`. An embed run keeps this record in each of its commits (meta
    VECTOR_GRAPH_LACKS_META) while no other write commits between its own, so a reader of a new
    generation reads the few hundred vectors the graph lacks instead of listing every vector."""

    graph: ann.GraphFile
    ids: BitMap
    generation: int

    def record(self, store, chunk_ids: Iterable[int]) -> GraphLacks | None:
        """In an embed run's commit: add the chunks given vectors and record the whole set. None
        when another write committed since: what it changed is not known here, and readers go back
        to listing the vectors."""
        if store.generation() != self.generation:
            return None
        self.ids.update(chunk_ids)
        store.set_meta(VECTOR_GRAPH_LACKS_META, self.graph.lacks_record(self.ids))
        self.generation += 1  # the generation this commit makes
        return self


class SideFileSync:
    """Saves one index's side files from its committed state (the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.directory = store.directory

    def sync_graph(self) -> dict | None:
        """Bring the saved HNSW graph up to date with the committed vectors, then record it in the
        index (meta VECTOR_GRAPH_META) unless another commit came in between. A crash before the
        record leaves readers building in memory until the next write. Below ann.HNSW_THRESHOLD live
        chunks there is no graph: exact search is fast and perfect there."""
        recorded = recorded_embedder(self.store)
        if recorded and isinstance(self.store, VectorSearch):
            return self._sync_server_index(recorded)
        if not recorded or not self.directory:
            return None
        fingerprint = recorded["fingerprint"]
        graph = ann.GraphFile(self.directory, fingerprint)
        graph.remove_others()
        with self.store.reading():
            snapshot = self.store.read_snapshot()
            if len(snapshot.live) < ann.HNSW_THRESHOLD:
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

    def graph_lacks(self, fingerprint: str) -> GraphLacks | None:
        """What the saved graph of a folder index lacks, when the index knows it: nothing when its
        record says the graph holds exactly the committed vectors, else what the record an earlier
        (interrupted) embed run left says; None otherwise (no graph, a store with its own vector
        index, or no record: readers then list every chunk's vector to find them)."""
        if not self.directory or isinstance(self.store, VectorSearch):
            return None
        graph = ann.GraphFile(self.directory, fingerprint)
        stamp = graph.read_stamp()
        if stamp is None:
            return None
        with self.store.reading():
            generation = self.store.generation()
            recorded = self.store.get_meta(VECTOR_GRAPH_META)
            lacks = graph.read_lacks(self.store.get_meta(VECTOR_GRAPH_LACKS_META))
        with decoding("the vector graph's record"):
            record = json.loads(recorded) if recorded else None
        if isinstance(record, dict) and all(record.get(k) == stamp.get(k) for k in ann.STAMP_KEYS):
            return GraphLacks(graph, BitMap(), generation)
        return GraphLacks(graph, lacks, generation) if lacks is not None else None

    def save_lengths(self) -> None:
        """Save the committed generation's field lengths and live mask for readers to map; a folder
        that cannot take them leaves readers building them."""
        if not self.directory:
            return
        with self.store.reading():
            snapshot = self.store.read_snapshot()
            arrays = build_lengths(snapshot, self.store.load_segment)
        try:
            LengthsFile(self.directory).save(self.store, snapshot, arrays)
        except OSError:
            pass
