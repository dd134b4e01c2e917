"""Chunk analysis (tokens into a segment's arrays, entities, spelling words) beside the writer.

Analysing new chunks (tokenising, stemming, grouping tokens into term ids, finding entities) is most
of an index build's CPU time, and it needs nothing from the store: only the chunk's id and text. The
writer inserts each chunk (which gives the id) and hands it here. A small run is analysed in this
process. Once a run has more than `BATCH` new chunks, batches go to one worker process per spare core
while the writer goes on reading, parsing and storing; results come back in the order sent, so the
segment holds chunk ids ascending and its postings are the same as analysing inline
(tests/test_index_analysis.py).

Workers are fresh interpreters (`python -m kenning.indexing.analysis_worker`) talking over pipes, not forks
(a process that has loaded an embedding runtime holds threads a fork would copy mid-lock) and not
multiprocessing's spawn (which re-runs the caller's main script). A worker that dies fails the write
(the transaction rolls back); workers that cannot start at all leave the run inline.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kenning.analysis.analyzer import Analyzer, AnalyzerConfig
from kenning.entities.extract import GlossaryMatcher, extract
from kenning.indexing.segments import SegmentBuilder, SegmentParts
from kenning.store import StorageError

BATCH = 2_000  # chunks per batch sent to a worker; also the run size from which workers start
IN_FLIGHT = 2  # batches per worker sent ahead before the writer waits for the oldest
WORKERS_ENV = "KENNING_INDEX_WORKERS"  # worker processes for analysis (0: inline); default cores - 1


def worker_count() -> int:
    """Worker processes for chunk analysis: $KENNING_INDEX_WORKERS, else one per core but one."""
    configured = os.environ.get(WORKERS_ENV, "").strip()
    if configured:
        try:
            return max(0, int(configured))
        except ValueError:
            raise ValueError(f"{WORKERS_ENV} must be a whole number, got {configured!r}") from None
    return max(0, (os.cpu_count() or 1) - 1)


@dataclass
class AnalysedChunks:
    """One batch analysed: its segment arrays with their own term numbering, each chunk's entities,
    and how many chunks held each raw token (the spelling vocabulary's counts)."""

    segment: SegmentParts
    entities: list[tuple[int, dict]] = field(default_factory=list)
    raws: Counter = field(default_factory=Counter)


def analyse(
    analyzer: Analyzer, matcher: GlossaryMatcher | None, chunks: list[tuple[int, str, str, dict | None]]
) -> AnalysedChunks:
    """Analyse chunks (id, title, body, meta), ids ascending."""
    builder = SegmentBuilder(analyzer)
    entities, raws = [], Counter()
    for chunk_id, title, body, meta in chunks:
        raws.update(builder.add(chunk_id, title, body))
        entities.append((chunk_id, extract(body, meta, matcher)))
    return AnalysedChunks(builder.parts(), entities, raws)


class _Worker:
    """One analysis process (kenning.indexing.analysis_worker), fed pickled batches on its
    stdin; a thread reads its answers as they come, so neither side can block the other on a full
    pipe."""

    def __init__(self, config: AnalyzerConfig, matcher: GlossaryMatcher | None):
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kenning.indexing.analysis_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.answers: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.send((config, matcher))

    def send(self, message) -> None:
        try:
            pickle.dump(message, self.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise StorageError(f"an analysis worker stopped while indexing ({self._exit()})") from exc

    def receive(self) -> AnalysedChunks:
        answer = self.answers.get()
        if answer is None:
            raise StorageError(f"an analysis worker stopped while indexing ({self._exit()})")
        return answer

    def _read(self) -> None:
        try:
            while True:
                self.answers.put(pickle.load(self.process.stdout))
        except Exception:  # end of output, or an answer that cannot be read: the write fails
            self.answers.put(None)

    def _exit(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "still running"
        return f"exit status {code}"

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=10)


def serve(stdin=None, stdout=None) -> None:
    """The worker's loop: the analyzer settings and glossary first, then batches until end of input."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    config, matcher = pickle.load(stdin)
    analyzer = Analyzer(config)
    batches: queue.Queue = queue.Queue()

    def read() -> None:  # take batches as they come, so the writer never waits on a full pipe
        try:
            while True:
                batches.put(pickle.load(stdin))
        except EOFError:
            batches.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (chunks := batches.get()) is not None:
        pickle.dump(analyse(analyzer, matcher, chunks), stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


class ChunkAnalysis:
    """Takes the writer's new chunks and delivers their analysis to `deliver` in the order given,
    inline or through worker processes (see the module docstring). `drain` before reading what was
    delivered."""

    def __init__(
        self,
        analyzer: Analyzer,
        matcher: GlossaryMatcher | None,
        deliver: Callable[[AnalysedChunks], None],
        workers: int | None = None,
    ):
        self.analyzer = analyzer
        self.matcher = matcher
        self.deliver = deliver
        self.workers = worker_count() if workers is None else workers
        self.batch: list[tuple[int, str, str, dict | None]] = []
        self.sent: list[_Worker] = []  # the worker of each batch sent and not yet delivered, oldest first
        self.pool: list[_Worker] = []
        self.seen = 0

    def add(self, chunk_id: int, title: str, body: str, meta: dict | None) -> None:
        self.batch.append((chunk_id, title, body, meta))
        self.seen += 1
        if len(self.batch) >= BATCH:
            self._send()

    def pending(self) -> int:
        """Chunks taken but not yet delivered."""
        return len(self.batch) + BATCH * len(self.sent)

    def drain(self) -> None:
        """Deliver everything taken so far."""
        self._send()
        while self.sent:
            self._receive()

    def close(self) -> None:
        for worker in self.pool:
            worker.close()
        self.pool.clear()
        self.sent.clear()

    def _send(self) -> None:
        if not self.batch:
            return
        chunks, self.batch = self.batch, []
        pool = self._pool() if self.seen > BATCH else []
        if not pool:
            while self.sent:  # keep the order: earlier batches first
                self._receive()
            self.deliver(analyse(self.analyzer, self.matcher, chunks))
            return
        worker = min(pool, key=self.sent.count)  # the least loaded
        worker.send(chunks)
        self.sent.append(worker)
        while len(self.sent) > IN_FLIGHT * len(pool):
            self._receive()

    def _receive(self) -> None:
        self.deliver(self.sent.pop(0).receive())

    def _pool(self) -> list[_Worker]:
        if not self.pool and self.workers > 0:
            try:
                self.pool = [_Worker(self.analyzer.config, self.matcher) for _ in range(self.workers)]
            except OSError:
                self.close()
                self.workers = 0  # no processes here: analyse inline
        return self.pool

    def __enter__(self) -> ChunkAnalysis:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
