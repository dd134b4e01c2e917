"""Chunk analysis in worker processes (kenning.indexing.analysis) builds the index analysing inline
would: the same postings, entities and spelling vocabulary; a worker that dies fails the write and
leaves the index as it was; a caller's script needs no `if __name__ == "__main__"` guard."""

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kenning import Index
from kenning.indexing import analysis, chunk_run, segments
from kenning.indexing.tuning import WriterTuning
from kenning.integrity.verify import verify
from kenning.store import StorageError
from kenning.store.sqlite.packs import Pack

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
        found = {name: sorted(conn.execute(f"SELECT {cols} FROM {name}")) for name, cols in tables.items()}
        # every row, whether a row of its own or in a pack (packs are cut where a merge's ranges
        # are, which differ between the writer and its workers)
        packed = [
            row for (blob,) in conn.execute("SELECT data FROM posting_packs") for row in Pack(blob).rows()
        ]
        found["postings"] = sorted(found["postings"] + packed)
        return found
    finally:
        conn.close()


def build(
    folder: Path | list[Path], index_dir: Path, workers: int, monkeypatch, tuning: WriterTuning | None = None
) -> dict:
    """Index a folder (or a list of files) with `workers` analysis workers, and what it holds."""
    monkeypatch.setenv(analysis.WORKERS_ENV, str(workers))
    with Index(index_dir) as index:
        index.add(folder if isinstance(folder, list) else [folder], progress=False, tuning=tuning)
    return contents(index_dir)


def segment_sizes(monkeypatch) -> list[int]:
    """The chunk count of every segment made from now on: each one a run spills, then each one
    written to the store (the run's spilled segments landing as one, and merges)."""
    from kenning.store.sqlite import SqliteStore

    written: list[int] = []
    original, land = SqliteStore.write_encoded_segment, chunk_run.land_spilled

    def counting(self, doc_ids, *args):
        written.append(len(doc_ids))
        return original(self, doc_ids, *args)

    def landing(store, spills, *args):
        written.extend(len(spill.doc_ids) for spill in spills)
        return land(store, spills, *args)

    monkeypatch.setattr(SqliteStore, "write_encoded_segment", counting)
    monkeypatch.setattr(chunk_run, "land_spilled", landing)
    return written


class WorkerLog:
    """What a run's workers are given: each worker, how many chunks had gone to workers when it
    started (and how many the run had taken, counted in `added` by the caller), and each batch's size."""

    def __init__(self, monkeypatch, added: list | None = None):
        self.workers, self.started_after, self.added_at_start, self.batches = [], [], [], []
        added = added if added is not None else []
        start, send = analysis._Worker.__init__, analysis._Worker.send

        def starting(worker, setup):
            self.workers.append(worker)
            self.started_after.append(sum(self.batches))
            self.added_at_start.append(len(added))
            start(worker, setup)

        def sending(worker, message):
            if message[0] == "chunks":
                self.batches.append(len(message[1]))
            send(worker, message)

        monkeypatch.setattr(analysis._Worker, "__init__", starting)
        monkeypatch.setattr(analysis._Worker, "send", sending)


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_build_the_index_inline_analysis_builds(tmp_path, monkeypatch, workers):
    folder = write_notes(tmp_path / "notes")
    tuning = WriterTuning(
        batch=5,  # many batches, several in flight
        flush_chunks=23,  # segments end inside and between batches
        merge_range_bytes=200,  # the final merge in many term ranges
    )
    written = segment_sizes(monkeypatch)
    inline = build(folder, tmp_path / "inline", 0, monkeypatch, tuning)
    assert written == [23, 23, 23, 3, 72]  # four segments spilled, then their merge
    assert inline["entities"]
    # the spelling vocabulary counts every chunk of every segment once (the counts add up in the
    # builder from segment to segment and are handed on when the run ends)
    sections = [s for f in sorted(folder.glob("*.md")) for s in f.read_text().split("## ")[1:]]
    vocabulary = dict(inline["vocabulary"])
    for word in ("for", "castle", "whitby"):
        assert vocabulary[word] == sum(f" {word}" in s.lower() for s in sections) > 0
    started = []
    start = analysis._Worker.__init__
    monkeypatch.setattr(
        analysis._Worker, "__init__", lambda self, setup: started.append(1) or start(self, setup)
    )
    assert build(folder, tmp_path / f"with{workers}", workers, monkeypatch, tuning) == inline
    assert written[5:] == written[:5] and len(started) == workers


