"""A forced rebuild (`--force`, and `--no-stem`, which needs it) keeps every folder and collection
the index holds: it reads them all again, and its counts say what really left the index."""

import json
import os
import subprocess
import sys

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]


def kenning(cwd, *args):
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    done = subprocess.run([*ENTRY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def files(cwd) -> dict[str, str]:
    """Indexed file -> its collection."""
    import sqlite3

    with sqlite3.connect(cwd / "ix" / "index.db") as db:
        return {os.path.basename(p): c for p, c in db.execute("SELECT path, collection FROM sources")}


def notes(root, names):
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / f"{name}.md").write_text(f"# {name}\n\nA note called {name} about rotation.\n")


def test_a_forced_rebuild_keeps_every_folder_and_collection(tmp_path):
    notes(tmp_path / "a", ["a1", "a2"])
    notes(tmp_path / "b", ["b1"])
    notes(tmp_path / "c", ["c1", "c2"])
    kenning(tmp_path, "index", "a", "--index", "ix", "--no-embed")
    kenning(tmp_path, "index", "c", "--index", "ix", "--no-embed", "-c", "work")
    before = files(tmp_path)
    done = kenning(tmp_path, "index", "b", "--index", "ix", "--no-embed", "--force", "--no-stem", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    after = files(tmp_path)
    assert after == {**before, "b1.md": "default"}
    assert report["files_removed"] == 0
    search = kenning(tmp_path, "search", "a1", "--index", "ix", "--mode", "lexical", "--format", "files")
    assert "a1.md" in search.stdout  # and searchable with the new analyzer


def test_a_forced_rebuild_counts_what_is_gone(tmp_path):
    notes(tmp_path / "a", ["a1", "a2"])
    kenning(tmp_path, "index", "a", "--index", "ix", "--no-embed")
    (tmp_path / "a" / "a2.md").unlink()
    notes(tmp_path / "b", ["b1"])
    done = kenning(tmp_path, "index", "b", "--index", "ix", "--no-embed", "--force", "--json")
    report = json.loads(done.stdout)
    assert set(files(tmp_path)) == {"a1.md", "b1.md"}
    assert report["files_removed"] == 1 and report["chunks_removed"] == 1


def test_a_forced_rebuild_racing_a_normal_run_loses_nothing(tmp_path):
    notes(tmp_path / "a", [f"a{i}" for i in range(200)])
    notes(tmp_path / "b", [f"b{i}" for i in range(200)])
    kenning(tmp_path, "index", "a", "--index", "ix", "--no-embed")
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    runs = [
        subprocess.Popen(
            [*ENTRY, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for args in (
            ["index", "b", "--index", "ix", "--no-embed"],
            ["index", "a", "--index", "ix", "--no-embed", "--force"],
        )
    ]
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert b"Traceback" not in err, err
        assert run.returncode == 0, err
    assert len(files(tmp_path)) == 400
