"""The HNSW graph kept on disk (kenning.sidefiles.ann): the writer brings it up to date after every
write, a reader opens it memory-mapped, and a graph that does not match is never used."""

import os
import subprocess
import sys

import numpy as np
import pytest

from kenning import Index
from kenning.sidefiles import ann
from kenning.sidefiles.ann import GraphFile
from kenning.signals.dense import DenseView
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META


def _vectors(ids, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    table = {int(i): v for i, v in zip(ids, rng.normal(size=(len(ids), dim)).astype(np.float32), strict=True)}
    return lambda wanted: np.stack([table[int(i)] / np.linalg.norm(table[int(i)]) for i in wanted])


def test_sync_builds_updates_and_a_reader_sees_exactly_its_ids(tmp_path):
    ids = np.arange(1, 301)
    vectors_for = _vectors(np.arange(1, 500))
    graph = GraphFile(tmp_path, "fp-1")
    assert graph.sync(ids, vectors_for, threshold=100)["action"] == "built"
    assert graph.sync(ids, vectors_for, threshold=100)["action"] == "current"
    view = graph.open_view(ids)
    assert view is not None and sorted(np.asarray(view.keys).tolist()) == ids.tolist()
    assert graph.open_view(ids) is view and graph.open_latest() is view  # the file is mapped once
    query = vectors_for([7])[0]
    assert int(view.search(query, 1).keys[0]) == 7  # a stored vector finds itself
    # 20 deleted, 50 new: updated in place, not rebuilt
    after = np.concatenate([ids[20:], np.arange(301, 351)])
    done = graph.sync(after, vectors_for, threshold=100)
    assert done == {"action": "updated", "count": len(after), "added": 50, "removed": 20}
    assert graph.open_view(ids) is None  # the old id set no longer matches the file
    replaced, view = view, graph.open_view(after)  # the file replaced: mapped anew
    assert view is not replaced and sorted(np.asarray(view.keys).tolist()) == sorted(after.tolist())
    assert int(replaced.search(query, 1).keys[0]) == 7  # and the old map still answers its holder
    # most ids gone: rebuilt; below the threshold: no file at all
    assert graph.sync(np.arange(301, 420), vectors_for, threshold=100)["action"] == "built"
    assert graph.sync(np.arange(301, 350), vectors_for, threshold=100)["action"] == "none"
    assert not graph.graph.exists() and not graph.stamp.exists()


def test_another_model_s_graph_or_a_damaged_file_is_never_used(tmp_path):
    ids = np.arange(1, 201)
    vectors_for = _vectors(ids)
    GraphFile(tmp_path, "fp-1").sync(ids, vectors_for, threshold=10)
    assert GraphFile(tmp_path, "fp-2").open_view(ids) is None
    graph = GraphFile(tmp_path, "fp-1")
    graph.graph.write_bytes(graph.graph.read_bytes()[:100])  # torn file, stamp still claims it
    assert graph.read_stamp() is None  # its seal no longer holds (kenning.sidefiles.seal)
    assert graph.open_view(ids) is None
    other = GraphFile(tmp_path, "fp-2")
    other.sync(ids, vectors_for, threshold=10)
    graph.remove_others()  # a model replaced: its graph goes
    assert not other.graph.exists() and not other.stamp.exists() and graph.stamp.exists()


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(ann, "HNSW_THRESHOLD", 4)


def _embedded_notes(tmp_path, count) -> tuple:
    """(notes folder, an Index over them with vectors and its saved graph)."""
    root = tmp_path / "notes"
    root.mkdir()
    _notes(root, count)
    index = Index(tmp_path / "ix")
    index.add([root])
    index.embed()
    return root, index


def _notes(root, count):
    words = ["harbour", "mill", "orchard", "forge", "library", "chapel", "bridge", "tower"]
    for i in range(count):
        w = words[i % len(words)]
        (root / f"note{i}.md").write_text(f"# Note {i}\n\nThe {w} keeps {i} lanterns by the {w} gate.\n")


def test_the_writer_keeps_the_graph_and_readers_open_it(tmp_path, small_threshold):
    root, index = _embedded_notes(tmp_path, 12)
    with index:
        response = index.search("orchard lanterns", mode="dense", limit=3)
        assert response.funnel.channels["dense"]["method"] == "hnsw"
        assert response.funnel.channels["dense"]["graph"] == "file"  # opened, not built
        assert "orchard" in response.hits[0].title.lower() or "orchard" in response.hits[0].snippet.lower()
    files = list((tmp_path / "ix" / "ann").glob("*.usearch"))
    assert len(files) == 1
    (root / "note0.md").unlink()  # a write that removes chunks brings the graph up to date
    with Index(tmp_path / "ix") as index:
        index.add([root])
        response = index.search("harbour lanterns", mode="dense", limit=3)
        assert response.funnel.channels["dense"]["graph"] == "file"
        assert response.funnel.channels["dense"]["vectors"] == 11
    shown = _explain(tmp_path / "ix", "harbour")
    assert "dense: HNSW over 11 vectors, the saved graph" in shown and "newer" not in shown
    for stamp in (tmp_path / "ix" / "ann").glob("*.json"):
        stamp.unlink()  # no saved graph the reader can trust: it searches exactly, it never builds one
    with Index(tmp_path / "ix") as index:
        response = index.search("harbour lanterns", mode="dense", limit=3)
        dense = response.funnel.channels["dense"]
        assert dense["method"] == "exact" and "graph" not in dense and response.hits


def _explain(index_dir, query: str) -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "kenning.surfaces.entry", "search", query, "--mode", "dense", "--explain"]
        + ["--index", str(index_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "KENNING_HNSW_THRESHOLD": "4", "KENNING_NO_SERVER": "1"},
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_commit_after_the_graph_was_saved_leaves_readers_on_it_with_the_rest_exact(
    tmp_path, small_threshold, monkeypatch
):
    """Between a commit and the graph's save (an embed run commits every 512 vectors and saves the
    graph at its end), readers use the last saved graph for the chunks it holds that are still live,
    and search the chunks it lacks exactly: they never build a graph, and miss nothing."""
    from kenning.indexing.writer import IndexWriter

    root, index = _embedded_notes(tmp_path, 10)
    with index:
        assert index.store.get_meta(VECTOR_GRAPH_META)
        save = IndexWriter.sync_graph
        monkeypatch.setattr(IndexWriter, "sync_graph", lambda self: None)  # the save has not come yet
        (root / "note0.md").unlink()  # a harbour note goes
        (root / "extra.md").write_text("# Extra\n\nThe lighthouse keeper counts gulls on the pier.\n")
        index.add([root])
        index.embed()
        assert index.store.get_meta(VECTOR_GRAPH_META) is None
        response = index.search("lighthouse keeper gulls", mode="dense", limit=3)
        dense = response.funnel.channels["dense"]
        assert dense["graph"] == "file" and dense["newer"] == 1 and dense["vectors"] == 10
        assert response.hits[0].title == "Extra"  # found though the graph lacks it
        # the deleted note is in the graph, not in the answers
        everything = index.search("harbour lanterns", mode="dense", limit=20)
        assert "Note 0" not in {h.title for h in everything.hits}
        assert "1 newer chunk(s) it lacks searched exactly" in _explain(tmp_path / "ix", "lighthouse")
        monkeypatch.setattr(IndexWriter, "sync_graph", save)
        assert index.writer().sync_graph()["action"] == "updated"  # the next save catches up
        response = index.search("lighthouse keeper gulls", mode="dense", limit=3)
        assert response.funnel.channels["dense"]["graph"] == "file"
        assert "newer" not in response.funnel.channels["dense"]


@pytest.mark.parametrize("by_id", [5_000, 0])
def test_a_stale_graph_with_the_newer_chunks_answers_as_exact_search(
    tmp_path, small_threshold, monkeypatch, by_id
):
    """The saved graph lacks some chunks and holds deleted ones; its answers with the newer chunks
    searched beside it are those of exact search over the live vectors (a small graph is exact).
    The chunks it lacks are looked up by id, or (more than NEWER_BY_ID of them) found by listing
    every chunk with a vector."""
    from kenning.signals import dense

    monkeypatch.setattr(dense, "NEWER_BY_ID", by_id)
    root, index = _embedded_notes(tmp_path, 12)
    with index:
        fingerprint = index.embedder().fingerprint()
        with index.store.reading():
            live = index.lexical.view().live_mask.copy()
            ids = index.store.vector_chunk_ids(fingerprint)
            stale = GraphFile(tmp_path / "ix", fingerprint)
            stale.sync(
                ids[:8], lambda wanted: np.stack(list(index.store.vectors_of(fingerprint, wanted).values()))
            )
            live[ids[2]] = False  # a chunk of the graph deleted since
            mapped = DenseView(index.store, fingerprint, live, graph_file=stale)
            exact = DenseView(index.store, fingerprint, live)
        assert mapped.graph_source == "file" and mapped.newer_ids.tolist() == ids[8:].tolist()
        assert mapped.ids.tolist() == exact.ids.tolist() and int(ids[2]) not in mapped.ids
        for text in ("orchard gate", "harbour lanterns", "chapel tower"):
            query = index.embedder().embed([text], kind="query")[0]
            got, want = mapped.search(query, 5), exact.search(query, 5)
            assert got[0].tolist() == want[0].tolist() and np.allclose(got[1], want[1], atol=1e-5)
            some = [int(ids[0]), int(ids[2]), int(ids[-1])]
            assert np.allclose(mapped.similarity(query, some), exact.similarity(query, some), atol=1e-5)


def test_a_view_over_the_saved_graph_reads_the_same_vectors_as_the_store(tmp_path, small_threshold):
    root, index = _embedded_notes(tmp_path, 9)
    with index:
        fingerprint = index.embedder().fingerprint()
        with index.store.reading():
            live = index.lexical.view().live_mask
            mapped = DenseView(
                index.store, fingerprint, live, graph_file=GraphFile(tmp_path / "ix", fingerprint)
            )
            loaded = DenseView(index.store, fingerprint, live)
        assert mapped.graph_source == "file" and mapped.matrix is None and loaded.matrix is not None
        assert mapped.ids.tolist() == loaded.ids.tolist()
        query = index.embedder().embed(["orchard gate"], kind="query")[0]
        some = [int(mapped.ids[0]), 10_000, int(mapped.ids[-1])]
        assert np.allclose(mapped.similarity(query, some), loaded.similarity(query, some), atol=1e-5)
        assert np.allclose(mapped.vector(some[0]), loaded.vector(some[0]), atol=1e-6)
        assert mapped.vector(10_000) is None
        assert np.allclose(mapped.background(query), loaded.background(query), atol=1e-5)
        allowed = np.zeros(int(mapped.ids.max()) + 1, dtype=bool)
        allowed[mapped.ids[::2]] = True  # a filter: exact search over the allowed chunks
        a, b = mapped._search_exact(query, 3, allowed), loaded._search_exact(query, 3, allowed)
        assert a[0].tolist() == b[0].tolist() and np.allclose(a[1], b[1], atol=1e-5)


def test_a_long_embed_run_saves_the_graph_as_it_goes(tmp_path, small_threshold, monkeypatch):
    """Not only at its end: a reader meanwhile finds the graph at most `graph_save_every` vectors
    behind, and searches only those exactly."""
    from kenning.indexing import writer as writer_module
    from kenning.indexing.tuning import WriterTuning
    from kenning.models.recorded import recorded_embedder

    root = tmp_path / "notes"
    root.mkdir()
    _notes(root, 10)
    saves = []
    save = writer_module.IndexWriter.sync_graph

    def counted(self):
        recorded = recorded_embedder(self.store)
        saves.append(self.store.count_vectors(recorded["fingerprint"]) if recorded else 0)
        return save(self)

    monkeypatch.setattr(writer_module.IndexWriter, "sync_graph", counted)
    with Index(tmp_path / "ix") as index:
        index.add([root])
        saves.clear()
        report = index.embed(commit_every=2, tuning=WriterTuning(graph_save_every=4))
        assert report.embedded == 10
        assert saves == [4, 8, 10]  # every 4 vectors, and once at the end
        dense = index.search("orchard lanterns", mode="dense", limit=3).funnel.channels["dense"]
        assert dense["graph"] == "file" and "newer" not in dense


def test_an_embed_run_between_saves_records_what_the_graph_lacks_and_readers_read_it_once(
    tmp_path, small_threshold, monkeypatch
):
    """While an embed run commits between two saves of the graph, each commit records the chunks
    with a vector the saved graph lacks: a reader of a new generation takes them from the record
    (no listing of every chunk's vector) and reads only the vectors it has not read before; its
    answers are exact search's. A write that changes the live set drops the record, and readers find
    the chunks as before."""
    from kenning.indexing.writer import IndexWriter
    from kenning.store.sqlite import SqliteStore

    root, index = _embedded_notes(tmp_path, 8)
    with index:
        for i in range(8, 14):  # six chunks without a vector yet, two of one text
            (root / f"more{i}.md").write_text(f"# More {i % 5}\n\nThe quay shelters {i % 5} boats at dusk.\n")
        index.add([root])
        fingerprint = index.embedder().fingerprint()
        monkeypatch.setattr(IndexWriter, "sync_graph", lambda self: None)  # the save has not come yet
        listed, asked = [], []
        list_ids, read_by_id = SqliteStore.vector_chunk_ids, SqliteStore.vectors_of
        monkeypatch.setattr(
            SqliteStore, "vector_chunk_ids", lambda s, fp: listed.append(1) or list_ids(s, fp)
        )
        monkeypatch.setattr(
            SqliteStore,
            "vectors_of",
            lambda s, fp, ids: asked.append(sorted(map(int, ids))) or read_by_id(s, fp, ids),
        )
        with index.store.reading():
            before = index.store.chunk_vectors(fingerprint)[0]
        seen: set[int] = set()
        for _step in range(2):
            index.embed(commit_every=1, limit=2)
            with index.store.reading():
                ids, _ = index.store.chunk_vectors(fingerprint)
                lacks = GraphFile(tmp_path / "ix", fingerprint).read_lacks(
                    index.store.get_meta(VECTOR_GRAPH_LACKS_META)
                )
            new = sorted(set(ids.tolist()) - set(before.tolist()))
            assert lacks is not None and sorted(lacks) == new  # duplicates of a text included
            asked.clear()
            response = index.search("quay boats dusk", mode="dense", limit=20)
            dense = response.funnel.channels["dense"]
            assert dense["graph"] == "file" and dense["newer"] == len(new) and not listed
            assert [n for batch in asked for n in batch] == sorted(set(new) - seen)  # read once
            seen |= set(new)
            with index.store.reading():
                live = index.lexical.view().live_mask
                graph = GraphFile(tmp_path / "ix", fingerprint)
                mapped, exact = (
                    DenseView(index.store, fingerprint, live, graph_file=graph),
                    DenseView(index.store, fingerprint, live),
                )
            assert mapped.ids.tolist() == exact.ids.tolist()
            query = index.embedder().embed(["quay boats dusk"], kind="query")[0]
            got, want = mapped.search(query, 5), exact.search(query, 5)
            assert got[0].tolist() == want[0].tolist() and np.allclose(got[1], want[1], atol=1e-5)
        (root / "note0.md").unlink()  # a write that changes the live set: the record goes
        index.add([root])
        assert index.store.get_meta(VECTOR_GRAPH_LACKS_META) is None
        response = index.search("quay boats dusk", mode="dense", limit=20)
        assert response.funnel.channels["dense"]["newer"] == len(seen)


def test_a_write_between_two_embed_commits_ends_the_record_of_what_the_graph_lacks(
    tmp_path, small_threshold, monkeypatch
):
    """A write that commits between an embed run's commits (here a file whose text is already
    embedded: its new chunk has a vector at once) may give chunks vectors the run does not know of:
    the run stops keeping the record, and readers find every chunk with a vector as before."""
    from kenning.indexing.writer import IndexWriter
    from kenning.models.embed.minilm import MiniLMEmbedder

    root, index = _embedded_notes(tmp_path, 8)
    with index:
        for i in range(8, 12):
            (root / f"more{i}.md").write_text(f"# More {i}\n\nThe quay shelters {i} boats at dusk.\n")
        index.add([root])
        fingerprint = index.embedder().fingerprint()
        monkeypatch.setattr(IndexWriter, "sync_graph", lambda self: None)  # the save has not come yet
        calls, embed = [], MiniLMEmbedder.embed

        def embed_then_write(self, texts, kind="document"):
            calls.append(1)
            if len(calls) == 2:  # between the run's first and second commit
                (root / "copy.md").write_text((root / "note3.md").read_text())
                with Index(tmp_path / "ix") as other:
                    other.add([root])
            return embed(self, texts, kind)

        monkeypatch.setattr(MiniLMEmbedder, "embed", embed_then_write)
        index.embed(commit_every=1)
        assert len(calls) == 4 and index.store.get_meta(VECTOR_GRAPH_LACKS_META) is None
        with index.store.reading():
            live = index.lexical.view().live_mask
            mapped = DenseView(
                index.store, fingerprint, live, graph_file=GraphFile(tmp_path / "ix", fingerprint)
            )
            exact = DenseView(index.store, fingerprint, live)
        assert mapped.ids.tolist() == exact.ids.tolist() and len(mapped.newer_ids) == 5  # the copy too
