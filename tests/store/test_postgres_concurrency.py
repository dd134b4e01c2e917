"""Several writers and readers on one PostgreSQL index at once, each its own process: no commit is
lost (every file of every writer is there at the end) and no read is torn (every search and every
status sees whole commits: each file with all its chunks, chunks = files x chunks per file)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kenning import Index

WORKER = str(Path(__file__).with_name("pg_worker.py"))
FILES = 8


def spawn(*args):
    return subprocess.Popen(
        [sys.executable, WORKER, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("collections", ["one each", "all in one"])
def test_writers_and_readers_in_processes(tmp_path, pg_url, collections):
    from pg_worker import SECTIONS

    tags = ("north", "south", "east")
    writers = [
        spawn("writer", pg_url, tmp_path / tag, tag, FILES, tag if collections == "one each" else "shared")
        for tag in tags
    ]
    readers = [spawn("reader", pg_url, 6) for _ in range(2)]
    for process in writers:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    observations = []
    for process in readers:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        observations += json.loads(out)
    with Index(pg_url) as index:
        final = index.status()
        names = {Path(h.path).name for h in index.search("zebra", mode="lexical", limit=1000).hits}
        by_collection = {name: c["files"] for name, c in index.collections().items()}
    assert final["sources"] == 3 * FILES and final["live_chunks"] == 3 * FILES * SECTIONS  # none lost
    assert len(names) == 3 * FILES
    assert by_collection == ({t: FILES for t in tags} if collections == "one each" else {"shared": 3 * FILES})
    assert len(observations) > 5 and any(0 < o["sources"] < 3 * FILES for o in observations)
    for seen in observations:  # whole commits only
        assert all(n == SECTIONS for n in seen["files"].values()), seen
        assert seen["chunks"] == seen["sources"] * SECTIONS, seen
