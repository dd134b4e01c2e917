"""Chunk analysis in worker processes (kenning.indexing.analysis) builds the index analysing inline
would: the same postings, entities and spelling vocabulary; a worker that dies fails the write and
leaves the index as it was; a caller's script needs no `if __name__ == "__main__"` guard."""

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kenning import Index
from kenning.analysis.analyzer import Analyzer
from kenning.indexing import analysis, segments, writer
from kenning.indexing.segments import SegmentBuilder
from kenning.integrity.verify import verify
from kenning.store import StorageError

WORDS = "harbour castle letter journey night parseQueryString 東京都 Whitby count professor".split()
NAMES = ["Jonathan Harker", "Mina Murray", "Abraham Van Helsing", "Lucy Westenra", "Arthur Holmwood"]


def write_notes(folder: Path, files: int = 12, sections: int = 6) -> Path:
    """Markdown files of many small sections: names (entities), identifiers, CJK, common words."""
    rng = np.random.default_rng(7)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        parts = []
        for s in range(sections):
            words = " ".join(rng.choice(WORDS, size=int(rng.integers(5, 40))))
            name = NAMES[int(rng.integers(len(NAMES)))]
            parts.append(f"## Section {f}-{s}\n\n{name} wrote: {words}. Then {name} left for {words[:30]}.\n")
        (folder / f"note{f:02d}.md").write_text("\n".join(parts), encoding="utf-8")
    return folder


def contents(index_dir: Path) -> dict:
    """What an index holds that analysis decides, independent of row order and timestamps."""
    conn = sqlite3.connect(index_dir / "index.db")
    try:
        tables = {
            "segments": "n_docs, doc_ids, title_lens, body_lens, checksum",
            "postings": "term, ids, tf_title, tf_body, pos_title, pos_body",
            "entities": "*",
            "vocabulary": "*",
        }
        return {name: sorted(conn.execute(f"SELECT {cols} FROM {name}")) for name, cols in tables.items()}
    finally:
        conn.close()


def build(folder: Path, index_dir: Path, workers: int, monkeypatch) -> dict:
    monkeypatch.setenv(analysis.WORKERS_ENV, str(workers))
    with Index(index_dir) as index:
        index.add([folder], progress=False)
    return contents(index_dir)


def test_workers_build_the_index_inline_analysis_builds(tmp_path, monkeypatch):
    folder = write_notes(tmp_path / "notes")
    monkeypatch.setattr(analysis, "BATCH", 5)  # many batches, several in flight
    monkeypatch.setattr(segments, "FLUSH_CHUNKS", 23)  # segments flushed between batches
    flushes = []
    flush = writer.IndexWriter._flush_buffers
    monkeypatch.setattr(writer.IndexWriter, "_flush_buffers", lambda *a: flushes.append(1) or flush(*a))
    inline = build(folder, tmp_path / "inline", 0, monkeypatch)
    two = build(folder, tmp_path / "two", 2, monkeypatch)
    assert len(flushes) == 2 * 2 and inline["entities"] and inline["vocabulary"]
    assert two == inline


def test_long_chunks_are_written_by_tokens_not_only_by_chunks(tmp_path, monkeypatch):
    """Memory is bounded by the tokens buffered: a few long chunks make a segment before many short
    ones would."""
    from kenning.store.sqlite import SqliteStore

    folder = tmp_path / "long"
    folder.mkdir()
    for n in range(8):
        (folder / f"n{n}.md").write_text(f"# Note {n}\n\n" + "word " * 300, encoding="utf-8")
    monkeypatch.setattr(segments, "FLUSH_TOKENS", 500)
    monkeypatch.setattr(analysis, "BATCH", 1)
    written = []
    original = SqliteStore.write_segment
    monkeypatch.setattr(
        SqliteStore,
        "write_segment",
        lambda self, ids, *a: written.append(len(ids)) or original(self, ids, *a),
    )
    with Index(tmp_path / "idx") as index:
        index.add([folder], progress=False)
    assert written[:4] == [2, 2, 2, 2]  # two chunks of ~303 tokens pass 500; then the merge


def test_absorbed_parts_renumber_terms_into_the_builder():
    analyzer = Analyzer()
    chunks = [
        (1, "A", "alpha beta gamma"),
        (2, "", "gamma delta parseQueryString"),
        (5, "B", "beta beta epsilon"),
    ]
    whole = SegmentBuilder(analyzer)
    for chunk in chunks:
        whole.add(*chunk)
    joined = SegmentBuilder(analyzer)
    joined.add(*chunks[0])
    for chunk in chunks[1:]:
        part = SegmentBuilder(analyzer)
        part.add(*chunk)
        joined.absorb(part.parts())

    def rows(builder):
        return {term: [np.asarray(a).tolist() for a in rest] for term, *rest in builder.rows()}

    assert rows(joined) == rows(whole)
    with pytest.raises(ValueError, match="ascending"):
        joined.absorb(part.parts())


def test_a_worker_that_dies_fails_the_write_and_keeps_the_index(tmp_path, monkeypatch):
    folder = write_notes(tmp_path / "notes")
    monkeypatch.setenv(analysis.WORKERS_ENV, "1")
    monkeypatch.setattr(analysis, "BATCH", 5)
    with Index(tmp_path / "idx") as index:
        index.add([folder / "note00.md"], progress=False)
        before = contents(tmp_path / "idx")
        sent = analysis._Worker.send

        def send_then_die(self, message):
            sent(self, message)
            if isinstance(message, list):
                self.process.kill()

        monkeypatch.setattr(analysis._Worker, "send", send_then_die)
        with pytest.raises(StorageError, match="analysis worker stopped"):
            index.add([folder], progress=False)
        assert verify(index.store, index.analyzer).ok
    assert contents(tmp_path / "idx") == before


def test_a_script_without_a_main_guard_can_index_with_workers(tmp_path):
    folder = write_notes(tmp_path / "notes")
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import kenning.indexing.analysis as analysis
            from kenning import Index
            analysis.BATCH = 5
            with Index({str(tmp_path / "idx")!r}) as index:
                report = index.add([{str(folder)!r}], progress=False)
            print(report.chunks_added)
            """
        )
    )
    env = {"KENNING_INDEX_WORKERS": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 12 * 6


def test_worker_count_reads_the_environment(monkeypatch):
    monkeypatch.setenv(analysis.WORKERS_ENV, "3")
    assert analysis.worker_count() == 3
    monkeypatch.setenv(analysis.WORKERS_ENV, "many")
    with pytest.raises(ValueError, match=analysis.WORKERS_ENV):
        analysis.worker_count()
