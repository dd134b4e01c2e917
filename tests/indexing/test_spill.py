"""A run's segments spilled to files (kenning.indexing.spill): rows read back exactly, merge ranges
that cover every row once, and no spill folder left behind by a run, a failed run or a killed one."""

import json
import random

import numpy as np
import pytest

from kenning import Index
from kenning.indexing import analysis, chunk_run, spill
from kenning.indexing.spill import (
    SPILL_PREFIX,
    SpilledSegment,
    empty_columns,
    merge_columns,
    read_columns,
    spill_ranges,
    write_spill,
)
from kenning.indexing.tuning import WriterTuning
from kenning.store.records import SegmentColumns


def random_columns(rng: random.Random, terms: list[str], chunk_ids: range) -> SegmentColumns:
    """A segment's columns: each term in some of the chunks, with title and body positions."""
    parts = {name: [] for name in ("ids", "tft", "tfb", "pt", "pb")}
    bounds = {"p": [0], "t": [0], "b": [0]}
    for _term in terms:
        ids = sorted(rng.sample(chunk_ids, rng.randint(1, min(30, len(chunk_ids)))))
        tft = [rng.choice([0, 0, 1, 2]) for _ in ids]
        tfb = [rng.choice([0, 1, 3, 300]) if t else rng.randint(1, 300) for t in tft]
        parts["ids"] += ids
        parts["tft"] += tft
        parts["tfb"] += tfb
        parts["pt"] += [rng.randint(0, 20) for _ in range(sum(tft))]
        parts["pb"] += [rng.randint(0, 70_000) for _ in range(sum(tfb))]
        for key, total in (("p", len(parts["ids"])), ("t", len(parts["pt"])), ("b", len(parts["pb"]))):
            bounds[key].append(total)
    return SegmentColumns(
        list(terms),
        np.array(parts["ids"], dtype=np.uint32),
        np.array(parts["tft"], dtype=np.uint16),
        np.array(parts["tfb"], dtype=np.uint16),
        np.array(parts["pt"], dtype=np.uint32),
        np.array(parts["pb"], dtype=np.uint32),
        *(np.array(bounds[key], dtype=np.int64) for key in "ptb"),
    )


def rows(columns: SegmentColumns) -> list[tuple]:
    return [(term, *(a.tolist() for a in arrays)) for term, *arrays in columns.rows()]


def spilled(
    tmp_path, name: str, columns: SegmentColumns, mark_bytes: int = WriterTuning.spill_mark_bytes
) -> SpilledSegment:
    path = str(tmp_path / name)
    ids = np.unique(columns.ids)
    marks = write_spill(path, columns, mark_bytes)
    return SpilledSegment(path, ids, ids.astype(np.uint16), ids.astype(np.uint16), marks)


def test_columns_read_back_as_written(tmp_path):
    rng = random.Random(1)
    terms = sorted(
        ["zebra", "ärger", "日本", "a", "parse_query", "\U0001f600", *(f"w{i}" for i in range(50))]
    )
    columns = random_columns(rng, terms, range(1000))
    segment = spilled(tmp_path, "one.spill", columns)
    assert rows(read_columns(segment.path)) == rows(columns)
    assert rows(read_columns(segment.path, 3, 9)) == rows(columns)[3:9]
    assert rows(read_columns(segment.path, 3, 40, low="w2", high="w31")) == [
        row for row in rows(columns)[3:40] if "w2" <= row[0] < "w31"
    ]
    empty = spilled(tmp_path, "empty.spill", empty_columns())
    assert rows(read_columns(empty.path)) == [] and empty.marks == []


