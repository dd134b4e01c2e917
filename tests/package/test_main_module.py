"""`python -m kenning` is the `kenning` command: same arguments, same output, same exit codes."""

import subprocess
import sys

import kenning


def kenning_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "kenning", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_python_dash_m_kenning_runs_the_command(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keys.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    (notes / "backup.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
    version = kenning_cli("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"kenning {kenning.__version__}"
    indexed = kenning_cli("index", "notes", "--index", "ix", cwd=tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    assert "indexed 2 file(s)" in indexed.stderr + indexed.stdout
    found = kenning_cli("search", "rotate keys", "--index", "ix", "-n", "1", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert "notes/keys.md" in found.stdout and "backup" not in found.stdout


def test_a_usage_error_exits_2_naming_the_command(tmp_path):
    done = kenning_cli("no-such-command", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("usage: kenning ")