def test_a_runs_segments_start_small_so_the_workers_take_turns_on_a_small_run(tmp_path, monkeypatch):
    """72 chunks, segments of at most 40 starting at 10 and doubling every two: five segments, the
    workers taking turns, and the index inline analysis builds."""
    folder = write_notes(tmp_path / "notes")
    tuning = WriterTuning(batch=5, flush_chunks=40, first_flush_chunks=10)
    written = segment_sizes(monkeypatch)
    inline = build(folder, tmp_path / "inline", 0, monkeypatch, tuning)
    assert written == [10, 10, 20, 20, 12, 72]
    started = []
    start = analysis._Worker.__init__
    monkeypatch.setattr(
        analysis._Worker, "__init__", lambda self, setup: started.append(1) or start(self, setup)
    )
    assert build(folder, tmp_path / "two", 2, monkeypatch, tuning) == inline
    assert written[6:] == written[:6] and len(started) == 2


@pytest.mark.parametrize("first", [40, 100])
def test_the_next_worker_starts_while_the_first_segment_is_half_made(tmp_path, monkeypatch, first):
    """An interpreter takes a while to start, so the second worker starts once the first segment
    holds half its chunks, not with its own segment. 72 chunks in batches of 5: with a first segment
    of 40 it starts after 20 chunks went to the first worker; with one of 100 (a single segment) a
    worker starts that the run does not need. Either way the index is the one inline analysis builds."""
    folder = write_notes(tmp_path / "notes")
    tuning = WriterTuning(batch=5, flush_chunks=1000, first_flush_chunks=first)
    inline = build(folder, tmp_path / "inline", 0, monkeypatch, tuning)
    log = WorkerLog(monkeypatch)
    assert build(folder, tmp_path / "two", 2, monkeypatch, tuning) == inline
    assert log.started_after == ([0, 20] if first == 40 else [0, 50])


def test_a_segment_of_one_batch_starts_the_next_workers_interpreter_as_it_ends(tmp_path, monkeypatch):
    """Segments of one batch each are never half made: the next segment's worker starts as the one
    before ends, not only when its own first batch is ready (an interpreter takes a while). The
    first worker is the walk's (`early_worker`), started before any chunk."""
    folder = write_notes(tmp_path / "notes")
    tuning = WriterTuning(batch=5, batch_parts=1, first_flush_chunks=5)
    added, started_after = [], []
    add, start = analysis.ChunkAnalysis.add, analysis._Worker.__init__
    monkeypatch.setattr(analysis.ChunkAnalysis, "add", lambda self, *a: added.append(1) or add(self, *a))
    monkeypatch.setattr(
        analysis._Worker,
        "__init__",
        lambda self, setup: started_after.append(len(added)) or start(self, setup),
    )
    build(folder, tmp_path / "two", 2, monkeypatch, tuning)
    assert started_after == [0, 5]


@pytest.mark.parametrize("batch", [20, 100])
def test_a_runs_first_worker_starts_before_its_first_batch_is_full_and_goes_unused_when_the_run_stays_small(
    tmp_path, monkeypatch, batch
):
    """A run of files named one by one (no folder walked, so no worker started before the walk):
    its first worker's interpreter starts at `early_start` new chunks, while the first batch fills.
    A run of 72 chunks in batches of 20 then sends its batches to it; one in batches of 100 (smaller
    than a batch: analysed inline) never gives it work, and it is killed, not waited for. Either way
    the index is the one inline analysis builds."""
    folder = write_notes(tmp_path / "notes")
    files = sorted(folder.glob("*.md"))
    tuning = WriterTuning(batch=batch, early_start=7)
    inline = build(folder, tmp_path / "inline", 0, monkeypatch, tuning)
    added, workers, started_after = [], [], []
    add, start = analysis.ChunkAnalysis.add, analysis._Worker.__init__
    monkeypatch.setattr(analysis.ChunkAnalysis, "add", lambda self, *a: added.append(1) or add(self, *a))

    def starting(self, setup):
        started_after.append(len(added))
        workers.append(self)
        start(self, setup)

    monkeypatch.setattr(analysis._Worker, "__init__", starting)
    assert build(files, tmp_path / "two", 2, monkeypatch, tuning) == inline
    assert started_after[0] == 7
    if batch == 100:
        assert len(workers) == 1 and not workers[0].has_chunks
        assert workers[0].process.returncode == -9  # killed (SIGKILL), not waited for
    else:
        assert workers[0].has_chunks and workers[0].process.returncode == 0


