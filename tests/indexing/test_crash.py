"""SIGKILL during indexing never loses a commit and never leaves an unreadable index (a few random
kills here; `python benchmarks/crash_kill.py --kills 300` is the long run)."""

import sys

from locations import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))

from crash_kill import run_kills  # noqa: E402


def test_random_kills_during_indexing_lose_no_commit(tmp_path):
    result = run_kills(tmp_path, kills=8, seed=1, log=lambda _: None)
    assert result["rounds"] == 8 and result["killed_mid_run"] >= 3  # most rounds really die mid-run
