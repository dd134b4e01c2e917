"""Incremental indexing by content: changed, deleted, unchanged and moved files and sections."""

import os
import time
from pathlib import Path

import pytest

from kenning import Index
from kenning.store import StorageError


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def notes(tmp_path):
    root = tmp_path / "notes"
    write(root / "keep.md", "# Keep\n\nThe albatross glides over the ocean.\n")
    write(
        root / "change.md",
        "# Change\n\n## First\n\nOld text about zebras.\n\n## Second\n\nStable walrus section.\n",
    )
    write(root / "delete.md", "# Delete\n\nThe platypus lays eggs.\n")
    return root


def ids_for(ix, query):
    return {h.id for h in ix.search(query, limit=10).hits}


def test_changed_deleted_unchanged(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    first = ix.add([notes])
    assert (first.files_indexed, first.files_unchanged, first.chunks_added) == (3, 0, 4)
    walrus_ids = ids_for(ix, "walrus")
    albatross_ids = ids_for(ix, "albatross")

    write(
        notes / "change.md",
        "# Change\n\n## First\n\nNew text about giraffes.\n\n## Second\n\nStable walrus section.\n",
    )
    (notes / "delete.md").unlink()
    second = ix.add([notes])
    assert second.files_indexed == 1
    assert second.files_unchanged == 1
    assert second.files_removed == 1
    assert second.chunks_added == 1  # only the edited section is analysed again
    assert second.chunks_kept == 1  # "Second" kept its id and postings
    assert second.chunks_removed == 2  # the old "First" and the deleted file's section
    assert ids_for(ix, "walrus") == walrus_ids
    assert ids_for(ix, "albatross") == albatross_ids
    assert ids_for(ix, "zebras") == set()
    assert ids_for(ix, "platypus") == set()
    assert len(ids_for(ix, "giraffes")) == 1
    assert ix.status()["chunks"] == 3


def test_noop_rerun_changes_nothing(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    ix.add([notes])
    generation = ix.status()["generation"]
    again = ix.add([notes])
    assert (again.files_indexed, again.files_unchanged, again.chunks_added, again.chunks_removed) == (
        0,
        3,
        0,
        0,
    )
    assert ix.status()["generation"] == generation


def test_touched_but_identical_file_is_not_reparsed(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    ix.add([notes])
    later = time.time() + 10
    os.utime(notes / "keep.md", (later, later))
    report = ix.add([notes])
    assert report.files_indexed == 0 and report.files_unchanged == 3


def test_moved_section_keeps_its_id(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    ix.add([notes])
    walrus = ids_for(ix, "walrus")
    write(
        notes / "change.md",
        "# Change\n\nA new preamble line.\n\n## Second\n\nStable walrus section.\n\n"
        "## First\n\nOld text about zebras.\n",
    )
    report = ix.add([notes])
    # "Second" only moved: kept. "First" held the empty "# Change" heading line, which now belongs
    # to the preamble, so its text changed (a chunk's text is every line it spans).
    assert report.chunks_kept == 1 and report.chunks_added == 2
    hit = ix.search("walrus", limit=1).hits[0]
    assert {hit.id} == walrus
    assert hit.start_line == 5  # the location follows the move


def test_force_rebuilds(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    ix.add([notes])
    report = ix.add([notes], force=True)
    assert report.files_indexed == 3 and report.chunks_added == 4
    assert ix.status()["chunks"] == 4
    assert len(ids_for(ix, "albatross")) == 1


def test_stemming_switch_needs_force(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    ix.add([notes])
    with pytest.raises(StorageError, match="--force"):
        ix.add([notes], stem=False)
    ix.add([notes], stem=False, force=True)
    assert ix.status()["analyzer"]["stem"] is False
    reopened = Index(tmp_path / "ix")
    assert reopened.analyzer.config.stem is False


def test_unreadable_file_keeps_previous_content(tmp_path, notes):
    ix = Index(tmp_path / "ix")
    ix.add([notes])
    (notes / "keep.md").write_bytes(b"\x00\x01binary now")
    report = ix.add([notes])
    assert report.errors and "keep.md" in report.errors[0][0]
    assert len(ids_for(ix, "albatross")) == 1  # no lost data: the last good version stays searchable


def test_many_commits_merge_segments(tmp_path):
    root = tmp_path / "many"
    ix = Index(tmp_path / "ix")
    for i in range(12):
        write(root / f"n{i}.md", f"# Note {i}\n\nuniqueword{i} shared text\n")
        ix.add([root])
    status = ix.status()
    assert status["segments"] <= 4  # 12 one-chunk commits: sizes double towards the past
    assert len(ids_for(ix, "shared")) == 10  # limit 10 of 12 live chunks
    assert all(len(ids_for(ix, f"uniqueword{i}")) == 1 for i in range(12))


def test_merges_take_the_newest_segments_and_keep_sizes_doubling(tmp_path):
    """Many small commits with edits and deletions: each commit checks the segment invariants and that
    every word finds exactly the files that hold it now."""
    import random

    from kenning.indexing.tuning import WriterTuning

    rng = random.Random(5)
    root = tmp_path / "notes"
    ix = Index(tmp_path / "ix")
    words = [f"word{i}" for i in range(30)]
    content: dict[str, set[str]] = {}
    for commit in range(60):
        for _ in range(rng.randint(1, 3)):
            name = f"n{rng.randrange(40)}.md"
            if name in content and rng.random() < 0.3:
                (root / name).unlink()
                del content[name]
                continue
            held = set(rng.sample(words, 3))
            write(root / name, f"# {name}\n\n{' '.join(sorted(held))}\n")
            content[name] = held
        ix.add([root])
        rows = ix.store.conn.execute("SELECT id, n_docs, doc_ids FROM segments ORDER BY id").fetchall()
        assert len(rows) <= WriterTuning().max_segments
        sizes = [n for _, n, _ in rows]
        assert all(sizes[i] >= sum(sizes[i + 1 :]) for i in range(len(sizes) - 1)), sizes
        firsts = [int.from_bytes(blob[:4], "little") for _, _, blob in rows if blob]
        assert firsts == sorted(firsts)  # segment order is chunk-id order
        for word in words[:10]:
            found = {h.path.rsplit("/", 1)[-1] for h in ix.search(word, limit=50).hits}
            assert found == {name for name, held in content.items() if word in held}, (commit, word)
    ix.close()


def test_a_big_file_is_flushed_in_pieces(tmp_path, monkeypatch):
    """A JSONL corpus is one file with many chunks: its tokens are written every `flush_chunks`
    chunks, not held until the file ends, and the pieces merge into one segment at commit."""
    import json

    from kenning.indexing import chunk_run
    from kenning.indexing.tuning import WriterTuning
    from kenning.store.sqlite import SqliteStore as Storage

    written = []
    original, land = Storage.write_encoded_segment, chunk_run.land_spilled

    def counting(self, doc_ids, *args):
        written.append(len(doc_ids))
        return original(self, doc_ids, *args)

    def landing(store, spills, *args):  # the pieces, spilled while the run goes on
        written.extend(len(spill.doc_ids) for spill in spills)
        return land(store, spills, *args)

    monkeypatch.setattr(Storage, "write_encoded_segment", counting)
    monkeypatch.setattr(chunk_run, "land_spilled", landing)
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"_id": f"d{i}", "title": "", "text": f"passage {i} about topic{i % 3}"} for i in range(10)]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ix = Index(tmp_path / "ix")
    ix.add([corpus], tuning=WriterTuning(flush_chunks=4))
    assert written == [4, 4, 2, 10]  # three pieces spilled, then their merge into the store
    assert ix.status()["segments"] == 1
    assert len(ids_for(ix, "topic1")) == 3 and len(ids_for(ix, "passage")) == 10


def test_missing_index_is_a_clear_error(tmp_path):
    with pytest.raises(StorageError, match="kenning index"):
        Index(tmp_path / "nowhere", create=False)


def test_paths_are_shown_relative_to_the_working_directory(tmp_path, monkeypatch):
    from kenning.indexing.reports import display_path

    monkeypatch.chdir(tmp_path)
    assert display_path(tmp_path / "notes" / "a.md") == "notes/a.md"
    assert display_path(tmp_path) == "."
    assert (
        display_path(str(tmp_path) + "-other/a.md") == str(tmp_path) + "-other/a.md"
    )  # a sibling, not inside
    assert display_path("/elsewhere/b.md") == "/elsewhere/b.md"
    assert display_path(str(tmp_path / "caf\udce9.md")) == "caf\\xe9.md"  # a name that is not UTF-8
    monkeypatch.chdir("/")
    assert display_path("/etc/hosts") == "etc/hosts"


def test_gone_files_are_dropped_under_their_roots_only_and_once(tmp_path):
    """With many roots (as `kenning repair` gives every indexed file), the sources are read once and
    each root looks only at its own path and the paths under it: a sibling folder whose name starts
    with the root's is untouched, and a file two roots cover is dropped once."""
    notes, notes2 = tmp_path / "notes", tmp_path / "notes2"
    for folder in (notes, notes2):
        (folder / "sub").mkdir(parents=True)
        (folder / "a.md").write_text("# A\n\nalpha text\n")
        (folder / "sub" / "b.md").write_text("# B\n\nbeta text\n")
    ix = Index(tmp_path / "ix")
    ix.add([str(notes), str(notes2)])
    (notes / "sub" / "b.md").unlink()
    report = ix.add([str(notes), str(notes / "sub"), str(notes / "a.md")])
    assert report.files_removed == 1 and report.chunks_removed == 1
    with ix.store.reading():
        left = sorted(Path(s.path).relative_to(tmp_path).as_posix() for s in ix.store.sources())
    assert left == ["notes/a.md", "notes2/a.md", "notes2/sub/b.md"]