@pytest.mark.parametrize("files", [12, 1])
def test_a_run_that_walks_a_folder_starts_a_worker_before_the_walk_and_sends_it_a_quarter_segment(
    tmp_path, monkeypatch, files
):
    """Walking a folder, the run's first worker starts before the walk (its interpreter starts while
    the walk goes on) and takes the run from its first batch, a quarter of the first segment: 72
    chunks with segments from 40 go in batches of 10 from the first chunk on. A run of 6 chunks
    (under a batch) is analysed inline and the worker killed, not waited for. With one worker (no
    core to spare) none starts before the walk. The index is the one inline analysis builds."""
    folder = write_notes(tmp_path / "notes", files=files)
    tuning = WriterTuning(first_flush_chunks=40)
    inline = build(folder, tmp_path / "inline", 0, monkeypatch, tuning)
    added = []
    add = analysis.ChunkAnalysis.add
    monkeypatch.setattr(analysis.ChunkAnalysis, "add", lambda self, *a: added.append(1) or add(self, *a))
    log = WorkerLog(monkeypatch, added)
    assert build(folder, tmp_path / "two", 2, monkeypatch, tuning) == inline
    first = log.workers[0]
    assert log.added_at_start[0] == 0
    if files == 12:
        assert log.batches == [10, 10, 10, 10, 10, 10, 10, 2]  # segments of 40 and 32, quarters of 40
        assert first.has_chunks and first.process.returncode == 0
    else:
        assert log.batches == [] and first.process.returncode == -9
    added.clear()
    log = WorkerLog(monkeypatch, added)
    assert build(folder, tmp_path / "one", 1, monkeypatch, tuning) == inline
    assert 0 not in log.added_at_start  # one worker: none starts before the walk


@pytest.mark.parametrize("flush", [23, 1000])
def test_each_worker_starts_with_its_first_segment_and_one_that_cannot_start_leaves_the_rest(
    tmp_path, monkeypatch, flush
):
    """Two workers allowed: a run of one segment starts one interpreter; a run of several whose
    second worker cannot start goes on with the first. Either way the index inline analysis builds."""
    folder = write_notes(tmp_path / "notes")
    tuning = WriterTuning(batch=5, flush_chunks=flush)  # 72 chunks: four segments, or one
    inline = build(folder, tmp_path / "inline", 0, monkeypatch, tuning)
    started = []
    start = analysis._Worker.__init__

    def second_fails(self, setup):
        started.append(1)
        if flush == 23 and len(started) == 2:
            raise OSError("no more processes")
        start(self, setup)

    monkeypatch.setattr(analysis._Worker, "__init__", second_fails)
    assert build(folder, tmp_path / "two", 2, monkeypatch, tuning) == inline
    assert len(started) == (2 if flush == 23 else 1)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_merge_of_stored_segments_opens_their_packs_in_the_workers(tmp_path, monkeypatch, workers):
    """A second run twice the size of the first merges both segments. Through workers, the writer
    hands them each segment's packs unopened (raw_posting_part) and opens none itself; inline, it
    opens them. Either way the index is the one inline analysis builds."""
    folder = write_notes(tmp_path / "notes")
    first = tmp_path / "first"
    first.mkdir()
    for note in sorted(folder.iterdir())[:4]:
        (first / note.name).write_bytes(note.read_bytes())
    tuning = WriterTuning(batch=5)

    def two_runs(index_dir: Path, count: int) -> dict:
        monkeypatch.setenv(analysis.WORKERS_ENV, str(count))
        with Index(index_dir) as index:
            index.add([first], progress=False, tuning=tuning)
            for note in sorted(folder.iterdir())[4:]:  # the other 48 chunks, in the same folder
                (first / note.name).write_bytes(note.read_bytes())
            index.add([first], progress=False, tuning=tuning)
            assert len(index.store.segment_sizes()) == 1  # merged
        return contents(index_dir)

    expected = two_runs(tmp_path / "inline", 0)
    for note in sorted(folder.iterdir())[4:]:
        (first / note.name).unlink()
    opened, merges, merging = [], [], []
    rows, merge = Pack.rows, chunk_run.merge_segments

    def merge_segments(*args):
        merges.append(1)
        merging.append(1)
        try:
            return merge(*args)
        finally:
            merging.pop()

    monkeypatch.setattr(Pack, "rows", lambda self, *a: opened.append(bool(merging)) or rows(self, *a))
    monkeypatch.setattr(chunk_run, "merge_segments", merge_segments)
    assert two_runs(tmp_path / "merged", workers) == expected
    assert merges and any(opened) == (workers == 0)


