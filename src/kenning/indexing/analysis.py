"""Chunk analysis beside the writer: tokens into encoded segments, entities, spelling words.

Analysing new chunks (tokenising, stemming, grouping tokens by term, finding entities) and encoding
the segment they make were most of an index build's CPU time, and need nothing from the store but
a chunk's id and text. The writer inserts each chunk (which gives the id) and hands it here; what
comes back, in the order given, is each batch's entities and words and, when a segment is complete,
the segment, its flat columns written to a spill file (kenning.indexing.spill) for the run's end
to merge into the store.

The sizes named below are fields of the write's WriterTuning (kenning.indexing.tuning). A run of up
to `batch` new chunks is analysed in this process (its first worker starts at `early_start` new
chunks, before the first batch is full, and is stopped unused if the run stays small). A run that
walks folders starts its first worker before the walk (`early_worker`), when there are two or more:
its interpreter is running by the first new chunk, so the run goes to the workers from its first
batch, not from `batch` chunks. A batch is a `batch_parts`-th of its segment (at most `batch`), so a
segment's worker starts on it while the writer still reads the segment's files. In a larger run each
segment is made by one worker process (one per core, up to MAX_WORKERS; segment n by worker n mod
workers), so a segment holds chunk ids ascending and is byte for byte the segment inline analysis
makes (tests/indexing/test_index_analysis.py). A segment ends at `flush_chunks` chunks or `flush_text`
characters, so a worker's memory is bounded by its segment. A run's segments start small: its first
two end at `first_flush_chunks`, the next two at twice that, and so on up to `flush_chunks`, so the
workers take turns on the few batches of a small run (one large first segment left a small
re-index's second worker analysing the second half alone, after the writer's loop).

Workers are fresh interpreters (`python -m kenning.indexing.analysis_worker`) on pipes, not forks (a
process that has loaded an embedding runtime holds threads a fork would copy mid-lock) and not
multiprocessing's spawn (which re-runs the caller's main script). A worker that dies fails the
write (the transaction rolls back); workers that cannot start at all leave the run inline.
"""

from __future__ import annotations

import collections
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kenning.analysis.analyzer import Analyzer
from kenning.entities.extract import GlossaryMatcher, extract
from kenning.indexing.allocator import worker_environment
from kenning.indexing.segments import SegmentBuilder, merge_range, merge_spill_range
from kenning.indexing.spill import SpilledSegment, SpillFolder, SpillRange, empty_columns, write_spill
from kenning.indexing.tuning import DEFAULT_TUNING, WriterTuning
from kenning.store import StorageError

IN_FLIGHT = 6  # batches per worker sent ahead before the writer waits for the oldest
MERGE_AHEAD = 2  # term ranges per worker sent ahead in a merge
WORKERS_ENV = "KENNING_INDEX_WORKERS"  # worker processes for analysis (0: inline)
MAX_WORKERS = 2  # by default: one per core, up to this many (each holds a segment in the making)

Chunk = tuple[int, str, str, "dict | None"]  # id, title, body, meta


def worker_count() -> int:
    """Worker processes for chunk analysis: $KENNING_INDEX_WORKERS, else one per core, at most
    MAX_WORKERS. On 2 cores the writer waited on one worker for half of a build (it reads files and
    inserts chunks in a fraction of the time a worker analyses them): two built 1M chunks in 269 s
    against 364 s with one, 798 MB for all processes. More workers would each add a segment in the
    making (~150-300 MB) to the memory a build needs."""
    configured = os.environ.get(WORKERS_ENV, "").strip()
    if configured:
        try:
            return max(0, int(configured))
        except ValueError:
            raise ValueError(f"{WORKERS_ENV} must be a whole number, got {configured!r}") from None
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


@dataclass
class Analysed:
    """One batch analysed: each chunk's entities and, when the batch completed a segment, the
    segment; and how many chunks held each raw token (the spelling vocabulary's counts) when the
    counts are handed on: when a segment's end lets the builder's table go, and once at the run's
    end (`SegmentWork.take_raws`). Sent with every segment, the counts cost the workers and the
    writer ~0.2 s a segment of the 1M corpus (taken, pickled, unpickled, merged); with every batch,
    the writer merged ten counters a segment, a tenth of its time while indexing."""

    entities: list[tuple[int, dict]] = field(default_factory=list)
    raws: Counter = field(default_factory=Counter)
    segment: SpilledSegment | None = None


