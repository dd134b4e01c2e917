"""A run's segments spilled to files (kenning.indexing.spill): rows read back exactly, merge ranges
that cover every row once, and no spill folder left behind by a run, a failed run or a killed one."""

import json
import random

import numpy as np
import pytest

from kenning import Index
from kenning.indexing import analysis, spill
from kenning.indexing.spill import SPILL_PREFIX, SpilledSegment, read_rows, spill_ranges, write_spill
from kenning.store.compact import encode_posting_row


def encoded_rows(rng: random.Random, terms: list[str]) -> list[tuple[tuple, bytes]]:
    out = []
    for term in sorted(set(terms)):
        n = rng.randint(1, 40)
        ids = np.array(sorted(rng.sample(range(10_000), n)), dtype=np.uint32)
        tft = np.array([rng.randint(0, 2) for _ in range(n)], dtype=np.uint16)
        tfb = np.array([rng.randint(1, 300) for _ in range(n)], dtype=np.uint16)
        pt = np.arange(int(tft.sum()), dtype=np.uint32)
        pb = np.array([rng.randint(0, 70_000) for _ in range(int(tfb.sum()))], dtype=np.uint32)
        out.append(encode_posting_row(term, ids, tft, tfb, pt, pb))
    return out


def spilled(tmp_path, name: str, rows) -> SpilledSegment:
    path = str(tmp_path / name)
    marks, count = write_spill(path, rows)
    empty = np.zeros(0, dtype=np.uint32)
    return SpilledSegment(path, empty, empty, empty, marks, count, True)


def test_rows_read_back_as_written_with_their_digests(tmp_path):
    rng = random.Random(1)
    rows = encoded_rows(
        rng, ["zebra", "ärger", "日本", "a", "parse_query", "\U0001f600"] + [f"w{i}" for i in range(50)]
    )
    segment = spilled(tmp_path, "one.spill", rows)
    assert segment.rows == len(rows)
    assert list(read_rows(segment.path)) == rows
    assert segment.marks[-1][2] == (tmp_path / "one.spill").stat().st_size


@pytest.mark.parametrize("seed", range(6))
def test_merge_ranges_hold_every_row_once_in_term_order(tmp_path, monkeypatch, seed):
    """However the marks fall, each term's rows from every spill land in exactly one range, and the
    ranges follow each other in term order."""
    rng = random.Random(seed)
    monkeypatch.setattr(spill, "SPILL_MARK_BYTES", rng.choice([1, 500, 3000, 1 << 20]))
    vocabulary = [f"t{i:04d}" for i in range(400)]
    spills, written = [], []
    for n in range(rng.randint(1, 5)):
        rows = encoded_rows(rng, rng.sample(vocabulary, rng.randint(1, 200)))
        spills.append(spilled(tmp_path, f"{n}.spill", rows))
        written.append([row for row, _ in rows])
    ranges = spill_ranges(spills, budget=rng.choice([2000, 20_000, 10**9]))
    seen = [[] for _ in spills]
    last = None
    for job in ranges:
        for i, part in enumerate(job.parts()):
            for row in part:
                assert (job.low is None or row[0] >= job.low) and (job.high is None or row[0] < job.high)
            seen[i].extend(part)
        assert last is None or job.low == last
        last = job.high
    assert last is None and seen == written


def build(folder, index_dir, workers, monkeypatch) -> None:
    monkeypatch.setenv(analysis.WORKERS_ENV, str(workers))
    with Index(index_dir) as index:
        index.add([folder], progress=False)


def notes(folder, files: int = 8):
    folder.mkdir()
    for f in range(files):
        (folder / f"n{f}.jsonl").write_text(
            "".join(
                json.dumps({"_id": f"d{f}-{n}", "title": "", "text": f"word{n % 7} note {f} w{n}"}) + "\n"
                for n in range(30)
            )
        )
    return folder


@pytest.mark.parametrize("workers", [0, 2])
def test_a_run_leaves_no_spill_folder_and_a_killed_runs_folder_goes(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(analysis, "FLUSH_CHUNKS", 50)  # several segments spilled, then merged
    folder, index_dir = notes(tmp_path / "notes"), tmp_path / "ix"
    build(folder, index_dir, workers, monkeypatch)
    assert not list(index_dir.glob(SPILL_PREFIX + "*"))
    left = index_dir / f"{SPILL_PREFIX}killed"  # what a run killed mid-write leaves
    left.mkdir()
    (left / "segment-000001.spill").write_bytes(b"partial")
    (folder / "n_new.jsonl").write_text(json.dumps({"_id": "new", "title": "", "text": "fresh words"}) + "\n")
    build(folder, index_dir, workers, monkeypatch)
    assert not list(index_dir.glob(SPILL_PREFIX + "*"))
    with Index(index_dir) as index:
        assert index.search("fresh", mode="lexical").hits


def test_a_failed_run_removes_its_spill_folder(tmp_path, monkeypatch):
    from kenning.indexing import writer

    monkeypatch.setattr(analysis, "FLUSH_CHUNKS", 50)
    folder, index_dir = notes(tmp_path / "notes"), tmp_path / "ix"
    made = []

    def failing(store, spills, *args):
        made.extend(s.path for s in spills)
        raise RuntimeError("disk full")

    monkeypatch.setattr(writer, "land_spilled", failing)
    monkeypatch.setenv(analysis.WORKERS_ENV, "0")
    with Index(index_dir) as index:
        with pytest.raises(RuntimeError, match="disk full"):
            index.add([folder], progress=False)
        assert index.store.segment_sizes() == []
    assert len(made) > 1 and not list(index_dir.glob(SPILL_PREFIX + "*"))


def test_a_workers_failure_to_spill_is_the_writers_error_and_the_run_rolls_back(tmp_path, monkeypatch):
    """A spill file a worker cannot write (here its folder is gone; a full disk alike) fails the run
    with that error, not with a worker that died, and the index keeps its last commit."""
    monkeypatch.setattr(analysis, "BATCH", 20)  # a run large enough for the workers
    monkeypatch.setattr(analysis, "FLUSH_CHUNKS", 50)
    folder, index_dir = notes(tmp_path / "notes"), tmp_path / "ix"
    build(folder, index_dir, 1, monkeypatch)
    (folder / "more.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"m{n}", "title": "", "text": f"later words {n}"}) + "\n" for n in range(120)
        )
    )
    monkeypatch.setattr(spill.SpillFolder, "next_file", lambda self: str(tmp_path / "gone" / "segment.spill"))
    with Index(index_dir) as index:
        with pytest.raises(FileNotFoundError, match="gone"):
            index.add([folder], progress=False)
        assert not index.search("later", mode="lexical").hits and index.search("note", mode="lexical").hits
