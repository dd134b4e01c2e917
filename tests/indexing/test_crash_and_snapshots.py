"""A killed indexing process leaves the last commit readable; readers see whole commits only.

The writer is a real separate process. Its progress callback prints a line per file (and pauses a
little), so the test knows the commit transaction is open when it kills or reads.
"""

import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from kenning import Index

WRITER = textwrap.dedent(
    """
    import sys, time
    from kenning import Index

    def progress(name, n, total):
        print("file", n, flush=True)
        time.sleep(0.01)

    ix = Index(sys.argv[1])
    ix.add([sys.argv[2]], progress=progress)
    print("committed", flush=True)
    """
)


def make_notes(root, count, word):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"{word}{i}.md").write_text(f"# {word} {i}\n\nA note mentioning {word} and item{i}.\n")


def start_writer(index_dir, source_dir):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(index_dir), str(source_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_files(proc, n):
    for line in proc.stdout:
        if line.startswith("file") and int(line.split()[1]) >= n:
            return
    raise AssertionError(f"writer ended early: {proc.stderr.read()}")


@pytest.fixture
def committed(tmp_path):
    """An index holding 5 'heron' notes, committed."""
    ix_dir = tmp_path / "ix"
    make_notes(tmp_path / "src", 5, "heron")
    with Index(ix_dir) as ix:
        ix.add([tmp_path / "src"])
    make_notes(tmp_path / "src", 300, "osprey")  # the next run adds 300 files
    return ix_dir, tmp_path / "src"


def test_killed_writer_leaves_last_commit(committed):
    ix_dir, src = committed
    proc = start_writer(ix_dir, src)
    wait_for_files(proc, 100)  # mid-transaction: chunks inserted, nothing committed
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(ix_dir / "index.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Index(ix_dir, create=False) as ix:
        status = ix.status()
        assert status["chunks"] == 5 and status["sources"] == 5
        assert len(ix.search("heron", limit=50).hits) == 5
        assert ix.search("osprey", limit=50).hits == []
        report = ix.add([src])  # the next run completes the work
        assert report.files_indexed == 300
        assert len(ix.search("osprey", limit=500).hits) == 300


def test_reader_sees_a_consistent_snapshot_while_another_process_writes(committed):
    ix_dir, src = committed
    reader = Index(ix_dir, create=False)
    before = [h.id for h in reader.search("heron", limit=50).hits]
    proc = start_writer(ix_dir, src)
    try:
        wait_for_files(proc, 50)
        for _ in range(20):  # mid-transaction reads see exactly the old commit
            assert [h.id for h in reader.search("heron", limit=50).hits] == before
            assert reader.search("osprey", limit=50).hits == []
            assert reader.status()["chunks"] == 5
        rest = proc.stdout.read()
        assert "committed" in rest
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert len(reader.search("osprey", limit=500).hits) == 300  # the next search sees the new commit
    reader.close()


def test_keyboard_interrupt_rolls_back(tmp_path):
    make_notes(tmp_path / "src", 20, "kestrel")
    ix = Index(tmp_path / "ix")

    def interrupt(name, n, total):
        if n == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ix.add([tmp_path / "src"], progress=interrupt)
    assert ix.status()["chunks"] == 0
    assert ix.add([tmp_path / "src"]).files_indexed == 20


def journal_mode(ix_dir) -> str:
    conn = sqlite3.connect(ix_dir / "index.db")
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


def test_a_first_build_writes_with_a_rollback_journal_and_leaves_the_wal_on(tmp_path):
    """An empty index's first write takes a rollback journal (new pages need none; the WAL copied
    them twice), later writes the WAL; with another connection open it stays on the WAL."""
    make_notes(tmp_path / "src", 3, "heron")
    with Index(tmp_path / "ix") as ix:
        with ix.store.transaction():
            first = ix.store.conn.execute("PRAGMA journal_mode").fetchone()[0]
        ix.add([tmp_path / "src"])
        with ix.store.transaction():
            later = ix.store.conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert (first, later) == ("delete", "wal") and journal_mode(tmp_path / "ix") == "wal"
    with Index(tmp_path / "ix") as ix:  # left on the rollback journal (a reader held it just then)
        ix.store.conn.execute("PRAGMA journal_mode=DELETE")
        with ix.store.transaction():  # the next write takes the WAL back
            assert ix.store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with Index(tmp_path / "other") as ix, Index(tmp_path / "other") as reader:
        assert reader.status()["chunks"] == 0
        with ix.store.transaction():
            assert ix.store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_killed_first_build_leaves_an_empty_index_and_readers_meanwhile_are_told(tmp_path):
    """Killed mid-way through an index's first build, the journal rolls it back: the index opens
    empty, on the WAL again, and builds. A reader opening during that build hears why it cannot."""
    from kenning.store import StorageError

    ix_dir = tmp_path / "ix"
    make_notes(tmp_path / "src", 300, "osprey")
    proc = start_writer(ix_dir, tmp_path / "src")
    wait_for_files(proc, 100)
    with pytest.raises(StorageError, match="held whole by another process writing it"):
        Index(ix_dir, create=False)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with Index(ix_dir, create=False) as ix:
        assert ix.status()["chunks"] == 0
        assert ix.add([tmp_path / "src"]).files_indexed == 300
    assert journal_mode(ix_dir) == "wal"
    conn = sqlite3.connect(ix_dir / "index.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