class SegmentWork:
    """The segment in the making, inline or in a worker: takes batches, gives back their analysis
    and, when told the segment ends, the segment spilled."""

    def __init__(
        self, analyzer: Analyzer, matcher: GlossaryMatcher | None, tuning: WriterTuning = DEFAULT_TUNING
    ):
        self.builder = SegmentBuilder(analyzer, tuning.kept_raws)
        self.matcher = matcher
        self.mark_bytes = tuning.spill_mark_bytes

    def run(self, chunks: list[Chunk], ends_segment: bool, spill: str | None = None) -> Analysed:
        """Analyse a batch; when it ends the segment, write the segment's columns to the file `spill`
        (kenning.indexing.spill)."""
        out = Analysed()
        for chunk_id, title, body, meta in chunks:
            self.builder.add(chunk_id, title, body)
            out.entities.append((chunk_id, extract(body, meta, self.matcher)))
        if ends_segment and len(self.builder):
            builder = self.builder
            marks = write_spill(spill, builder.columns() or empty_columns(), self.mark_bytes)
            out.segment = SpilledSegment(
                spill,
                np.array(builder.doc_ids),
                np.array(builder.title_lens),
                np.array(builder.body_lens),
                marks,
            )
            out.raws = Counter(builder.next_segment())  # (the counts of a table let go)
        return out

    def take_raws(self) -> Analysed:
        """The raw tokens' chunk counts not yet handed on: asked once, when the run ends."""
        return Analysed(raws=Counter(self.builder.raw_chunk_counts()))


def merge_job(
    job: list[list[tuple]] | SpillRange, dead: np.ndarray, decode, encode
) -> list[tuple[tuple, bytes]]:
    """One term range of a merge, encoded: of stored segments (their rows, read by the writer) or of
    spilled ones (read from their files here)."""
    if isinstance(job, SpillRange):
        return merge_spill_range(job, dead, encode)
    return merge_range(job, dead, decode, encode)


def write_message(stream, message) -> None:
    """One message on a pipe: its pickle's length (8 bytes), then the pickle."""
    data = message if isinstance(message, bytes) else pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(8, "little"))
    stream.write(data)  # not joined to the length: a segment's pickle is tens of megabytes
    stream.flush()


def read_message(stream):
    """The next message written by `write_message` (EOFError at the end of the stream)."""
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