def test_long_chunks_end_a_segment_by_their_text_not_only_by_count(tmp_path, monkeypatch):
    """Memory is bounded by the text a segment holds: a few long chunks end one before many short
    ones would."""
    folder = tmp_path / "long"
    folder.mkdir()
    for n in range(8):
        (folder / f"n{n}.md").write_text(f"# Note {n}\n\n" + "word " * 300, encoding="utf-8")
    written = segment_sizes(monkeypatch)
    with Index(tmp_path / "idx") as index:
        index.add([folder], progress=False, tuning=WriterTuning(flush_text=2500))
    assert written == [2, 2, 2, 2, 8]  # two chunks of ~1,500 characters pass 2,500; then the merge


def test_a_worker_that_dies_fails_the_write_and_keeps_the_index(tmp_path, monkeypatch):
    folder = write_notes(tmp_path / "notes")
    monkeypatch.setenv(analysis.WORKERS_ENV, "1")
    tuning = WriterTuning(batch=5)
    with Index(tmp_path / "idx") as index:
        index.add([folder / "note00.md"], progress=False, tuning=tuning)
        before = contents(tmp_path / "idx")
        sent = analysis._Worker.send

        def send_then_die(self, message):
            sent(self, message)
            if message[0] == "chunks":  # a batch, not the worker's setup
                self.process.kill()

        monkeypatch.setattr(analysis._Worker, "send", send_then_die)
        with pytest.raises(StorageError, match="analysis worker stopped"):
            index.add([folder], progress=False, tuning=tuning)
        assert verify(index.store, index.analyzer).ok
    assert contents(tmp_path / "idx") == before


def run_script(tmp_path: Path, body: str, workers: int) -> subprocess.CompletedProcess:
    """Run a Python script (no `if __name__ == "__main__"` guard) in a session of its own, with
    `workers` analysis workers; the script's writes pass TUNING (analysis batches of 5 chunks)."""
    script = tmp_path / "script.py"
    script.write_text(
        "import kenning.indexing.analysis as analysis\n"
        "from kenning.indexing.tuning import WriterTuning\n"
        "TUNING = WriterTuning(batch=5)\n" + textwrap.dedent(body)
    )
    env = {analysis.WORKERS_ENV: str(workers), "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # the kenning under test, not an installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        start_new_session=True,
    )


def test_a_script_without_a_main_guard_can_index_with_workers(tmp_path):
    folder = write_notes(tmp_path / "notes")
    body = f"""
        from kenning import Index
        with Index({str(tmp_path / "idx")!r}) as index:
            report = index.add([{str(folder)!r}], progress=False, tuning=TUNING)
        print(report.chunks_added)
        """
    done = run_script(tmp_path, body, workers=1)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 12 * 6


def test_ctrl_c_stops_the_workers_and_rolls_back(tmp_path):
    """Ctrl-C reaches the terminal's process group: the writer rolls back and stops its workers, which
    are not in it (one traceback, the writer's), and the index keeps its last commit."""
    folder = write_notes(tmp_path / "notes")
    with Index(tmp_path / "idx") as index:
        index.add([folder / "note00.md"], progress=False)
        before = contents(tmp_path / "idx")
    body = f"""
        import os, signal
        from kenning import Index
        # Python raises KeyboardInterrupt only where it started with SIGINT at its default (a shell
        # starts background jobs with it ignored, and the script inherits that): as in a terminal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        receive = analysis._Worker.receive
        def receive_then_interrupt(self):
            answer = receive(self)  # the workers are up and waiting for more
            os.killpg(os.getpgid(0), signal.SIGINT)  # as a terminal's Ctrl-C does
            return answer
        analysis._Worker.receive = receive_then_interrupt
        with Index({str(tmp_path / "idx")!r}) as index:
            index.add([{str(folder)!r}], progress=False, tuning=TUNING)
        """
    done = run_script(tmp_path, body, workers=2)
    assert done.returncode != 0 and done.stderr.count("KeyboardInterrupt") == 1, done.stderr
    assert contents(tmp_path / "idx") == before
    with Index(tmp_path / "idx") as index:
        assert verify(index.store, index.analyzer).ok


