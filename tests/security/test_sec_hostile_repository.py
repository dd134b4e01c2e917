"""The everyday commands against a hostile cloned repository, end to end.

The repository commits a `.kenning/` index whose embedder record names the attacker's endpoint, a
planted `serve.json` pointing there too, files built to exhaust memory, escape sequences in text and
in file names, and files holding credentials. A canary listener on loopback is that endpoint. The
user has API keys in the environment. `index`, `embed`, `search`, `answer`, `get`, `status`,
`serve` and `mcp` run in the repository as a user would run them: nothing may reach the canary, no
traceback may print, no control character may reach the terminal, no credential may be shown, and
`kenning index` stays under RSS_BOUND_MB."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

import hostile_files
import pytest
import raw_mcp
import secret_files
from canary import Canary

from kenning.models.embed import OpenAIEmbedder
from kenning.surfaces.announce import announcement_path

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]
KEY = "sk-canary-user-key-5e1f"
RSS_BOUND_MB = 1024
CONTROLS = [bytes([c]) for c in range(32) if c not in (9, 10)] + [
    b"\x7f",
    "\u009b".encode(),
    "\u202e".encode(),
]
RSS = (
    "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
    "print('PEAK_RSS_MB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr); "
    "sys.exit(p.returncode)"
)


@pytest.fixture(scope="module")
def canary():
    with Canary() as listener:
        yield listener


@pytest.fixture(scope="module")
def repo(tmp_path_factory, canary):
    """The cloned repository, built as its author would, then tampered."""
    root = tmp_path_factory.mktemp("hostile")
    repo = root / "repo"
    notes = repo / "notes"
    notes.mkdir(parents=True)
    (notes / "keys.md").write_text(
        "# Key rotation\n\nRotate the signing keys every quarter \x1b]0;owned\x07 and revoke leaked ones"
        " \x1b[2J at once. \x1b]8;;http://evil.example\x1b\\the runbook\x1b]8;;\x1b\\ \u202e says so.\n"
    )
    (notes / "title\x1b[31m\nsecond line.md").write_text(
        "# Named\n\nRotation of keys, under a strange name.\n"
    )
    hostile_files.write_all(repo / "bombs")
    secrets = secret_files.write_all(repo / "deploy")
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    subprocess.run([*ENTRY, "index", "notes", "-q"], cwd=repo, env=env, check=True, timeout=600)
    planted = OpenAIEmbedder("x", canary.url + "/v1")
    planted.dim = 384
    with sqlite3.connect(repo / ".kenning" / "index.db") as db:
        record = json.loads(db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0])
        record.update(spec=f"openai:x@{canary.url}/v1", fingerprint=planted.fingerprint())
        db.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (json.dumps(record),))
        db.execute("DELETE FROM embeddings")
        db.execute("UPDATE chunks SET title = title || ?", ("\x1b]2;pwned\x07",))
    shutil.rmtree(repo / ".kenning" / "ann", ignore_errors=True)
    (repo / ".kenning" / "serve.json").write_text(
        json.dumps({"pid": 0, "url": canary.url, "local_token": "t", "index": str(repo / ".kenning")})
    )
    canary.requests.clear()
    return repo, secrets


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """The victim's environment: keys set, a private runtime folder, no config of their own."""
    home = tmp_path_factory.mktemp("home")
    (home / "run").mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KENNING_", "OPENAI_", "OLLAMA_"))}
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(home / "run"),
        XDG_CONFIG_HOME=str(home / ".config"),
        OPENAI_API_KEY=KEY,
        KENNING_EMBED_API_KEY=KEY,
        KENNING_LLM_API_KEY=KEY,
        KENNING_MODEL_CACHE=os.environ.get("KENNING_MODEL_CACHE", str(home / "models")),
    )
    return env


def run(repo, env, *args, timeout=600):
    done = subprocess.run([*ENTRY, *args], cwd=repo, env=env, capture_output=True, timeout=timeout)
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def clean(done, secrets) -> None:
    for control in CONTROLS:
        assert control not in done.stdout, control
    out = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert KEY not in out
    for name, value in secrets.items():
        assert value not in out, name


def test_everyday_commands_leak_nothing(repo, user, canary):
    repo, secrets = repo
    indexed = subprocess.run(
        [sys.executable, "-c", RSS, *ENTRY, "index", "."],
        cwd=repo,
        env=user,
        capture_output=True,
        timeout=900,
    )
    assert b"Traceback" not in indexed.stderr, indexed.stderr.decode(errors="replace")
    rss = int(indexed.stderr.decode().rsplit("PEAK_RSS_MB ", 1)[1].split()[0])
    print(f"hostile repository: kenning index peak RSS {rss} MB")
    assert rss < RSS_BOUND_MB
    clean(indexed, secrets)
    assert b"does not match" in indexed.stderr  # the tampered record is named, not followed
    for args in (
        ["embed"],
        ["search", "rotate signing keys"],
        ["search", "rotate signing keys", "--mode", "lexical", "--format", "files"],
        ["search", "rotate signing keys", "--mode", "lexical", "--json"],
        ["answer", "How often are the signing keys rotated?"],
        ["get", "notes/keys.md"],
        ["status"],
        ["verify"],
    ):
        done = run(repo, user, *args)
        clean(done, secrets)
    lexical = run(repo, user, "search", "rotate signing keys", "--mode", "lexical")
    assert b"keys.md" in lexical.stdout
    assert canary.requests == [], canary.heard()


def test_a_server_and_an_agent_leak_nothing(repo, user, canary):
    repo, secrets = repo
    server = subprocess.Popen(
        [*ENTRY, "serve", "--port", "0", "-q"],
        cwd=repo,
        env=user,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = user["XDG_RUNTIME_DIR"]
        try:
            announce = announcement_path(repo / ".kenning", create=True)
        finally:
            os.environ.pop("XDG_RUNTIME_DIR") if old is None else os.environ.update(XDG_RUNTIME_DIR=old)
        deadline = time.time() + 120
        while not announce.exists() and time.time() < deadline:
            assert server.poll() is None, server.stderr.read().decode(errors="replace")
            time.sleep(0.1)
        url = json.loads(announce.read_text())["url"]
        while True:  # the announcement comes just before the server listens
            try:
                with urllib.request.urlopen(url + "/api/search?q=rotate+keys&mode=lexical") as response:
                    hits = json.loads(response.read())["hits"]
                break
            except urllib.error.URLError:
                assert time.time() < deadline and server.poll() is None
                time.sleep(0.1)
        assert hits
        forwarded = run(repo, user, "search", "rotate signing keys", "--mode", "lexical")
        clean(forwarded, secrets)
        assert b"keys.md" in forwarded.stdout
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode(errors="replace")
    answers = raw_mcp.exchange(
        [*ENTRY, "mcp"],
        [
            raw_mcp.call(2, "search", {"query": "rotate signing keys"}),
            raw_mcp.call(3, "get", {"path": "notes/keys.md"}),
        ],
        cwd=repo,
        env=user,
    )
    assert "Traceback" not in answers[-1]["stderr"], answers[-1]["stderr"]
    assert {2, 3} <= set(answers), answers
    texts = [c["text"] for n in (2, 3) for c in answers[n]["result"].get("content", [])]
    assert len(texts) == 2 and all("\x1b" not in t and "\u202e" not in t for t in texts)
    assert all(KEY not in json.dumps(answers[n]) for n in (2, 3))
    assert canary.requests == [], canary.heard()
