"""The lexical view's arrays kept beside a folder index (kenning.sidefiles.lengths_file): the writer
saves them after each write, a new process maps them, and a file that is not of the reader's commit
(not saved yet, another index's, damaged) is never used."""

import mmap
import shutil
import struct

import numpy as np
import pytest

from kenning import Index
from kenning.indexing.writer import IndexWriter
from kenning.lexical.view import LexicalView
from kenning.sidefiles.lengths_file import LengthsFile, build_lengths
from kenning.store.sqlite import packs


def _notes(root, count, start=0):
    root.mkdir(exist_ok=True)
    for i in range(start, start + count):
        words = " ".join(["harbour", "lantern", "mill", "gate"][: 1 + i % 4])
        (root / f"note{i}.md").write_text(
            f"# Note {i}\n\nThe {words} keeps {i} lamps lit {'late ' * (i % 7)}.\n"
        )


def _mapped(array) -> bool:
    """Whether `array` reads the saved file's memory map (a plain view of it, or the map itself)."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def _built(index: Index):
    """The arrays as the segments give them, whatever file there is."""
    with index.store.reading():
        return build_lengths(index.store.read_snapshot(), index.store.load_segment)


def _view(path) -> LexicalView:
    with Index(path) as index, index.store.reading():
        return index.lexical.view()


def _same(a, b) -> bool:
    return (
        a.max_id == b.max_id
        and np.array_equal(a.title_len[: a.max_id + 1], b.title_len[: b.max_id + 1])
        and np.array_equal(a.body_len[: a.max_id + 1], b.body_len[: b.max_id + 1])
        and np.array_equal(a.live_mask[: a.max_id + 1], b.live_mask[: b.max_id + 1])
        and (a.avg_title_len, a.avg_body_len) == (b.avg_title_len, b.avg_body_len)
    )


def test_a_new_process_maps_the_arrays_the_writer_saved_and_ranks_the_same(tmp_path):
    root = tmp_path / "notes"
    _notes(root, 30)
    with Index(tmp_path / "ix") as index:
        index.add([root])
        (root / "note3.md").unlink()  # a deletion: the live mask has a hole
        _notes(root, 5, start=30)
        index.add([root])
        built = _built(index)
        want = [(h.id, h.score) for h in index.search("harbour lantern lamps", mode="lexical", limit=10).hits]
    assert (tmp_path / "ix" / "views" / "lengths.bin").is_file()
    mapped = _view(tmp_path / "ix")
    assert _mapped(mapped.title_len) and _same(mapped, built)
    assert mapped.max_id == 35 and int(mapped.live_mask.sum()) == mapped.n_docs == 34  # note3's hole
    with Index(tmp_path / "ix") as index:
        got = [(h.id, h.score) for h in index.search("harbour lantern lamps", mode="lexical", limit=10).hits]
    assert got == want


def test_a_commit_that_changes_neither_segments_nor_live_set_keeps_the_file(tmp_path):
    """An embed run's commits (or any commit that touches neither the segments nor the live set)
    leave the saved arrays valid: a new process still maps them."""
    root = tmp_path / "notes"
    _notes(root, 12)
    with Index(tmp_path / "ix") as index:
        index.add([root])
        before = index.store.generation()
        with index.store.transaction():
            index.store.set_meta("note", "a commit of its own")
        assert index.store.generation() == before + 1
    assert _mapped(_view(tmp_path / "ix").title_len)


def test_a_file_not_of_the_readers_segments_and_live_set_is_not_used(tmp_path, monkeypatch):
    root = tmp_path / "notes"
    _notes(root, 12)
    with Index(tmp_path / "ix") as index:
        index.add([root])
    saved = (tmp_path / "ix" / "views" / "lengths.bin").read_bytes()
    other = tmp_path / "other"  # another index written as the first will be: two adds, 12 then 15
    _notes(other, 12, start=100)
    with Index(tmp_path / "ix2") as index:
        index.add([other])
        _notes(other, 3, start=200)
        index.add([other])
    # a commit whose arrays are not saved (yet): the reader builds them
    monkeypatch.setattr(IndexWriter, "save_lengths", lambda self: None)
    _notes(root, 3, start=12)
    with Index(tmp_path / "ix") as index:
        index.add([root])
        built = _built(index)
    stale = _view(tmp_path / "ix")
    assert not _mapped(stale.title_len) and _same(stale, built) and stale.max_id == 15
    # another index's file of the same generation and live count, and a damaged one: not used
    live = struct.unpack_from("<Q", (tmp_path / "ix2" / "views" / "lengths.bin").read_bytes(), 24)[0]
    with Index(tmp_path / "ix") as index:
        snapshot = index.store.read_snapshot()
    assert live == len(snapshot.live) and tuple(snapshot.segment_ids) == (1, 2)  # as ix2's; content differs
    shutil.copy(tmp_path / "ix2" / "views" / "lengths.bin", tmp_path / "ix" / "views" / "lengths.bin")
    assert not _mapped(_view(tmp_path / "ix").title_len)
    (tmp_path / "ix" / "views" / "lengths.bin").write_bytes(saved[:100])
    assert _same(_view(tmp_path / "ix"), built)


@pytest.mark.parametrize("how", ["remove", "collection"])
def test_writes_that_remove_chunks_save_the_arrays_again(tmp_path, how):
    root = tmp_path / "notes"
    _notes(root, 10)
    with Index(tmp_path / "ix") as index:
        index.add([root], collection="notes")
        if how == "remove":
            (root / "note0.md").unlink()
            index.add([root], collection="notes")
        else:
            index.remove_collection("notes")
        built = _built(index)
    mapped = _view(tmp_path / "ix")
    assert _mapped(mapped.title_len) and _same(mapped, built)
    assert LengthsFile(tmp_path / "ix").path.is_file()


def test_term_counts_come_from_row_sizes_and_count_deleted_chunks_until_a_merge(tmp_path, monkeypatch):
    """Query feedback weighs terms by idf alone: their counts come from the stored rows' sizes (packed
    rows too), never from reading postings, over every chunk the segments hold, deleted ones included
    until a merge drops them (as Lucene counts df); scoring keeps the live postings' df."""
    root = tmp_path / "notes"
    # "harbour" in all 80: a row of its own (its ids pack to a few bytes: 245 in all, over the 128
    # this test packs up to), the rarer ones packed
    monkeypatch.setattr(packs, "PACK_ROW_BYTES", 128)
    _notes(root, 80)
    terms = ["harbour", "lantern", "mill", "gate", "lamp", "keep", "late", "note", "absent"]
    asked = []
    postings = LexicalView.postings
    monkeypatch.setattr(LexicalView, "postings", lambda v, ts: asked.append(1) or postings(v, ts))
    with Index(tmp_path / "ix") as index:
        index.add([root])
        gone = set(index.analyzer.terms((root / "note5.md").read_text()))  # the chunk deleted below
        assert gone >= {"harbour", "lantern", "late"} and "mill" not in gone
        for deleted in (False, True):
            if deleted:
                (root / "note5.md").unlink()
                index.add([root])
            with index.store.reading():
                view = index.lexical.view()
                asked.clear()
                held, counted = view.term_counts(terms)
                assert not asked  # no postings read
                if not deleted:
                    segment = view.snapshot.segment_ids[0]
                    stored = index.store.conn.execute(
                        "SELECT count(*) FROM postings WHERE segment_id=? AND term='harbour'", (segment,)
                    ).fetchone()[0]
                    assert stored == 1  # counted from a row's size, not only from packs
                found = view.postings(terms)
                live = {t: (found[t].df if found[t] else 0) for t in terms}
            assert held == 80 and view.n_docs == (79 if deleted else 80)
            assert counted["harbour"] == 80 and counted["absent"] == 0
            assert counted == {t: live[t] + (deleted and t in gone) for t in terms}
