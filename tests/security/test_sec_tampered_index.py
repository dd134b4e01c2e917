"""A handed-over index whose rows and side files were changed by someone else, one change at a time.

The threat model (docs/security.md): every row of `index.db` and every file beside it in the index
folder may have been written by an attacker. Each case below changes one thing in a copy of a real
index (two segments, posting packs and long rows, vectors, a saved HNSW graph and its stamp, the
lengths file), then `kenning search` (lexical with a phrase, and hybrid), `get`, `status` and
`verify` run against the copy. None may crash (a signal), hang (its alarm), grow past RSS_BOUND_MB
of resident memory, or print a traceback. Each either answers as the untouched index answers (a
side file that is not kenning's own is left unused) or prints one line saying the index is damaged
and naming `kenning verify` / `kenning repair`; `kenning verify` reports the damage.

The commands run as child processes of a fork server: a process that has imported kenning forks
one child per command, with its own address-space limit (so an unbounded allocation fails in the
child instead of swamping the machine), alarm and peak RSS (read with wait4). Starting the
interpreter and importing kenning for each of ~300 commands would not fit the time budget; the
last test runs the real `kenning` executable on a few of the cases to show the two agree.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from kenning.store.compact import _unpack_ids, _varint, id_count, pack_ids

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]
RSS_BOUND_MB = 1024
ADDRESS_SPACE = 6 << 30  # each command's limit: far above what it needs, far below the machine
ALARM_S = 30  # a command that has not ended by then hangs

LEXICAL = ["search", "--mode", "lexical", "--json", "-n", "30", '"shared words" gamma stone unique5x1']
HYBRID = ["search", "--mode", "hybrid", "--json", "-n", "30", "gamma stone river"]
GET = ["get", "chunk:3"]
STATUS = ["status"]
VERIFY = ["verify"]

# the fork server: reads one JSON job a line, forks a child that runs kenning's entry point on it,
# answers with the child's wait status and peak RSS
RUNNER = r"""
import json, os, resource, signal, sys, threading, traceback
import kenning.surfaces.cli, kenning.surfaces.entry
assert threading.active_count() == 1, "the fork server must hold no thread"
for line in sys.stdin:
    job = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.chdir(job["cwd"])
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(job[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            resource.setrlimit(resource.RLIMIT_AS, (job["address_space"], job["address_space"]))
            signal.alarm(job["alarm"])
            sys.argv = ["kenning", *job["argv"]]
            try:
                code = kenning.surfaces.entry.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code or 0)
    _, status, usage = os.wait4(pid, 0)
    print(json.dumps({"status": status, "rss_kb": usage.ru_maxrss}), flush=True)
"""


@dataclass
class Ran:
    argv: list[str]
    code: int | None  # None: ended by a signal
    signal: int | None
    rss_mb: float
    stdout: str
    stderr: str

    def where(self) -> str:
        return (
            f"`kenning {' '.join(self.argv)}`: code {self.code}, signal {self.signal}\n{self.stderr[-2000:]}"
        )


class ForkServer:
    def __init__(self, env: dict, scratch: Path):
        self.scratch = scratch
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.count = 0

    def run(self, cwd: Path, argv: list[str]) -> Ran:
        self.count += 1
        out, err = self.scratch / f"{self.count}.out", self.scratch / f"{self.count}.err"
        job = {
            "cwd": str(cwd),
            "argv": argv,
            "stdout": str(out),
            "stderr": str(err),
            "address_space": ADDRESS_SPACE,
            "alarm": ALARM_S,
        }
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "the fork server died"
        done = json.loads(answer)
        status = done["status"]
        return Ran(
            argv,
            os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            done["rss_kb"] / 1024,
            out.read_text(errors="replace"),
            err.read_text(errors="replace"),
        )

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --------------------------------------------------------------------------------- the index
WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud paper engine"
    " signal harbor winter garden copper silver"
).split()


def _notes(folder: Path, first: int, count: int, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    for i in range(first, first + count):
        parts = []
        for s in range(2):
            # long enough that the commonest words' rows stay rows of `postings`, not packed
            body = " ".join(rng.choice(WORDS) for _ in range(80))
            parts.append(f"## Part {s} of note {i}\n\n{body} unique{i}x{s} common shared words here.\n")
        (folder / f"n{i:02d}.md").write_text(f"# Note {i}\n\n" + "\n".join(parts))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")  # the user's own state folder (seal key)
    return {
        **os.environ,
        "KENNING_NO_SERVER": "1",
        "KENNING_HNSW_THRESHOLD": "4",  # so the small index keeps a graph file
        "XDG_STATE_HOME": str(state),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONFAULTHANDLER": "",
    }


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, env):
    """A real index built by `kenning index` in two runs (two segments), with vectors and a graph."""
    root = tmp_path_factory.mktemp("pristine")
    _notes(root / "notes", 0, 40, seed=7)
    _notes(root / "more", 40, 1, seed=8)
    for folder in ("notes", "more"):
        done = subprocess.run(
            [*ENTRY, "index", "-q", folder], cwd=root, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr
    ix = root / ".kenning"
    assert list((ix / "ann").glob("*.usearch")) and (ix / "views" / "lengths.bin").exists()
    with sqlite3.connect(ix / "index.db") as db:
        assert db.execute("SELECT count(*) FROM segments").fetchone()[0] == 2
        assert db.execute("SELECT count(*) FROM posting_packs").fetchone()[0] > 0
        assert db.execute("SELECT count(*) FROM postings").fetchone()[0] > 0
    return root


@pytest.fixture(scope="module")
def server(env, tmp_path_factory):
    running = ForkServer(env, tmp_path_factory.mktemp("runs"))
    yield running
    running.close()


def _hits(ran: Ran) -> list[int]:
    return [hit["id"] for hit in json.loads(ran.stdout)["hits"]]


@pytest.fixture(scope="module")
def expected(pristine, server, tmp_path_factory):
    """What an untouched copy of the index answers, laid out as every tampered copy is."""
    where = _tampered(pristine, tmp_path_factory.mktemp("untouched"), Case("untouched", lambda ix, db: None))
    out = {}
    for argv in (LEXICAL, HYBRID, GET, STATUS, VERIFY):
        ran = server.run(where, argv)
        assert ran.code == 0, ran.where()
        ran.stdout = ran.stdout.replace(str(where), "HERE")
        out[tuple(argv)] = ran
    assert _hits(out[tuple(LEXICAL)]) and _hits(out[tuple(HYBRID)])
    return out


# --------------------------------------------------------------------------------- the changes
def _graph(ix: Path) -> Path:
    return next((ix / "ann").glob("*.usearch"))


def _stamp(ix: Path) -> Path:
    return next((ix / "ann").glob("*.json"))


def _lengths(ix: Path) -> Path:
    return ix / "views" / "lengths.bin"


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link(path: Path, target) -> None:
    path.unlink()
    path.symlink_to(target)


def _sparse(path: Path, size: int = 2 << 30) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(size)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _flip(path: Path, seed: int, count: int = 40, start: float = 0.0) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    low = int(len(data) * start)
    for _ in range(count):
        data[rng.randrange(low, len(data))] ^= 1 << rng.randrange(8)
    with open(path, "r+b") as fh:  # in place: the same file, changed
        fh.write(data)


def _outside(ix: Path, path: Path) -> None:
    """The side file swapped for a symlink to a copy of it outside the index folder."""
    copy = ix.parent / f"outside-{path.name}"
    shutil.copy2(path, copy)
    _link(path, copy)


def _update(db, sql: str, *args) -> None:
    assert db.execute(sql, args).rowcount > 0, sql


def _each_row(db, table: str, column: str, change) -> None:
    rows = db.execute(f"SELECT rowid, {column} FROM {table}").fetchall()
    assert rows
    for rowid, value in rows:
        db.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", (change(bytes(value)), rowid))


def _ids(change):
    """A change to every long posting row's chunk ids (uint32 array in, array out), stored back four
    bytes each (they are read packed by their gaps or so)."""
    return lambda blob: change(_stored_ids(blob).copy()).astype("<u4").tobytes()


def _stored_ids(blob: bytes) -> np.ndarray:
    """A row's chunk ids, packed or four bytes each."""
    return np.frombuffer(blob, dtype="<u4") if len(blob) % 4 == 0 else _unpack_ids(blob)


def _packed_count(count: int):
    """Every long posting row's chunk ids packed, their count replaced by `count`."""

    def change(blob: bytes) -> bytes:
        packed = pack_ids(_stored_ids(blob).astype("<u4").tobytes())
        rest = packed[len(_varint(id_count(packed))) :]
        out = _varint(count) + rest
        return out if len(out) % 4 else out + b"\x00"

    return change


def _zstd_bomb(size: int, stated: bool = False) -> bytes:
    """A zstd frame of `size` zero bytes; `stated`: its header says how many (the decompressor then
    allocates that much up front, whatever output limit it is given)."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=1)
    with compressor.stream_writer(out := _Sink(), size=size if stated else -1) as writer:
        block = b"\0" * (1 << 20)
        for _ in range(size >> 20):
            writer.write(block)
    return out.data


class _Sink:
    def __init__(self):
        self.parts = []

    def write(self, data):
        self.parts.append(bytes(data))
        return len(data)

    @property
    def data(self):
        return b"".join(self.parts)


def _zstd_claiming(size: int) -> bytes:
    """A small zstd frame whose header says it holds `size` bytes (its blocks hold 300)."""
    import zstandard

    real = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(b"\0" * 300)
    descriptor = real[4]
    single = descriptor >> 5 & 1
    content_size_bytes = {0: single, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    dictionary_bytes = {0: 0, 1: 1, 2: 2, 3: 4}[descriptor & 3]
    blocks = real[5 + (not single) + dictionary_bytes + content_size_bytes :]
    # an 8-byte content size, no single segment (so a window descriptor: 2^(10+20) bytes)
    header = real[:4] + bytes([0b11000000 | (descriptor & 0b100), 20 << 3]) + struct.pack("<Q", size)
    return header + blocks


def _pack_header(change):
    def apply(blob: bytes) -> bytes:
        n, terms = struct.unpack_from("<II", blob)
        n, terms = change(n, terms)
        return struct.pack("<II", n & 0xFFFFFFFF, terms & 0xFFFFFFFF) + blob[8:]

    return apply


def _pack_lengths_bumped(blob: bytes) -> bytes:
    n, terms = struct.unpack_from("<II", blob)
    data = bytearray(blob)
    struct.pack_into("<H", data, 8 + terms, 0xFFFF)  # the first row's ids: 65,535 bytes long
    return bytes(data)


def _lengths_file_claiming(ix: Path, max_id: int) -> None:
    """A lengths file that names this very index (its digest holds) but claims chunk ids up to
    `max_id`, sized to match, sparse."""
    from kenning.sidefiles import lengths_file as lf
    from kenning.store import open_store

    store = open_store(ix, create=False)
    try:
        with store.reading():
            digest = lf.made_from(store, store.read_snapshot())
            live = len(store.read_snapshot().live)
    finally:
        store.close()
    size = max_id + 1
    total = lf.HEADER_BYTES + 2 * lf._aligned(2 * size) + lf._aligned(size)
    path = _lengths(ix)
    with open(path, "wb") as fh:
        fh.write(lf._HEADER.pack(lf.MAGIC, lf.VERSION, 0, max_id, live, digest, 5.0, 40.0).ljust(64, b"\0"))
        fh.truncate(total)


def _live(bitmap_ids) -> bytes:
    from pyroaring import BitMap

    live = BitMap(bitmap_ids)
    live.run_optimize()
    return live.serialize()


def _live_full_range() -> bytes:
    from pyroaring import BitMap

    live = BitMap()
    live.add_range(0, 1 << 32)
    live.run_optimize()
    return live.serialize()


@dataclass
class Case:
    name: str
    change: object  # (ix, db) -> None
    side: bool = False  # a side file: the index answers as before, the file unused
    drop_lengths: bool = False  # remove views/lengths.bin too, so the segments are read
    hybrid: bool = False  # also run a hybrid search
    reports: bool = True  # `kenning verify` must exit 1 naming a problem
    opens: bool = True  # False: SQLite itself refuses the folder; any one-line error will do


def _db(change):
    """A change to index.db's rows."""
    return lambda ix, db: change(db)


CASES = [
    # ---- the saved HNSW graph and its stamp (opened by usearch, in C)
    Case(
        "graph: bytes flipped in place",
        lambda ix, db: _flip(_graph(ix), 1, start=0.5),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case(
        "graph: header flipped",
        lambda ix, db: _flip(_graph(ix), 2, count=6, start=0.0),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case("graph: a FIFO", lambda ix, db: _fifo(_graph(ix)), side=True, hybrid=True, reports=False),
    Case(
        "graph: symlink to /dev/zero",
        lambda ix, db: _link(_graph(ix), "/dev/zero"),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case(
        "graph: symlink outside",
        lambda ix, db: _outside(ix, _graph(ix)),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case("graph: 0 bytes", lambda ix, db: _empty(_graph(ix)), side=True, hybrid=True, reports=False),
    Case("graph: 2 GB sparse", lambda ix, db: _sparse(_graph(ix)), side=True, hybrid=True, reports=False),
    Case("stamp: a FIFO", lambda ix, db: _fifo(_stamp(ix)), side=True, hybrid=True, reports=False),
    Case(
        "stamp: symlink to /dev/zero",
        lambda ix, db: _link(_stamp(ix), "/dev/zero"),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case("stamp: 2 GB sparse", lambda ix, db: _sparse(_stamp(ix)), side=True, hybrid=True, reports=False),
    Case("stamp: 0 bytes", lambda ix, db: _empty(_stamp(ix)), side=True, hybrid=True, reports=False),
    Case(
        "stamp: huge count",
        lambda ix, db: _stamp(ix).write_text(
            json.dumps({**json.loads(_stamp(ix).read_text()), "count": 2**63})
        ),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case(
        "stamp: nested past the stack",  # 2 KB of brackets: json.loads raises RecursionError
        lambda ix, db: _stamp(ix).write_text("[" * 1500 + "]" * 1500),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case(
        "graph record: nested past the stack",
        _db(
            lambda db: _update(
                db, "UPDATE meta SET value=? WHERE key='vector_graph'", "[" * 1500 + "]" * 1500
            )
        ),
        hybrid=True,
    ),
    Case(
        "graph lacks record: nested past the stack",
        _db(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('vector_graph_lacks', ?)",
                ('{"graph":' + "[" * 1500 + "]" * 1500 + "}",),
            )
        ),
        hybrid=True,
        reports=False,
    ),
    Case(
        "graph record: not JSON",
        _db(lambda db: _update(db, "UPDATE meta SET value='{' WHERE key='vector_graph'")),
        hybrid=True,
    ),
    Case(
        "graph lacks record: every id",
        _db(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('vector_graph_lacks', ?)",
                (
                    json.dumps(
                        {"graph": {}, "ids": __import__("base64").b64encode(_live_full_range()).decode()}
                    ),
                ),
            )
        ),
        hybrid=True,
        reports=False,
    ),
    # ---- the lengths file (memory-mapped)
    Case("lengths: a FIFO", lambda ix, db: _fifo(_lengths(ix)), side=True, reports=False),
    Case(
        "lengths: symlink to /dev/zero",
        lambda ix, db: _link(_lengths(ix), "/dev/zero"),
        side=True,
        reports=False,
    ),
    Case("lengths: symlink outside", lambda ix, db: _outside(ix, _lengths(ix)), side=True, reports=False),
    Case("lengths: 0 bytes", lambda ix, db: _empty(_lengths(ix)), side=True, reports=False),
    Case("lengths: 2 GB sparse", lambda ix, db: _sparse(_lengths(ix)), side=True, reports=False),
    Case(
        "lengths: header flipped",
        lambda ix, db: _flip(_lengths(ix), 3, count=8, start=0.0),
        side=True,
        reports=False,
    ),
    Case(
        "lengths: truncated",
        lambda ix, db: _lengths(ix).write_bytes(_lengths(ix).read_bytes()[:100]),
        side=True,
        reports=False,
    ),
    Case(
        "lengths: ids to 2**32-1, sparse",
        lambda ix, db: _lengths_file_claiming(ix, 2**32 - 1),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case(
        "lengths: ids to 2**28, sparse",
        lambda ix, db: _lengths_file_claiming(ix, 2**28),
        side=True,
        hybrid=True,
        reports=False,
    ),
    Case(
        "views: symlink to /dev",
        lambda ix, db: (shutil.rmtree(ix / "views"), (ix / "views").symlink_to("/dev")),
        side=True,
        reports=False,
    ),
    # ---- the database's own side files
    Case("index.db-wal: a FIFO", lambda ix, db: os.mkfifo(ix / "index.db-wal"), side=True, reports=False),
    Case(
        "index.db-shm: symlink to /dev/zero",
        lambda ix, db: (ix / "index.db-shm").symlink_to("/dev/zero"),
        reports=False,
        opens=False,
    ),
    # ---- segments (read when no lengths file serves)
    *[
        Case(
            f"segment: n_docs {n}",
            _db(lambda db, n=n: _update(db, "UPDATE segments SET n_docs=? WHERE id=1", n)),
            drop_lengths=True,
        )
        for n in (-1, 0, 2**31, 2**63 - 1)
    ],
    Case(
        "segment: ids truncated",
        _db(lambda db: _update(db, "UPDATE segments SET doc_ids=x'010000' WHERE id=1")),
        drop_lengths=True,
    ),
    Case(
        "segment: ids to 2**32-1",
        _db(
            lambda db: _update(
                db,
                "UPDATE segments SET doc_ids=?, n_docs=2, title_lens=x'01000100', body_lens=x'01000100'"
                " WHERE id=2",
                struct.pack("<II", 2**32 - 2, 2**32 - 1),
            )
        ),
        drop_lengths=True,
        hybrid=True,
    ),
    Case(
        "segment: 2**31 ids, lengths a zstd bomb",
        _db(
            lambda db: _update(
                db,
                "UPDATE segments SET doc_ids=?, n_docs=?, title_lens=?, body_lens=? WHERE id=2",
                struct.pack("<II", 81, 81 + 2**31 - 1),
                2**31,
                _zstd_bomb(1 << 30),
                _zstd_bomb(1 << 30),
            )
        ),
        drop_lengths=True,
    ),
    Case(
        "segment: ids out of order",
        _db(
            lambda db: _update(
                db, "UPDATE segments SET doc_ids=?, n_docs=2 WHERE id=2", struct.pack("<II", 90000, 81)
            )
        ),
        drop_lengths=True,
    ),
    Case(
        "segment: explicit ids not ascending",
        _db(
            lambda db: _update(
                db, "UPDATE segments SET doc_ids=? WHERE id=1", np.arange(80, 0, -1, dtype="<u4").tobytes()
            )
        ),
        drop_lengths=True,
    ),
    Case(
        "segment: lengths a 1 GB zstd bomb",
        _db(lambda db: _update(db, "UPDATE segments SET title_lens=? WHERE id=1", _zstd_bomb(1 << 30))),
        drop_lengths=True,
    ),
    Case(
        "segment: lengths a frame claiming 2**62 bytes",
        _db(lambda db: _update(db, "UPDATE segments SET body_lens=? WHERE id=1", _zstd_claiming(2**62))),
        drop_lengths=True,
    ),
    Case(
        "segment: lengths garbage",
        _db(lambda db: _update(db, "UPDATE segments SET body_lens=x'0102030405' WHERE id=1")),
        drop_lengths=True,
    ),
    Case(
        "segment: lengths an integer",
        _db(lambda db: _update(db, "UPDATE segments SET body_lens=7 WHERE id=1")),
        drop_lengths=True,
    ),
    # ---- long posting rows
    Case("postings: ids cut mid-id", _db(lambda db: _each_row(db, "postings", "ids", lambda b: b[:-1]))),
    Case(
        "postings: packed ids claiming 2**31",
        _db(lambda db: _each_row(db, "postings", "ids", _packed_count(2**31))),
    ),
    Case(  # a megabyte of width-0 blocks: a valid form of 2**27 ids, 512 MB read back
        "postings: packed ids claiming 2**27 in a megabyte",
        _db(
            lambda db: _update(
                db,
                "UPDATE postings SET ids=?, tf_title=x'', tf_body=x'', pos_title=x'', pos_body=x''",
                _varint(2**27 + 1) + _varint(0) + bytes(2**20),
            )
        ),
    ),
    Case(
        "postings: packed ids claiming one more",
        _db(lambda db: _each_row(db, "postings", "ids", lambda b: _packed_count(id_count(b) + 1)(b))),
    ),
    Case(
        "postings: ids descending", _db(lambda db: _each_row(db, "postings", "ids", _ids(lambda a: a[::-1])))
    ),
    Case(
        "postings: ids all the same",
        _db(lambda db: _each_row(db, "postings", "ids", _ids(lambda a: np.full_like(a, a[0])))),
    ),
    Case(
        "postings: an id past every chunk",
        _db(lambda db: _each_row(db, "postings", "ids", _ids(lambda a: np.append(a[:-1], 2**32 - 1)))),
    ),
    Case(
        "postings: first id far past the rest",
        _db(lambda db: _each_row(db, "postings", "ids", _ids(lambda a: np.append([a[-1] + 5000], a[1:])))),
    ),
    Case(
        "postings: title tf of another length",
        _db(lambda db: _each_row(db, "postings", "tf_title", lambda b: b + b"\x01\x02\x03")),
    ),
    Case(
        "postings: body tf one short", _db(lambda db: _each_row(db, "postings", "tf_body", lambda b: b[:-1]))
    ),
    Case("postings: positions cut", _db(lambda db: _each_row(db, "postings", "pos_body", lambda b: b[:-3]))),
    Case("postings: ids an integer", _db(lambda db: _update(db, "UPDATE postings SET ids=12345"))),
    Case(
        "postings: positions text",
        _db(lambda db: _update(db, "UPDATE postings SET pos_body='text', pos_title='text'")),
    ),
    # ---- posting packs
    Case(
        "packs: row count 2**31",
        _db(lambda db: _each_row(db, "posting_packs", "data", _pack_header(lambda n, t: (2**31, t)))),
    ),
    Case(
        "packs: row count 2**32-1",
        _db(lambda db: _each_row(db, "posting_packs", "data", _pack_header(lambda n, t: (2**32 - 1, t)))),
    ),
    Case(
        "packs: terms length 2**32-1",
        _db(lambda db: _each_row(db, "posting_packs", "data", _pack_header(lambda n, t: (n, 2**32 - 1)))),
    ),
    Case(
        "packs: truncated", _db(lambda db: _each_row(db, "posting_packs", "data", lambda b: b[: len(b) // 2]))
    ),
    Case(
        "packs: a column length past the end",
        _db(lambda db: _each_row(db, "posting_packs", "data", _pack_lengths_bumped)),
    ),
    Case("packs: 3 bytes", _db(lambda db: _each_row(db, "posting_packs", "data", lambda b: b[:3]))),
    Case(
        "packs: terms not UTF-8",
        _db(lambda db: _each_row(db, "posting_packs", "data", lambda b: b[:8] + b"\xff\xfe" + b[10:])),
    ),
    Case("packs: data an integer", _db(lambda db: _update(db, "UPDATE posting_packs SET data=5"))),
    # ---- the commit record
    Case(
        "live: garbage",
        _db(lambda db: _update(db, "UPDATE meta SET value=x'3a300000ffffff7f0101' WHERE key='live'")),
        hybrid=True,
    ),
    Case(
        "live: ids 1 and 2**32-1",
        _db(lambda db: _update(db, "UPDATE meta SET value=? WHERE key='live'", _live([1, 2**32 - 1]))),
        hybrid=True,
    ),
    Case(
        "live: every id there is",
        _db(lambda db: _update(db, "UPDATE meta SET value=? WHERE key='live'", _live_full_range())),
        hybrid=True,
    ),
    Case("live: a text", _db(lambda db: _update(db, "UPDATE meta SET value='live' WHERE key='live'"))),
    Case(
        "generation: not a number",
        _db(lambda db: _update(db, "UPDATE meta SET value='x' WHERE key='generation'")),
    ),
    Case("analyzer: not JSON", _db(lambda db: _update(db, "UPDATE meta SET value='{' WHERE key='analyzer'"))),
    # ---- chunk rows
    # (block=NULL: the row's own body is read, not the block it was written in)
    Case(
        "chunk: body an integer",
        _db(lambda db: _update(db, "UPDATE chunks SET body=42, block=NULL WHERE id=3")),
    ),
    Case(
        "chunk: body a 1 GB zstd bomb",
        _db(lambda db: _update(db, "UPDATE chunks SET body=?, block=NULL WHERE id=3", _zstd_bomb(1 << 30))),
    ),
    Case(
        "chunk: body a frame claiming 2**62 bytes",
        _db(lambda db: _update(db, "UPDATE chunks SET body=?, block=NULL WHERE id=3", _zstd_claiming(2**62))),
    ),
    Case(
        "chunk: body garbage bytes",
        _db(lambda db: _update(db, "UPDATE chunks SET body=x'78da0102', block=NULL WHERE id=3")),
    ),
    # ---- text blocks (kenning.store.text_blocks)
    Case("chunk: block missing", _db(lambda db: _update(db, "UPDATE chunks SET block=987654 WHERE id=3"))),
    Case("chunk: block id a text", _db(lambda db: _update(db, "UPDATE chunks SET block='x' WHERE id=3"))),
    Case(
        "chunk: range outside its block",
        _db(lambda db: _update(db, "UPDATE chunks SET block_start=0, block_end=1099511627776 WHERE id=3")),
    ),
    Case(
        "chunk: range as text",
        _db(lambda db: _update(db, "UPDATE chunks SET block_start='a', block_end=x'00' WHERE id=3")),
    ),
    Case(
        "chunk: range shifted by a byte",
        _db(lambda db: _update(db, "UPDATE chunks SET block_start=block_start + 1 WHERE id=3")),
    ),
    Case(
        "block: a 1 GB zstd bomb",
        _db(lambda db: _update(db, "UPDATE text_blocks SET data=?", _zstd_bomb(1 << 30))),
    ),
    Case(
        "block: a 1 GB zstd bomb stating its size",
        _db(lambda db: _update(db, "UPDATE text_blocks SET data=?", _zstd_bomb(1 << 30, stated=True))),
    ),
    Case(
        "chunk: body a 1 GB zstd bomb stating its size",
        _db(
            lambda db: _update(
                db, "UPDATE chunks SET body=?, block=NULL WHERE id=3", _zstd_bomb(1 << 30, stated=True)
            )
        ),
    ),
    Case(
        "block: a frame claiming 2**62 bytes",
        _db(lambda db: _update(db, "UPDATE text_blocks SET data=?", _zstd_claiming(2**62))),
    ),
    Case("block: garbage bytes", _db(lambda db: _update(db, "UPDATE text_blocks SET data=x'28b52ffd0102'"))),
    Case("block: cut short", _db(lambda db: _update(db, "UPDATE text_blocks SET data=substr(data, 1, 20)"))),
    Case("block: an integer", _db(lambda db: _update(db, "UPDATE text_blocks SET data=7"))),
    Case("chunk: title a blob", _db(lambda db: _update(db, "UPDATE chunks SET title=x'ff00fe' WHERE id=3"))),
    Case("chunk: meta not JSON", _db(lambda db: _update(db, "UPDATE chunks SET meta='{' WHERE id=3"))),
    Case(
        "chunk: meta nested past the stack",  # json.loads raises RecursionError, not ValueError
        _db(
            lambda db: _update(
                db, "UPDATE chunks SET meta=? WHERE id=3", '{"a":' + "[" * 200_000 + "]" * 200_000 + "}"
            )
        ),
    ),
    Case(
        "chunk: a message window's meta nested past the stack",  # read by the dedup stage's groups
        _db(
            lambda db: _update(
                db,
                "UPDATE chunks SET meta=? WHERE id=3",
                '{"messages":' + "[" * 200_000 + "]" * 200_000 + "}",
            )
        ),
    ),
    Case(
        "chunk: page markup",
        _db(lambda db: _update(db, "UPDATE chunks SET page='<img src=x onerror=alert(1)>' WHERE id=3")),
    ),
    Case(
        "chunk: lines as text",
        _db(lambda db: _update(db, "UPDATE chunks SET start_line='x', end_line=x'00' WHERE id=3")),
    ),
    # ---- vectors
    Case(
        "vector: 7 bytes",
        _db(lambda db: _update(db, "UPDATE embeddings SET vector=substr(vector, 1, 7)")),
        hybrid=True,
    ),
    Case(
        "vector: one of 383 numbers",
        _db(
            lambda db: _update(
                db,
                "UPDATE embeddings SET vector=substr(vector, 1, 1532)"
                " WHERE text_hash IN (SELECT text_hash FROM embeddings LIMIT 1)",
            )
        ),
        hybrid=True,
    ),
    Case(
        "vector: NaN",
        _db(lambda db: _update(db, "UPDATE embeddings SET vector=?", b"\xff\xff\xff\x7f" * 384)),
        hybrid=True,
    ),
    Case("vector: an integer", _db(lambda db: _update(db, "UPDATE embeddings SET vector=3")), hybrid=True),
    # ---- entities
]
# random bytes of every decoded blob column flipped (deterministic seeds)
for _seed in range(4):
    for _table, _column in (("postings", "ids"), ("posting_packs", "data"), ("segments", "doc_ids")):
        CASES.append(
            Case(
                f"random flips: {_table}.{_column} seed {_seed}",
                _db(
                    lambda db, t=_table, c=_column, s=_seed: _each_row(
                        db, t, c, lambda b, s=s: _flipped_bytes(b, s)
                    )
                ),
                drop_lengths=_table == "segments",
                reports=False,  # a flip may land where nothing is checked (a pack's padding)
            )
        )


def _flipped_bytes(blob: bytes, seed: int) -> bytes:
    data = bytearray(blob)
    rng = random.Random(seed * 7919 + len(blob))
    for _ in range(max(1, len(data) // 16)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def _tampered(pristine: Path, where: Path, case: Case) -> Path:
    shutil.copytree(pristine / ".kenning", where / ".kenning", symlinks=True)
    for folder in ("notes", "more"):
        (where / folder).symlink_to(pristine / folder)  # the indexed files, as they were
    ix = where / ".kenning"
    if case.drop_lengths:
        _lengths(ix).unlink()
    with sqlite3.connect(ix / "index.db", isolation_level=None) as db:
        case.change(ix, db)
    return where


def _one_damage_line(ran: Ran, case: Case) -> bool:
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    return (
        len(lines) == 1
        and lines[0].startswith("kenning: error:")
        and (not case.opens or "kenning verify" in lines[0] or "kenning repair" in lines[0])
    )


def _check(case: Case, ran: Ran, expected: dict, where: Path) -> list[str]:
    wrong = []
    ran.stdout = ran.stdout.replace(str(where), "HERE")
    if ran.signal is not None:
        what = "hung (alarm)" if ran.signal == signal.SIGALRM else f"died of signal {ran.signal}"
        return [f"{what}: {ran.where()}"]
    if "Traceback" in ran.stderr:
        wrong.append(f"printed a traceback: {ran.where()}")
    if ran.rss_mb > RSS_BOUND_MB:
        wrong.append(f"peak RSS {ran.rss_mb:.0f} MB: {ran.where()}")
    mine = expected[tuple(ran.argv)]
    if ran.argv == VERIFY:
        if case.reports and ran.code != 1:
            wrong.append(f"verify did not report the damage: {ran.where()}\n{ran.stdout[-1500:]}")
        elif ran.code not in (0, 1) and not (not case.opens and _one_damage_line(ran, case)):
            wrong.append(f"verify failed: {ran.where()}")
        return wrong
    if ran.code == 0:
        if case.side:  # the file is not used: the same answer as the untouched index
            if ran.argv[0] == "search":
                if _hits(ran) != _hits(mine):
                    wrong.append(f"answered otherwise: {_hits(ran)} against {_hits(mine)}")
            elif ran.stdout != mine.stdout:
                wrong.append(f"answered otherwise: {ran.where()}\n{ran.stdout[-800:]}")
    elif not _one_damage_line(ran, case) or case.side:
        wrong.append(f"did not say in one line that the index is damaged: {ran.where()}")
    return wrong


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_tampered_index_never_crashes_hangs_or_swells(case, pristine, server, expected, tmp_path):
    where = _tampered(pristine, tmp_path, case)
    commands = [LEXICAL, *([HYBRID] if case.hybrid else []), GET, STATUS, VERIFY]
    wrong = []
    for argv in commands:
        wrong += _check(case, server.run(where, argv), expected, where)
    assert not wrong, "\n\n".join(wrong)


# cases the real executable runs too (the fork server's children must behave as it does)
REAL = ("graph: bytes flipped in place", "stamp: a FIFO", "lengths: a FIFO", "postings: ids descending")


@pytest.mark.parametrize("name", REAL)
def test_the_real_executable_agrees(name, pristine, env, expected, tmp_path):
    case = next(c for c in CASES if c.name == name)
    where = _tampered(pristine, tmp_path, case)
    probe = (
        "import resource, subprocess, sys; "
        f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE})); "
        "p = subprocess.run(sys.argv[1:], timeout=%d); "
        "print('RSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)"
    ) % ALARM_S
    for argv in (HYBRID if case.hybrid else LEXICAL, VERIFY):
        done = subprocess.run(
            [sys.executable, "-c", probe, *ENTRY, *argv], cwd=where, env=env, capture_output=True, text=True
        )
        rss_mb = int(done.stdout.rsplit("RSS", 1)[1]) / 1024 if "RSS" in done.stdout else 0
        ran = Ran(
            argv,
            done.returncode if done.returncode >= 0 else None,
            -done.returncode if done.returncode < 0 else None,
            rss_mb,
            done.stdout.rsplit("RSS", 1)[0],
            done.stderr,
        )
        assert done.returncode >= 0, ran.where()
        assert not _check(case, ran, expected, where), _check(case, ran, expected, where)