def _widen(pipe) -> None:
    """A 1 MiB pipe buffer where Linux allows it (64 KiB by default): a batch crosses in a few reads."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError, ValueError):
        pass


class _Worker:
    """One analysis process (kenning.indexing.analysis_worker). Batches are pickled by the caller and
    written by a thread of their own, answers read by another, so the writer never waits on a pipe
    (a write to a full pipe would wait for the worker to finish its batch) and the worker never waits
    on the writer."""

    def __init__(self, setup: tuple | None):
        """Start the interpreter; `setup` (ChunkAnalysis.setup) is its first message, sent now or,
        for a worker started before the run knows it (`early_worker`), by `ChunkAnalysis`."""
        package_root = str(Path(__file__).resolve().parents[2])
        env = worker_environment(dict(os.environ))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kenning.indexing.analysis_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            # out of the terminal's process group: Ctrl-C goes to the writer, which rolls back and
            # stops its workers (a worker also ends when its input does, should the writer die)
            start_new_session=True,
        )
        _widen(self.process.stdin)
        _widen(self.process.stdout)
        self.outbox: queue.Queue = queue.Queue()
        self.answers: queue.Queue = queue.Queue()
        self.threads = [
            threading.Thread(target=self._write, daemon=True),
            threading.Thread(target=self._read, daemon=True),
        ]
        self.stopping = False
        self.has_chunks = False  # given chunks to analyse
        for thread in self.threads:
            thread.start()
        if setup is not None:
            self.send(setup)

    def send(self, message) -> None:
        self.outbox.put(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))

    def receive(self) -> Analysed:
        answer = self.answers.get()
        if answer is None:
            raise StorageError(f"an analysis worker stopped while indexing ({self._exit()})")
        if isinstance(answer, WorkerOSError):
            raise OSError(answer.errno, answer.strerror, answer.filename)
        return answer

    def _write(self) -> None:
        try:
            while (data := self.outbox.get()) is not None:
                write_message(self.process.stdin, data)
            self.process.stdin.close()  # the worker's end of input: it exits
        except (OSError, ValueError):  # the worker is gone: its reader reports it
            pass

    def _read(self) -> None:
        try:
            while True:
                self.answers.put(read_message(self.process.stdout))
        except Exception:  # end of output, or an answer that cannot be read: the write fails
            self.answers.put(None)

    def _exit(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"exit status {code}"

    def stop(self, abort: bool = False) -> None:
        """Tell the worker to end: after the batches sent (abort: at once)."""
        if self.stopping:
            return
        self.stopping = True
        if abort:
            self.process.kill()
        self.outbox.put(None)

    def close(self, abort: bool = False) -> None:
        """End the worker (`stop`) and wait until it has."""
        self.stop(abort)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for thread in self.threads:
            thread.join(timeout=10)


def early_worker() -> _Worker | None:
    """A worker for a run that walks folders, started before the walk: an interpreter takes ~0.15 s
    to start, which the walk of 10,000 files (~0.17 s) hides, with a core to spare. None when there
    is no core to spare (fewer than two workers: on one core it would slow the walk it hides behind)
    or it cannot start. `ChunkAnalysis(early=...)` adopts it; one the run gives no chunks is killed."""
    if worker_count() < 2:
        return None
    try:
        return _Worker(None)
    except OSError:
        return None


def serve(stdin=None, stdout=None) -> None:
    """The worker's loop: its setup (analyzer settings, glossary, the store's row encoder, decoder
    and bundler, the write's WriterTuning) first, then until the end of input: ("chunks", batch,
    ends_segment, spill file) answered with Analysed, ("raws",) answered with the raw tokens' counts
    not yet sent (an Analysed), ("dead", ids) that sets the deleted chunks for the merge ranges to
    come, and ("merge", job) answered with the range's encoded rows (`merge_job`: stored rows the
    writer read, or a SpillRange read here), bundled by the store's posting_bundler when it has one.
    An OSError (a spill file that cannot be written) is answered with WorkerOSError, and the worker
    ends."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    try:
        config, matcher, encode, decode, bundle, tuning = read_message(stdin)
    except EOFError:  # the writer ended before the setup came
        return
    work = SegmentWork(Analyzer(config), matcher, tuning)
    dead = np.zeros(0, dtype=np.uint32)
    while True:
        try:
            kind, *message = read_message(stdin)
        except EOFError:
            return
        try:
            if kind == "chunks":
                answer = work.run(*message)
            elif kind == "raws":
                answer = work.take_raws()
            elif kind == "dead":
                dead = message[0]
                continue
            elif kind == "merge":
                answer = merge_job(message[0], dead, decode, encode)
                if bundle is not None:  # the store's own form of a range (posting_bundler)
                    answer = bundle(answer)
            else:
                raise ValueError(f"unknown message {kind!r}")
        except OSError as exc:  # a spill file that cannot be written or read (a full disk): the
            # writer raises it as its own, and its transaction rolls back saying why
            write_message(stdout, WorkerOSError(exc.errno, exc.strerror or str(exc), exc.filename))
            return
        write_message(stdout, answer)


@dataclass
class WorkerOSError:
    """An OSError a worker met, sent back for the writer to raise."""

    errno: int | None
    strerror: str
    filename: str | None


