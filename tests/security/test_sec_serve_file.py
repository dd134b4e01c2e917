"""The command line forwards a command only to a server it can prove is the user's own: an
announcement in the user's private runtime folder, owned by the user, mode 0600, naming this index,
with the pid of a live kenning server and a loopback URL. A `serve.json` planted in a cloned
repository's `.kenning/` is never read, and no secret from the environment crosses the wire."""

import json
import os
import subprocess
import sys

import pytest
from canary import Canary

from kenning import Index
from kenning.surfaces.announce import announcement_path, read_announcement, runtime_dir
from kenning.surfaces.client import forward

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "auth.md").write_text("# Auth\n\nRotate the signing keys every quarter.\n")
    with Index(tmp_path / ".kenning") as ix:
        ix.add([notes])
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    monkeypatch.delenv("KENNING_NO_SERVER", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pretender():
    """A live process whose command line reads like a kenning server's (what a real pid check sees)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "kenning", "serve"])
    yield proc.pid
    proc.kill()
    proc.wait()


def plant(path, info, mode=0o600):
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps(info))
    os.chmod(path, mode)


def test_a_serve_file_in_the_index_folder_is_never_used(project, monkeypatch):
    monkeypatch.setenv("KENNING_EMBED_API_KEY", "sk-canary-never-leaves")
    with Canary() as canary:
        plant(project / ".kenning" / "serve.json", {"pid": 0, "url": canary.url, "local_token": "t"})
        env = {**os.environ, "KENNING_EMBED_API_KEY": "sk-canary-never-leaves"}
        done = subprocess.run(
            [*ENTRY, "search", "signing keys", "--mode", "lexical"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert canary.requests == [], canary.heard()
    assert done.returncode == 0 and "auth.md" in done.stdout and "owned" not in done.stdout


@pytest.mark.parametrize(
    "case",
    [
        "pid 0",
        "pid 1",
        "own pid",
        "dead pid",
        "not kenning",
        "group readable",
        "other url",
        "other index",
        "https url",
        "huge",
    ],
)
def test_an_announcement_that_fails_a_check_is_ignored(project, pretender, case):
    path = announcement_path(project / ".kenning", create=True)
    info = {
        "pid": pretender,
        "url": "http://127.0.0.1:9",
        "local_token": "t",
        "index": os.path.realpath(project / ".kenning"),
    }
    mode = 0o600
    if case == "pid 0":
        info["pid"] = 0
    elif case == "pid 1":
        info["pid"] = 1
    elif case == "own pid":
        info["pid"] = os.getpid()
    elif case == "dead pid":
        info["pid"] = 2**22 + 12345
    elif case == "not kenning":
        sleeper = subprocess.Popen(["sleep", "60"])
        info["pid"] = sleeper.pid
    elif case == "group readable":
        mode = 0o644
    elif case == "other url":
        info["url"] = "http://10.1.2.3:7474"
    elif case == "other index":
        info["index"] = "/elsewhere/.kenning"
    elif case == "https url":
        info["url"] = "https://127.0.0.1:9"
    elif case == "huge":
        info["pad"] = "x" * 10_000
    plant(path, info, mode)
    try:
        assert read_announcement(project / ".kenning") is None
    finally:
        if case == "not kenning":
            sleeper.kill()
            sleeper.wait()


def test_a_good_announcement_is_used(project, pretender):
    path = announcement_path(project / ".kenning", create=True)
    plant(
        path,
        {
            "pid": pretender,
            "url": "http://127.0.0.1:9",
            "local_token": "t",
            "index": os.path.realpath(project / ".kenning"),
        },
    )
    assert read_announcement(project / ".kenning")["pid"] == pretender


def test_a_shared_or_linked_runtime_folder_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    (shared / f"kenning-{os.getuid()}").mkdir(mode=0o755)
    os.chmod(shared / f"kenning-{os.getuid()}", 0o755)
    assert runtime_dir(create=True) is None
    (shared / f"kenning-{os.getuid()}").rmdir()
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (shared / f"kenning-{os.getuid()}").symlink_to(real)
    assert runtime_dir(create=True) is None


def test_no_secret_is_forwarded_and_a_bad_reply_runs_here(project, pretender, monkeypatch, capsys):
    with Canary() as canary:
        path = announcement_path(project / ".kenning", create=True)
        plant(
            path,
            {
                "pid": pretender,
                "url": canary.url,
                "local_token": "t",
                "index": os.path.realpath(project / ".kenning"),
            },
        )
        for name in (
            "KENNING_EMBED_API_KEY",
            "KENNING_RERANK_API_KEY",
            "KENNING_LLM_API_KEY",
            "KENNING_SERVE_TOKEN",
            "KENNING_PG_PASSWORD",
        ):
            monkeypatch.setenv(name, "sk-canary-never-leaves")
        monkeypatch.setenv("KENNING_K1", "1.1")
        code = forward(["search", "signing", "keys"])
        assert len(canary.requests) == 1
        body = json.loads(canary.requests[0]["body"])
        assert "sk-canary-never-leaves" not in canary.requests[0]["body"].decode()
        assert body["env"] == {k: v for k, v in body["env"].items() if "KEY" not in k and "TOKEN" not in k}
        assert body["env"]["KENNING_K1"] == "1.1"
        assert code == 0
    for reply in (
        {"code": -1, "stdout": "", "stderr": ""},
        {"code": 10**9, "stdout": "", "stderr": ""},
        {"code": 0, "stdout": 5, "stderr": ""},
        ["not", "a", "dict"],
    ):
        with Canary() as liar:
            liar.reply = reply
            plant(
                path,
                {
                    "pid": pretender,
                    "url": liar.url,
                    "local_token": "t",
                    "index": os.path.realpath(project / ".kenning"),
                },
            )
            assert forward(["search", "signing", "keys"]) is None, reply
            assert len(liar.requests) == 1
