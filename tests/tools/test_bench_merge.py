"""The merge benchmark (benchmarks/bench_merge.py) sees every segment write: from f01af88 it wrapped a
write method that commit removed, and failed with an AttributeError that no test ran into."""

import sys

import pytest
from locations import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))

import bench_merge  # noqa: E402

from kenning.store.sqlite import SqliteStore  # noqa: E402


def test_it_counts_every_commits_segment_and_the_merges(capsys):
    original = SqliteStore.write_encoded_segment
    assert bench_merge.main(["--commits", "12"]) == 0
    assert SqliteStore.write_encoded_segment is original  # the counting wrapper is taken off again
    line = capsys.readouterr().out
    written = int(line.split(": ")[1].split()[0])
    assert written > 12, line  # each commit's own segment, and the merges (sizes double towards the past)


def test_it_refuses_to_print_a_count_it_did_not_see(monkeypatch):
    """Segments written some other way than the wrapped method would count nothing: an error, not 0."""
    monkeypatch.setattr(bench_merge.Index, "add", lambda self, paths: None)
    with pytest.raises(SystemExit, match="counted 0 chunks written for 3 commits"):
        bench_merge.main(["--commits", "3"])