class ChunkAnalysis:
    """Takes the writer's new chunks and delivers their analysis (Analysed) to `deliver` in the
    order given, inline or through worker processes (see the module docstring). `drain` ends the
    segment in the making and delivers everything."""

    def __init__(
        self,
        analyzer: Analyzer,
        matcher: GlossaryMatcher | None,
        codec: tuple[Callable, Callable, Callable | None],
        deliver: Callable[[Analysed], None],
        spill: SpillFolder,
        workers: int | None = None,
        early: _Worker | None = None,
        tuning: WriterTuning = DEFAULT_TUNING,
    ):
        """`codec`: the store's posting_encoder, posting_decoder and posting_bundler; `spill`: where
        segments go; `early`: the run's first worker, started before the walk (`early_worker`);
        `tuning`: the batch and segment sizes (the module docstring)."""
        self.setup = (analyzer.config, matcher, *codec, tuning)
        self.tuning = tuning
        self.spill = spill
        self.codec = codec
        self.inline = SegmentWork(analyzer, matcher, tuning)
        self.deliver = deliver
        self.workers = worker_count() if workers is None else workers
        self.batch: list[Chunk] = []
        self.sent: list[_Worker] = []  # the worker of each batch sent and not yet delivered, oldest first
        self.pool: list[_Worker] = []
        self.owner: _Worker | None = None  # who makes the segment in the making (None: inline)
        self.started = False  # the segment in the making has had a batch
        self.segments = 0  # segments ended
        self.chunks = self.text = 0  # in the segment in the making
        self.added = 0  # chunks taken in the run
        # the run goes to the workers from its first batch when one is running already, else from
        # `batch` chunks (a run smaller than that is analysed here sooner than an interpreter starts)
        self.workers_from = tuning.batch
        if early is not None:
            early.send(self.setup)
            self.pool.append(early)
            self.workers_from = self._segment_part()

    def add(self, chunk_id: int, title: str, body: str, meta: dict | None) -> None:
        self.batch.append((chunk_id, title, body, meta))
        self.added += 1
        tuning = self.tuning
        if self.added == tuning.early_start and tuning.early_start < tuning.batch:  # likely needs a worker
            self._start(1)
        self.chunks += 1
        self.text += len(title) + len(body)
        limit = self._segment_limit()
        if self.chunks >= limit or self.text >= tuning.flush_text:
            self._send(ends_segment=True)
            if self.owner is not None:  # a segment of one batch was never half made: its
                self._start(self.segments % self.workers + 1)  # successor's worker starts now
        elif len(self.batch) >= self._batch_limit():
            self._send(ends_segment=False)
            if self.owner is not None and (2 * self.chunks >= limit or 2 * self.text >= tuning.flush_text):
                self._start_next()

    def _batch_limit(self) -> int:
        """Chunks a batch is sent at: a quarter of its segment, at most `batch`, so a worker starts on
        a segment before the writer has read all of it (a 1% re-index at 1M chunks, 10k chunks in
        segments of 2k, 2k, 4k and 2k, had a worker wait for each segment's whole first 2k); but a
        run's first batch waits for the size from which the run goes to the workers."""
        part = self._segment_part()
        return max(part, self.workers_from) if self.added < self.workers_from else part

    def _segment_part(self) -> int:
        """A quarter (`batch_parts`) of the segment in the making's chunks, at most `batch`."""
        return max(1, min(self.tuning.batch, self._segment_limit() // self.tuning.batch_parts))

    def _segment_limit(self) -> int:
        """Chunks the segment in the making ends at: `first_flush_chunks` for a run's first two
        segments, doubling every two segments, at most `flush_chunks` (the module docstring)."""
        tuning = self.tuning
        return min(tuning.flush_chunks, tuning.first_flush_chunks << min(self.segments // 2, 20))

    def _start_next(self) -> None:
        """Start the next segment's worker while this segment is half made: an interpreter takes
        ~0.25 s to start, which a 1% re-index at 1M chunks (two segments of 5k) waited at its end
        when the second worker only started with its segment. A run that ends before its next
        segment starts one worker it did not need."""
        self._start((self.segments + 1) % self.workers + 1)

    def end_segment(self) -> None:
        """Send the segment in the making on its way without waiting for it, so a worker finishes
        the run's last batch while the writer does its own work (the removed chunks' words)."""
        if self.batch or self.started:
            self._send(ends_segment=True)

    def drain(self) -> None:
        """End the segment in the making and deliver everything taken so far, with the raw tokens'
        counts every worker and the inline work hold."""
        self.end_segment()
        for worker in self.pool:  # each answers after its batches, so the order holds
            if worker.has_chunks:
                worker.send(("raws",))
                self.sent.append(worker)
        while self.sent:
            self._receive()
        self.deliver(self.inline.take_raws())

    def close(self, abort: bool = False) -> None:
        """End every worker: all are told first, then each is waited for, so they exit together
        (each takes ~60 ms to). One the run gave no chunks (started early, `early_start`, or for a
        segment that never came) is killed, not waited for while its interpreter starts."""
        for worker in self.pool:
            worker.stop(abort or not worker.has_chunks)
        for worker in self.pool:
            worker.close(abort)
        self.pool.clear()
        self.sent.clear()

    def _send(self, ends_segment: bool) -> None:
        chunks, self.batch = self.batch, []
        if not self.started:  # a segment's first batch: inline unless the run is large
            self.owner = self._worker(self.added >= self.workers_from or ends_segment and self.segments > 0)
            self.started = True
        spill = self.spill.next_file() if ends_segment else None
        if self.owner is None:
            while self.sent:  # keep the order: earlier batches first
                self._receive()
            self.deliver(self.inline.run(chunks, ends_segment, spill))
        else:
            self.owner.send(("chunks", chunks, ends_segment, spill))
            self.owner.has_chunks = True
            self.sent.append(self.owner)
            while len(self.sent) > IN_FLIGHT * self.workers:
                self._receive()
        if ends_segment:
            self.segments += 1
            self.started = False
            self.chunks = self.text = 0

    def _receive(self) -> None:
        self.deliver(self.sent.pop(0).receive())

    def merge_ranges(self, jobs: Iterable[list[list[tuple]] | SpillRange], dead: np.ndarray, chunks: int):
        """The encoded rows of each term range of a merge (kenning.indexing.segments), in order:
        through the workers when the run has them or the merge is as large as a segment (MERGE_AHEAD
        ranges in flight a worker), else here. A job is a range's rows from each merged segment, or
        a SpillRange the worker reads them from. Call after `drain`."""
        encode, decode, _ = self.codec  # (inline, the writer takes the rows as they are)
        large = chunks >= self.tuning.flush_chunks
        if large:
            self._start(self.workers)  # every worker (unless there are none to start)
        # a run analysed inline merges inline, though a worker started early (`early_start`)
        pool = self.pool if large or any(w.has_chunks for w in self.pool) else []
        if not pool:
            for parts in jobs:
                yield merge_job(parts, dead, decode, encode)
            return
        for worker in pool:
            worker.send(("dead", dead))
        waiting: collections.deque[_Worker] = collections.deque()
        for n, parts in enumerate(jobs):
            worker = pool[n % len(pool)]
            worker.send(("merge", parts))
            waiting.append(worker)
            if len(waiting) >= MERGE_AHEAD * len(pool):
                yield waiting.popleft().receive()
        while waiting:
            yield waiting.popleft().receive()

    def _worker(self, wanted: bool) -> _Worker | None:
        """The worker for the next segment (None: inline)."""
        if not wanted or self.workers <= 0:
            return None
        if not self._start(self.segments % self.workers + 1):
            return None
        return self.pool[self.segments % len(self.pool)]

    def _start(self, count: int) -> bool:
        """Start workers until `count` run (False when none can: the run goes inline). Each starts
        when first needed: a run of one segment (a small re-index) starts one interpreter, not one
        per core. A worker that cannot start leaves the run to those already running."""
        while len(self.pool) < min(count, self.workers):
            try:
                self.pool.append(_Worker(self.setup))
            except OSError:
                self.workers = len(self.pool)  # 0: no processes here, analyse inline
                break
        return bool(self.pool)

    def __enter__(self) -> ChunkAnalysis:
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(abort=kind is not None)