@pytest.mark.parametrize("seed", range(8))
def test_merged_ranges_hold_each_terms_postings_in_chunk_order_without_the_dead(tmp_path, monkeypatch, seed):
    """However the marks and ranges fall, the ranges' merged columns are, term after term, each
    segment's postings and positions of the term in segment order, without the deleted chunks."""
    rng = random.Random(seed)
    mark_bytes = rng.choice([1, 2000, 20_000, 1 << 30])
    vocabulary = [f"t{i:04d}" for i in range(300)]
    spills, segments = [], []
    for n in range(rng.randint(1, 5)):
        columns = random_columns(
            rng, sorted(rng.sample(vocabulary, rng.randint(1, 120))), range(n * 100, n * 100 + 100)
        )
        segments.append(columns)
        spills.append(spilled(tmp_path, f"{n}.spill", columns, mark_bytes))
    dead = np.array(sorted(rng.sample(range(len(spills) * 100), rng.choice([0, 5, 60]))), dtype=np.uint32)
    merged = []
    for job in spill_ranges(spills, budget=rng.choice([1000, 30_000, 10**9])):
        merged += rows(merge_columns(job.parts(), dead))
    expected: dict[str, list] = {}
    for columns in segments:
        for term, ids, tft, tfb, pt, pb in rows(columns):
            row = expected.setdefault(term, [term, [], [], [], [], []])
            at_t = at_b = 0
            for chunk, t, b in zip(ids, tft, tfb, strict=True):
                if chunk not in dead:
                    row[1].append(chunk)
                    row[2].append(t)
                    row[3].append(b)
                    row[4] += pt[at_t : at_t + t]
                    row[5] += pb[at_b : at_b + b]
                at_t, at_b = at_t + t, at_b + b
    assert merged == [tuple(row) for _, row in sorted(expected.items()) if row[1]]


def build(folder, index_dir, workers, monkeypatch, tuning: WriterTuning | None = None) -> None:
    monkeypatch.setenv(analysis.WORKERS_ENV, str(workers))
    with Index(index_dir) as index:
        index.add([folder], progress=False, tuning=tuning)


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
    tuning = WriterTuning(flush_chunks=50)  # several segments spilled, then merged
    folder, index_dir = notes(tmp_path / "notes"), tmp_path / "ix"
    build(folder, index_dir, workers, monkeypatch, tuning)
    assert not list(index_dir.glob(SPILL_PREFIX + "*"))
    left = index_dir / f"{SPILL_PREFIX}killed"  # what a run killed mid-write leaves
    left.mkdir()
    (left / "segment-000001.spill").write_bytes(b"partial")
    (folder / "n_new.jsonl").write_text(json.dumps({"_id": "new", "title": "", "text": "fresh words"}) + "\n")
    build(folder, index_dir, workers, monkeypatch, tuning)
    assert not list(index_dir.glob(SPILL_PREFIX + "*"))
    with Index(index_dir) as index:
        assert index.search("fresh", mode="lexical").hits


def test_a_failed_run_removes_its_spill_folder(tmp_path, monkeypatch):
    folder, index_dir = notes(tmp_path / "notes"), tmp_path / "ix"
    made = []

    def failing(store, spills, *args):
        made.extend(s.path for s in spills)
        raise RuntimeError("disk full")

    monkeypatch.setattr(chunk_run, "land_spilled", failing)
    monkeypatch.setenv(analysis.WORKERS_ENV, "0")
    with Index(index_dir) as index:
        with pytest.raises(RuntimeError, match="disk full"):
            index.add([folder], progress=False, tuning=WriterTuning(flush_chunks=50))
        assert index.store.segment_sizes() == []
    assert len(made) > 1 and not list(index_dir.glob(SPILL_PREFIX + "*"))


def test_a_workers_failure_to_spill_is_the_writers_error_and_the_run_rolls_back(tmp_path, monkeypatch):
    """A spill file a worker cannot write (here its folder is gone; a full disk alike) fails the run
    with that error, not with a worker that died, and the index keeps its last commit."""
    tuning = WriterTuning(batch=20, flush_chunks=50)  # a run large enough for the workers
    folder, index_dir = notes(tmp_path / "notes"), tmp_path / "ix"
    build(folder, index_dir, 1, monkeypatch, tuning)
    (folder / "more.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"m{n}", "title": "", "text": f"later words {n}"}) + "\n" for n in range(120)
        )
    )
    monkeypatch.setattr(spill.SpillFolder, "next_file", lambda self: str(tmp_path / "gone" / "segment.spill"))
    with Index(index_dir) as index:
        with pytest.raises(FileNotFoundError, match="gone"):
            index.add([folder], progress=False, tuning=tuning)
        assert not index.search("later", mode="lexical").hits and index.search("note", mode="lexical").hits