def test_workers_are_out_of_the_terminals_process_group():
    """A terminal's Ctrl-C goes to its foreground process group: the workers are in sessions of
    their own, so only the writer gets it (and stops them)."""
    from kenning.analysis.analyzer import AnalyzerConfig
    from kenning.store.compact import decode_posting_row, encode_posting_row

    worker = analysis._Worker(
        (AnalyzerConfig(), None, encode_posting_row, decode_posting_row, None, WriterTuning())
    )
    try:
        assert os.getsid(worker.process.pid) == worker.process.pid != os.getsid(0)
    finally:
        worker.close()
    assert worker.process.returncode == 0


def test_worker_count_reads_the_environment(monkeypatch):
    monkeypatch.setenv(analysis.WORKERS_ENV, "3")
    assert analysis.worker_count() == 3
    monkeypatch.setenv(analysis.WORKERS_ENV, "many")
    with pytest.raises(ValueError, match=analysis.WORKERS_ENV):
        analysis.worker_count()


@pytest.mark.parametrize("user_value", [None, "65536"])
def test_workers_give_big_freed_buffers_back_unless_the_user_says_otherwise(monkeypatch, user_value):
    """kenning.indexing.allocator: a worker holds glibc's mmap threshold at MMAP_THRESHOLD; a user's
    setting wins."""
    from kenning.analysis.analyzer import AnalyzerConfig
    from kenning.indexing import allocator
    from kenning.store.compact import decode_posting_row, encode_posting_row

    if user_value is None:
        monkeypatch.delenv(allocator.MMAP_THRESHOLD_ENV, raising=False)
    else:
        monkeypatch.setenv(allocator.MMAP_THRESHOLD_ENV, user_value)
    worker = analysis._Worker(
        (AnalyzerConfig(), None, encode_posting_row, decode_posting_row, None, WriterTuning())
    )
    try:
        environ = Path(f"/proc/{worker.process.pid}/environ").read_bytes().split(b"\0")
    finally:
        worker.close()
    expected = user_value or str(allocator.MMAP_THRESHOLD)
    assert f"{allocator.MMAP_THRESHOLD_ENV}={expected}".encode() in environ


HEAP_AFTER_A_TRIM = """
import ctypes, os
from kenning.indexing import allocator
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
blocks = [libc.malloc(64 << 10) for _ in range(3000)]  # 190 MB of heap blocks, under the mmap threshold
for block in blocks:
    ctypes.memset(block, 1, 64 << 10)
for block in blocks[:-1]:  # the last one keeps the heap's top: freeing alone returns nothing
    libc.free(block)
before = rss_mb()
released = allocator.release_freed_memory()
print(released, round(before - rss_mb()))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_writer_hands_freed_heap_pages_back():
    done = subprocess.run(
        [sys.executable, "-c", HEAP_AFTER_A_TRIM], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    released, dropped_mb = done.stdout.split()
    assert released == "True" and int(dropped_mb) > 150


def test_writes_and_merges_trim_the_heap(tmp_path, monkeypatch):
    """The writer trims after each segment it writes and each merge range (kenning.indexing.allocator)."""
    calls = []
    monkeypatch.setattr(segments, "release_freed_memory", lambda: calls.append("merge range") or True)
    monkeypatch.setattr(chunk_run, "release_freed_memory", lambda: calls.append("segment") or True)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"{i}.md").write_text(
            "".join(f"# part {j}\n\nword{i} text {j} of note {i}\n\n" for j in range(20))
        )
    with Index(tmp_path / "index") as ix:
        ix.add([docs], tuning=WriterTuning(flush_chunks=50))
    assert calls.count("segment") >= 2 and calls.count("merge range") >= 1, calls


def test_a_worker_whose_writer_ends_before_the_setup_leaves_quietly():
    """The writer can die before it sends anything: the worker then exits 0, without a traceback."""
    env = analysis.worker_environment(dict(os.environ))
    run = subprocess.run(
        [sys.executable, "-m", "kenning.indexing.analysis_worker"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert (run.returncode, run.stderr) == (0, b"")
