"""`kenning repair` rebuilds only what needs it and says what it could not keep: a sound index is
left alone unless --force, an index made read-only stays untouched, and vectors that could not be
read are named as lost, never passed over as "0 embedded again"."""

import os
import stat
import subprocess
import sys

import pytest

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]


def kenning(cwd, *args):
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    done = subprocess.run([*ENTRY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture
def built(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    (docs / "b.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
    assert kenning(tmp_path, "index", "docs", "--index", "ix").returncode == 0
    return tmp_path


def asides(root):
    return [p.name for p in root.iterdir() if ".damaged-" in p.name]


def test_a_sound_index_is_not_rebuilt_unless_asked(built):
    done = kenning(built, "repair", "--index", "ix")
    assert done.returncode == 0 and "sound" in done.stdout and "--force" in done.stdout
    assert asides(built) == []
    forced = kenning(built, "repair", "--index", "ix", "--force")
    assert forced.returncode == 0 and len(asides(built)) == 1


def test_a_read_only_index_is_not_made_writable(built):
    ix = built / "ix"
    modes = {p: p.stat().st_mode for p in [ix, *ix.iterdir()]}
    for path in ix.iterdir():
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    ix.chmod(0o555)
    try:
        done = kenning(built, "repair", "--index", "ix", "--force")
        assert done.returncode != 0 and "read-only" in done.stderr
        assert asides(built) == [] and stat.S_IMODE(ix.stat().st_mode) == 0o555
    finally:
        for path, mode in modes.items():
            path.chmod(stat.S_IMODE(mode))


def test_vectors_that_cannot_be_read_are_reported_as_lost(built):
    (built / "ix" / "index.db").write_bytes(b"this is not a database" * 100)
    done = kenning(built, "repair", "--index", "ix", "--from", "docs", "--no-embed")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "vectors" in out and "could not be read" in out and "kenning embed" in out


def test_a_repaired_index_keeps_the_folders_its_user_indexed(built, monkeypatch):
    """Writing calls may index where the user indexed (kenning.api.own_roots): a rebuild keeps that
    record for the index and leaves none behind for the folder it was rebuilt in."""
    from kenning.api.own_roots import index_location, remembered, roots_file

    monkeypatch.setenv("XDG_STATE_HOME", str(built / "state"))
    assert kenning(built, "index", "docs", "--index", "ix").returncode == 0  # recorded in that state
    ix = built / "ix"
    before = remembered(index_location(ix, str(ix)))
    assert (built / "docs").resolve() in before
    assert kenning(built, "repair", "--index", "ix", "--force").returncode == 0
    assert remembered(index_location(ix, str(ix))) == before
    leftovers = [p for p in roots_file("x").parent.iterdir() if ".repairing-" in p.read_text()]
    assert leftovers == []
