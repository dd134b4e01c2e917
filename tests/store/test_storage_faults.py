"""The index under hostile storage: read-only folders and file systems, a full disk, a second writer,
an empty or foreign database file. Each is a clear message, and no commit is ever lost.

A read-only file system and a full disk are real: a tmpfs mounted in a private mount namespace
(`unshare -m`), read-only or 1 MB small. Where the machine does not allow that, those tests skip and
say why."""

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kenning import Index
from kenning.store import StorageError
from kenning.surfaces.cli import main

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
SCRIPT_HEAD = """
import contextlib, io, json, subprocess, sys
from kenning.surfaces.cli import main
mount, tmp = sys.argv[1], sys.argv[2]
def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()
index = mount + "/ix"
"""


def notes(folder: Path, n: int = 3, words: int = 20, varied: bool = False) -> Path:
    """`varied`: random words instead of one repeated filler, so the text does not compress away."""
    rng = random.Random(n)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        filler = [f"{rng.getrandbits(40):x}" if varied else "filler" for _ in range(words)]
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nlaunch plan {i} " + " ".join(filler) + "\n")
    return folder


def kenning(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-c", CLI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def in_private_mount(tmp_path: Path, mount_options: str, script: str) -> dict:
    """Run `script` (Python; it gets the mount point as argv[1] and prints one JSON line) with a fresh
    tmpfs mounted there, in a mount namespace of its own; skip when the machine does not allow it."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) to mount a private tmpfs")
    mount = tmp_path / "mnt"
    mount.mkdir()
    (tmp_path / "script.py").write_text(script)
    shell = (
        f"mount -t tmpfs -o {mount_options} tmpfs {mount} && "
        f"{sys.executable} {tmp_path / 'script.py'} {mount} {tmp_path}"
    )
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace here: {probe.stderr.strip()}")
    done = subprocess.run(["unshare", "-m", "sh", "-c", shell], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not done.stdout.strip():
        if "mount:" in done.stderr and "permission denied" in done.stderr.lower():
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        raise AssertionError(f"isolated run failed ({done.returncode}): {done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_read_only_file_system_can_be_searched_and_says_why_it_cannot_be_written(tmp_path):
    notes(tmp_path / "docs")
    result = in_private_mount(
        tmp_path,
        "size=8m",
        SCRIPT_HEAD
        + """
first = run("index", tmp + "/docs", "--index", index, "--no-embed", "-q")
subprocess.run(["mount", "-o", "remount,ro", mount], check=True)
search = run("search", "launch plan", "--index", index, "--json")
write = run("index", tmp + "/docs", "--index", index, "--no-embed", "--force")
status = run("status", "--index", index, "--json")
print(json.dumps({"first": first, "search": search, "write": write, "status": status}))
""",
    )
    assert result["first"][0] == 0
    code, out, err = result["search"]
    assert code == 0 and len(json.loads(out)["hits"]) == 3, err
    code, out, err = result["write"]
    assert code == 2 and "read-only file system" in err and "searching it still works" in err
    assert "Traceback" not in err
    assert result["status"][0] == 0


def test_a_read_only_folder_can_be_searched(tmp_path, capsys, monkeypatch):
    docs = notes(tmp_path / "docs")
    index = tmp_path / "ix"
    assert main(["index", str(docs), "--index", str(index), "--no-embed", "-q"]) == 0
    capsys.readouterr()
    for path in (index / "index.db", index):
        path.chmod(0o555)
    if os.geteuid() == 0:  # root may write anywhere; the folder must still be treated as it is marked
        real_access = os.access
        monkeypatch.setattr(
            os,
            "access",
            lambda p, mode, **kw: (
                False if mode == os.W_OK and str(p).startswith(str(index)) else real_access(p, mode, **kw)
            ),
        )
    try:
        assert main(["search", "launch plan", "--index", str(index), "--json"]) == 0
        assert len(json.loads(capsys.readouterr().out)["hits"]) == 3
        assert main(["index", str(docs), "--index", str(index), "--no-embed", "--force"]) == 2
        assert "no permission to write" in capsys.readouterr().err
    finally:
        index.chmod(0o755)


def test_a_full_disk_rolls_the_run_back_and_says_so(tmp_path):
    notes(tmp_path / "small")
    notes(tmp_path / "big", n=400, words=600, varied=True)  # 2.5 MB of text: more than the disk holds
    result = in_private_mount(
        tmp_path,
        "size=1m",
        SCRIPT_HEAD
        + """
first = run("index", tmp + "/small", "--index", index, "--no-embed", "-q")
full = run("index", tmp + "/small", tmp + "/big", "--index", index, "--no-embed", "-q")
search = run("search", "launch plan", "--index", index, "--json", "-n", "50")
verify = run("verify", "--index", index)
print(json.dumps({"first": first, "full": full, "search": search, "verify": verify}))
""",
    )
    assert result["first"][0] == 0
    code, out, err = result["full"]
    assert code == 2 and "is full" in err and "rolled back" in err and "Traceback" not in err
    code, out, err = result["search"]
    assert code == 0 and {Path(h["path"]).parent.name for h in json.loads(out)["hits"]} == {"small"}
    assert result["verify"][0] == 0, result["verify"]


def second_writer(docs, index, lock_timeout: str):
    """`kenning index --force` in another process, waiting at most `lock_timeout` seconds."""
    return kenning(
        "index", docs, "--index", index, "--no-embed", "--force", env={"KENNING_LOCK_TIMEOUT": lock_timeout}
    )


def test_a_second_writer_waits_and_says_so(tmp_path):
    docs = notes(tmp_path / "docs")
    with Index(tmp_path / "ix") as ix:
        ix.add([docs])
        holder = threading.Event()

        def hold_the_lock():
            with ix.store.transaction():
                holder.set()
                time.sleep(2.0)

        thread = threading.Thread(target=hold_the_lock)
        thread.start()
        holder.wait()
        started = time.perf_counter()
        done = second_writer(docs, tmp_path / "ix", lock_timeout="30")
        thread.join()
    assert done.returncode == 0, done.stderr
    assert "being written by another process; waiting up to 30 s" in done.stderr
    assert time.perf_counter() - started >= 1.0


def test_a_second_writer_gives_up_clearly_after_the_timeout(tmp_path):
    docs = notes(tmp_path / "docs")
    with Index(tmp_path / "ix") as ix:
        ix.add([docs])
        with ix.store.transaction():
            done = second_writer(docs, tmp_path / "ix", lock_timeout="0.5")
            search = kenning("search", "launch", "--index", tmp_path / "ix", "--json")  # readers never wait
    assert done.returncode == 2 and "still being written by another process after 0.5 s" in done.stderr
    assert search.returncode == 0 and len(json.loads(search.stdout)["hits"]) == 3


def test_an_empty_or_foreign_database_is_an_error_not_a_new_index(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "index.db").write_bytes(b"")
    with pytest.raises(StorageError, match="empty \\(0 bytes\\)"):
        Index(empty)
    assert (empty / "index.db").stat().st_size == 0  # and it was left as it was
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    import sqlite3

    with sqlite3.connect(foreign / "index.db") as conn:
        conn.execute("CREATE TABLE photos (id INTEGER)")
    with pytest.raises(StorageError, match="not a kenning index"):
        Index(foreign)
