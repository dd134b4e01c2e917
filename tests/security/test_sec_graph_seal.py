"""A saved vector graph is opened (by usearch, in C) only when this user's kenning wrote it there:
its seal (kenning.sidefiles.seal) holds for that very file. A graph in a copied or handed-over index,
or one changed in place, is left closed, and dense search reads the vectors exactly instead."""

import os
import random
import shutil
import subprocess
import sys

import pytest

from kenning import Index
from kenning.sidefiles import ann, seal

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]


@pytest.fixture
def built(tmp_path, monkeypatch):
    monkeypatch.setattr(ann, "HNSW_THRESHOLD", 4)
    notes = tmp_path / "notes"
    notes.mkdir()
    words = ["harbour", "mill", "orchard", "forge", "library", "chapel", "bridge", "tower"]
    for i in range(16):
        w = words[i % len(words)]
        (notes / f"note{i}.md").write_text(f"# Note {i}\n\nThe {w} keeps {i} lanterns by the {w} gate.\n")
    with Index(tmp_path / "ix") as index:
        index.add([notes])
        index.embed()
        fingerprint = index.embedding_model()["fingerprint"]
    return tmp_path, fingerprint


def graph_used(directory) -> str | None:
    with Index(directory) as index:
        response = index.search("orchard lanterns", mode="dense", limit=3)
        assert "orchard" in (response.hits[0].title + response.hits[0].snippet).lower()
        return response.funnel.channels["dense"].get("graph")


def test_the_users_own_graph_is_opened(built):
    root, fingerprint = built
    assert ann.GraphFile(root / "ix", fingerprint).read_stamp()["seal"]
    assert graph_used(root / "ix") == "file"


def test_a_copied_index_keeps_its_graph_closed_until_it_is_written(built):
    root, fingerprint = built
    shutil.copytree(root / "ix", root / "copy")
    assert ann.GraphFile(root / "copy", fingerprint).read_stamp() is None
    assert graph_used(root / "copy") != "file"  # exact search, same results
    (root / "notes" / "extra.md").write_text("# Extra\n\nThe orchard keeps more lanterns.\n")
    with Index(root / "copy") as index:
        index.add([root / "notes"])  # the user's own write seals a graph of its own
    assert graph_used(root / "copy") == "file"


def test_a_graph_changed_in_place_is_not_opened(built):
    root, fingerprint = built
    graph = ann.GraphFile(root / "ix", fingerprint).graph
    data = bytearray(graph.read_bytes())
    rng = random.Random(3)
    for _ in range(20):
        data[rng.randrange(len(data))] ^= 0xFF
    with open(graph, "r+b") as fh:  # same file, same inode: its seal still fails
        fh.write(data)
    assert ann.GraphFile(root / "ix", fingerprint).read_stamp() is None
    done = subprocess.run(
        [*ENTRY, "search", "orchard lanterns", "--mode", "dense", "--index", str(root / "ix")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KENNING_HNSW_THRESHOLD": "4", "KENNING_NO_SERVER": "1"},
    )
    assert done.returncode == 0 and "orchard" in done.stdout.lower(), done.stderr


def test_a_key_others_can_read_seals_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    seal._key.cache_clear()
    try:
        target = tmp_path / "file"
        target.write_bytes(b"graph")
        made = seal.seal(target, "stamp")
        assert made and seal.is_sealed(target, "stamp", made)
        assert not seal.is_sealed(target, "other stamp", made)
        os.chmod(seal.key_path(), 0o644)
        seal._key.cache_clear()
        assert seal.seal(target, "stamp") is None and not seal.is_sealed(target, "stamp", made)
    finally:
        seal._key.cache_clear()


def test_the_users_own_copy_can_be_sealed(built):
    """Benchmarks copy a built index before each run: seal_copy trusts the copy's graph because the
    user's own sealed original has one of the same size."""
    root, _ = built
    shutil.copytree(root / "ix", root / "copy")
    assert ann.seal_copy(root / "ix", root / "copy") == 1
    assert graph_used(root / "copy") == "file"
    shutil.copytree(root / "copy", root / "elsewhere")
    shutil.rmtree(root / "ix" / "ann")  # an original without a sealed graph vouches for nothing
    assert ann.seal_copy(root / "ix", root / "elsewhere") == 0
