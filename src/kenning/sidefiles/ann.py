"""The HNSW graph over an index's vectors, kept on disk beside the store and opened memory-mapped.

Building the graph is the slow part of dense search on a large index (it took 330 s before the
first hybrid query on 100k chunks), so a reader must never build it. The writer brings the file up
to date after every write that changes which live chunks have vectors: it adds the new ids and
removes the gone ones (rebuilding when too many are gone), then replaces the file atomically. A
reader opens the file as a memory-mapped view. When the index records that the file holds exactly the
chunks the reader's generation has vectors for, that is all. Otherwise (a write committed and has not
saved the graph yet, an embed run still committing its batches, a write that died before saving) the
reader still opens the last saved graph: a chunk's vector never changes (chunk ids are never reused,
and a vector belongs to one model's fingerprint, which names the file), so the graph is right for the
chunks it holds; those no longer live or without a vector are dropped from its answers, and the
chunks it lacks are searched exactly beside it (kenning.signals.dense). With no saved graph at all,
readers search exactly. Building the graph in a reader instead took 342 s at 265k vectors, and
between a commit and the graph's save every new process paid it.

Below `HNSW_THRESHOLD` live vectors (50,000 unless $KENNING_HNSW_THRESHOLD says otherwise) exact
search is fast and perfect, and no file is kept.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np

from kenning.sidefiles.seal import is_sealed, read_regular, seal

# live vectors from which the graph answers instead of exact search (KENNING_HNSW_THRESHOLD)
HNSW_THRESHOLD = int(os.environ.get("KENNING_HNSW_THRESHOLD", "50000"))
# The scale benchmark's synthetic chunks are the hard case (their 10th and 11th neighbours lie 0.002
# apart). Recall@10 against exact search with its 400 queries (benchmarks/tune_ann.py --index DIR
# --queries FILE; docs/architecture.md): at 10k, 0.886 with (16, 128, 192), 0.980 with (16, 192, 512); at
# 100k, 0.910 with (16, 192, 512), 0.954 with (16, 192, 1024) at 9.9 ms a query, 0.973 with
# (32, 192, 1024) for a 31% slower build. Real vectors (the dev sets) reach 0.975 at (16, 128, 192).
# Recall falls as the graph grows: at the 1M tier with 796,680 vectors, searching with 1024 gave 0.9515
# (20.2 ms a query), 1536 0.968 (28.7 ms), 2048 0.977 (37.3 ms); it was 0.984 at 302k and 0.957 at 650k
# with 1024. 1536 keeps the target (0.95) with room at a million, for +8.5 ms a search.
CONNECTIVITY = 16
EXPANSION_ADD = 192
EXPANSION_SEARCH = 1536
STAMP_KEYS = ("fingerprint", "count", "digest")
STAMP_MAX_BYTES = 4096  # a stamp is a fingerprint, a count, a digest and a seal
REBUILD_SHARE = 0.2  # rebuild instead of removing when this share of the graph's ids is gone


# each graph file's last memory-mapped view in this process, with what identifies the file it maps
# (a replaced file is a new inode; the old map stays valid for whoever still holds it)
_OPENED: dict[str, tuple[tuple, object]] = {}


def ids_digest(ids: np.ndarray) -> str:
    """A stamp of a set of chunk ids (sorted), so a reader can tell a graph is for its generation."""
    return hashlib.sha1(np.sort(np.asarray(ids, dtype=np.int64)).tobytes()).hexdigest()


def new_graph(ndim: int):
    import onnxruntime  # noqa: F401  (loading onnxruntime after usearch crashes the process)
    from usearch.index import Index as HnswIndex

    return HnswIndex(
        ndim=ndim,
        metric="cos",
        dtype="f32",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _stamp_text(stamp: dict) -> str:
    return "|".join(str(stamp.get(k)) for k in STAMP_KEYS)


class GraphFile:
    """`<index dir>/ann/<fingerprint>.usearch` and its stamp (`.json`: fingerprint, count, digest)."""

    def __init__(self, directory: str | os.PathLike, fingerprint: str):
        safe = hashlib.sha1(fingerprint.encode()).hexdigest()[:16]
        self.folder = Path(directory) / "ann"
        self.graph = self.folder / f"{safe}.usearch"
        self.stamp = self.folder / f"{safe}.json"
        self.fingerprint = fingerprint

    def stamp_for(self, ids: np.ndarray) -> dict:
        return {"fingerprint": self.fingerprint, "count": len(ids), "digest": ids_digest(ids)}

    def read_stamp(self) -> dict | None:
        """The saved graph's stamp, when the graph is there and this user's kenning wrote it (its
        seal holds, kenning.sidefiles.seal): a graph from anywhere else is never opened."""
        raw = read_regular(self.stamp, STAMP_MAX_BYTES)
        try:
            stamp = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            return None
        if not isinstance(stamp, dict) or stamp.get("fingerprint") != self.fingerprint:
            return None
        if not is_sealed(self.graph, _stamp_text(stamp), stamp.get("seal")):
            return None
        return stamp

    def open_view(self, ids: np.ndarray):
        """The saved graph, memory-mapped, if it holds exactly `ids`; else None."""
        return self.open_recorded(self.stamp_for(ids))

    def open_recorded(self, record: dict | None):
        """The saved graph, memory-mapped, if its stamp is `record` (what the index says the writer
        saved for the committed vectors); else None."""
        stamp = self.read_stamp()
        if not record or stamp is None or any(stamp.get(k) != record.get(k) for k in STAMP_KEYS):
            return None
        return self._restore(record)

    def lacks_record(self, ids) -> str:
        """The index's record (meta VECTOR_GRAPH_LACKS_META) of the chunks with a committed vector
        that the saved graph lacks: `ids` (a BitMap), tied to the graph's stamp."""
        from pyroaring import BitMap

        stamp = self.read_stamp() or {}
        ids = BitMap(ids)
        ids.run_optimize()
        blob = base64.b64encode(ids.serialize()).decode("ascii")
        return json.dumps({"graph": {k: stamp.get(k) for k in STAMP_KEYS}, "ids": blob})

    def read_lacks(self, record: str | None):
        """The chunk ids a `lacks_record` names (a BitMap), if it was written for the graph saved now;
        else None (no record, or another graph was saved since)."""
        from pyroaring import BitMap

        stamp = self.read_stamp()
        if not record or stamp is None:
            return None
        try:
            data = json.loads(record)
            if any(data["graph"].get(k) != stamp.get(k) for k in STAMP_KEYS):
                return None
            return BitMap.deserialize(base64.b64decode(data["ids"]))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None

    def open_latest(self):
        """The last saved graph, memory-mapped, whichever commit it was saved for (None when there is
        none that opens): it may lack the newest vectors and hold chunks since deleted."""
        stamp = self.read_stamp()
        return self._restore(stamp) if stamp is not None else None

    def _restore(self, record: dict):
        """The file memory-mapped, or the map this process opened of the same file before: a server
        searching while an embed run commits opened it again at each new generation (85 ms at 1M)."""
        import onnxruntime  # noqa: F401
        from usearch.index import Index as HnswIndex

        try:
            st = self.graph.lstat()
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        same = (str(self.graph), st.st_ino, st.st_mtime_ns, st.st_size, *(record.get(k) for k in STAMP_KEYS))
        opened = _OPENED.get(str(self.graph))
        if opened is not None and opened[0] == same:
            return opened[1]
        try:
            graph = HnswIndex.restore(str(self.graph), view=True)
        except Exception:  # a damaged file costs the graph: the reader searches exactly instead
            return None
        if graph is None or len(graph) != record["count"]:
            return None
        graph.expansion_search = EXPANSION_SEARCH  # not kept in the file
        _OPENED[str(self.graph)] = (same, graph)  # the last one of each file: a map costs no memory
        return graph

    def remove(self) -> None:
        for path in (self.stamp, self.graph):
            path.unlink(missing_ok=True)

    def remove_others(self) -> None:
        """Graphs of other models (left by `kenning embed --replace`)."""
        if self.folder.is_dir():
            for path in self.folder.iterdir():
                ours = path.name.split(".")[0] == self.graph.stem
                if not ours and path.suffix in (".usearch", ".json", ".tmp"):
                    path.unlink(missing_ok=True)

    def sync(self, ids: np.ndarray, vectors_for, threshold: int | None = None) -> dict:
        """Bring the file to exactly `ids` (the live chunks with vectors); `vectors_for(ids)` gives
        their vectors (float32 rows in the order asked). Returns what was done."""
        ids = np.sort(np.asarray(ids, dtype=np.int64))
        if len(ids) < (HNSW_THRESHOLD if threshold is None else threshold):
            self.remove()
            return {"action": "none", "count": len(ids)}
        stamp = self.read_stamp()
        if stamp and stamp.get("count") == len(ids) and stamp.get("digest") == ids_digest(ids):
            return {"action": "current", "count": len(ids)}
        graph = self._load_for_update() if stamp else None
        added = removed = 0
        if graph is not None:
            have = np.sort(np.asarray(graph.keys, dtype=np.int64))
            gone = np.setdiff1d(have, ids, assume_unique=True)
            new = np.setdiff1d(ids, have, assume_unique=True)
            if len(gone) > REBUILD_SHARE * max(1, len(have)):
                graph = None
            else:
                if len(gone):
                    graph.remove(gone)
                if len(new):
                    graph.add(new, np.ascontiguousarray(vectors_for(new), dtype=np.float32), threads=0)
                added, removed = len(new), len(gone)
        action = "updated"
        if graph is None:
            vectors = np.ascontiguousarray(vectors_for(ids), dtype=np.float32)
            graph = new_graph(vectors.shape[1])
            graph.add(ids, vectors, threads=0)
            action, added = "built", len(ids)
        self._save(graph, ids)
        return {"action": action, "count": len(ids), "added": added, "removed": removed}

    def _load_for_update(self):
        import onnxruntime  # noqa: F401
        from usearch.index import Index as HnswIndex

        try:
            return HnswIndex.restore(str(self.graph))
        except Exception:
            return None

    def _save(self, graph, ids: np.ndarray) -> None:
        """Graph first, then its stamp, each replaced atomically: a crash between leaves a stamp that
        does not match, and readers build in memory until the next write."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.graph.with_suffix(f".usearch.{os.getpid()}.tmp")  # two writers never share one
        graph.save(str(tmp))
        os.replace(tmp, self.graph)
        stamp = self.stamp_for(ids)
        stamp["seal"] = seal(self.graph, _stamp_text(stamp))  # this user's, on this file (sidefiles.seal)
        tmp_stamp = self.stamp.with_suffix(f".json.{os.getpid()}.tmp")
        tmp_stamp.write_text(json.dumps(stamp))
        os.replace(tmp_stamp, self.stamp)


def seal_copy(source: str | os.PathLike, copy: str | os.PathLike) -> int:
    """Seal the graphs of `copy`, a copy the user made of the index folder `source`, where the
    source's own graph is sealed and the copied file has its size (a copy gets a new inode, so its
    seal fails until then: kenning.sidefiles.seal). Returns how many graphs were sealed. For the user's
    own copies (benchmarks copy a built index before each run); never for a folder from elsewhere."""
    sealed = 0
    for stamp_path in sorted((Path(copy) / "ann").glob("*.json")):
        try:
            fingerprint = json.loads(stamp_path.read_text())["fingerprint"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        original, copied = GraphFile(source, fingerprint), GraphFile(copy, fingerprint)
        stamp = original.read_stamp()
        if stamp is None or not copied.graph.exists():
            continue
        if copied.graph.stat().st_size != original.graph.stat().st_size:
            continue
        stamp = {**stamp, "seal": seal(copied.graph, _stamp_text(stamp))}
        copied.stamp.write_text(json.dumps(stamp))
        sealed += 1
    return sealed
