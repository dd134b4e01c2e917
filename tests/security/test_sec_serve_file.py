"""The command line forwards a command only to a server it can prove is the user's own: an
announcement in the user's private runtime folder, owned by the user, mode 0600, naming this index,
with the pid of a live kenning server and a loopback URL. A `serve.json` planted in a cloned
repository's `.kenning/` is never read, and no secret from the environment crosses the wire."""

import json
import os
import subprocess
import sys
import time

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
    """A live process whose command line reads like a kenning server's (what a real pid check sees).
    It says when it runs: just after Popen returns, /proc/PID/cmdline may still be empty (exec has
    not set it up yet), and an empty command line is rightly no kenning server."""
    script = "import time; print('ready', flush=True); time.sleep(120)"
    proc = subprocess.Popen([sys.executable, "-c", script, "kenning", "serve"], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
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
                "settings": ["KENNING_K1", "KENNING_EMBED_API_KEY", "KENNING_SERVE_TOKEN"],
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


def test_only_the_settings_the_server_takes_cross_the_wire(project, pretender, monkeypatch):
    """The client forwards a variable only when the server named it as a search setting it takes (in
    its announcement) and its name does not say it holds a secret: model addresses, the config
    file, the store, the index and anything unknown stay here."""
    stays = {
        "KENNING_OPENAI_URL": "http://10.9.9.9/v1",
        "KENNING_LLM": "openai:gpt@http://10.9.9.9/v1",
        "KENNING_EMBEDDER": "st:/tmp/model",
        "KENNING_CONFIG": "/tmp/elsewhere.toml",
        "KENNING_INDEX": "/tmp/other-index",
        "KENNING_MODEL_CACHE": "/tmp/models",
        "KENNING_SOMETHING_NEW": "x",
        "KENNING_MODE_API_KEY": "sk-canary-never-leaves",
    }
    for name, value in stays.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KENNING_K1", "1.1")
    monkeypatch.setenv("KENNING_MODE", "lexical")
    monkeypatch.setenv("NO_COLOR", "1")
    with Canary() as canary:
        canary.reply = {"code": 0, "stdout": "", "stderr": ""}
        plant(
            announcement_path(project / ".kenning", create=True),
            {
                "pid": pretender,
                "url": canary.url,
                "local_token": "t",
                "index": os.path.realpath(project / ".kenning"),
                "settings": ["KENNING_K1", "KENNING_MODE", "KENNING_MODE_API_KEY"],
            },
        )
        assert forward(["search", "signing", "keys"]) == 0
        sent = json.loads(canary.requests[0]["body"])["env"]
    assert {k: v for k, v in sent.items() if k.startswith("KENNING_")} == {
        "KENNING_K1": "1.1",
        "KENNING_MODE": "lexical",
    }
    assert sent.get("NO_COLOR") == "1"  # what the output's look depends on comes along


def test_a_real_server_takes_the_clients_settings_and_keeps_its_own_secrets(project, tmp_path, monkeypatch):
    """End to end through a real `kenning serve`: a search setting in the client's environment
    changes the forwarded search as it would a local one, and the server keeps the key its own
    embedder sends (the client has none to send, and needs none)."""
    with Canary() as embeddings:
        for name in ("KENNING_OPENAI_URL", "OPENAI_BASE_URL", "KENNING_LLM", "KENNING_EMBEDDER"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("KENNING_CONFIG", str(tmp_path / "none.toml"))
        monkeypatch.setenv("KENNING_OPENAI_URL", embeddings.url + "/v1")
        monkeypatch.setenv("KENNING_EMBED_API_KEY", "sk-server-own-key")
        notes = project / "notes"
        (notes / "rotation.md").write_text(
            "# Rotation\n\nKeys, keys, keys: rotate the keys, then the keys again.\n"
        )
        with Index(project / ".kenning") as ix:
            ix.add([notes])  # term counts that differ, so that k1 changes the scores
            ix.embed("openai:tiny")
        server_env = dict(os.environ)
        proc = subprocess.Popen(
            [*ENTRY, "serve", "--port", "0", "-q"],
            cwd=project,
            env=server_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            announce = announcement_path(project / ".kenning", create=True)
            deadline = time.monotonic() + 120
            while not announce.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)  # polling for the server's announcement, with a deadline
            assert announce.exists(), proc.stderr.read().decode() if proc.poll() is not None else "no start"
            client_env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("KENNING_") and not k.startswith("OPENAI_")
            }
            client_env.update(XDG_RUNTIME_DIR=os.environ["XDG_RUNTIME_DIR"], KENNING_CONFIG="/nonexistent")

            def search(mode, **env):
                return subprocess.run(
                    [*ENTRY, "search", "rotate the signing keys", "--mode", mode, "--json"],
                    cwd=project,
                    env={**client_env, **env},
                    capture_output=True,
                    text=True,
                    timeout=120,
                )

            before = len(embeddings.requests)
            warm = search("hybrid")
            assert warm.returncode == 0, warm.stderr
            asked = embeddings.requests[before:]
            assert asked, json.loads(warm.stdout).get("notices")  # it reached the embedder
            assert {r["headers"].get("Authorization") for r in asked} == {"Bearer sk-server-own-key"}
            tuned = search("lexical", KENNING_K1="0.1")
            local = search("lexical", KENNING_K1="0.1", KENNING_NO_SERVER="1")
            plain = search("lexical")
            scores = lambda done: [h["score"] for h in json.loads(done.stdout)["hits"]]  # noqa: E731
            assert scores(tuned) == scores(local) != scores(plain)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
