"""One warm process: `kenning serve` answers the command line's searches (the same output, without
the start-up), falls away cleanly, and `--watch` keeps the index current."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kenning import Index
from kenning.surfaces.announce import announcement_path
from kenning.surfaces.client import forward, server_for
from kenning.surfaces.service import Service
from kenning.surfaces.watch import Watcher

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # where servers announce themselves
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "auth.md").write_text("# Auth\n\n## Tokens\n\nRotate the signing keys every quarter.\n")
    (notes / "backup.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
    with Index(tmp_path / ".kenning") as ix:
        ix.add([notes])
        ix.embed()
    return tmp_path


def kenning(project, *args, **env):
    done = subprocess.run(
        [*ENTRY, *args], cwd=project, capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def served(project):
    proc = subprocess.Popen(
        [*ENTRY, "serve", "--port", "0", "-q"], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    announce = announcement_path(project / ".kenning", create=True)
    deadline = time.time() + 60
    while time.time() < deadline and not announce.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.1)
    assert announce.exists(), "kenning serve did not start"
    yield proc, json.loads(announce.read_text())
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_a_warm_server_answers_the_command_line_with_the_same_output(project, served):
    proc, info = served
    assert oct(announcement_path(project / ".kenning").stat().st_mode & 0o777) == "0o600"
    assert not (project / ".kenning" / "serve.json").exists()
    assert server_for((project / ".kenning").absolute())["pid"] == proc.pid  # the client will forward
    for args in (
        ["search", "rotate signing keys", "-n", "3"],
        ["search", "rotate signing keys", "--json", "--explain"],
        ["search", "nothing like this zyzzyva", "--mode", "lexical"],
        ["get", "notes/auth.md:5"],
        ["status", "--json"],
    ):
        warm = kenning(project, *args)
        cold = kenning(project, *args, KENNING_NO_SERVER="1")
        if "--json" in args and args[0] == "search":
            strip = lambda out: [{**h, "explain": None} for h in json.loads(out)["hits"]]  # noqa: E731
            assert strip(warm[1]) == strip(cold[1]), args
        elif args[0] == "status":
            assert {k: v for k, v in json.loads(warm[1]).items() if k != "size_bytes"} == {
                k: v for k, v in json.loads(cold[1]).items() if k != "size_bytes"
            }
        else:
            assert warm == cold, args
    code, out, err = kenning(project, "search", "keys", "--k1", "nan")
    assert code == 2 and "k1 must be a number" in err  # errors come back as they would here
    (project / "sub").mkdir()
    assert (
        kenning(project / "sub", "get", "../notes/auth.md:5")[1]
        .strip()
        .endswith("Rotate the signing keys every quarter.")
    )  # the client's folder, not the server's
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert not announcement_path(project / ".kenning").exists()
    assert kenning(project, "search", "backup", "-n", "1")[0] == 0  # no server: runs here


def test_the_client_forwards_only_to_a_live_server(project, monkeypatch, capsys):
    seen = []

    class Fake(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            seen.append(
                (
                    self.headers["Authorization"],
                    json.loads(self.rfile.read(int(self.headers["Content-Length"]))),
                )
            )
            body = json.dumps({"code": 3, "stdout": "from the server\n", "stderr": ""}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    fake = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    script = "import time; print('ready', flush=True); time.sleep(60)"  # ready: its cmdline is set
    server = subprocess.Popen([sys.executable, "-c", script, "kenning", "serve"], stdout=subprocess.PIPE)
    assert server.stdout.readline() == b"ready\n"
    announce = announcement_path(project / ".kenning", create=True)
    index = os.path.realpath(project / ".kenning")
    url = f"http://127.0.0.1:{fake.server_port}"
    info = {"pid": server.pid, "url": url, "local_token": "t", "index": index, "settings": ["KENNING_K1"]}
    announce.write_text(json.dumps(info))
    announce.chmod(0o600)
    monkeypatch.chdir(project)
    monkeypatch.setenv("KENNING_K1", "1.1")
    assert forward(["search", "rotate", "keys"]) == 3
    assert capsys.readouterr().out == "from the server\n"
    token, body = seen[0]
    assert token == "Bearer t" and body["argv"][:3] == ["search", "rotate", "keys"]
    assert body["cwd"] == str(project) and body["env"]["KENNING_K1"] == "1.1"
    assert forward(["index", "notes"]) is None and forward(["search", "--help"]) is None
    monkeypatch.setenv("KENNING_NO_SERVER", "1")
    assert forward(["search", "keys"]) is None
    monkeypatch.delenv("KENNING_NO_SERVER")
    fake.shutdown()
    fake.server_close()
    assert forward(["search", "keys"]) is None  # nobody answers: run it here
    server.kill()
    server.wait()
    assert forward(["search", "keys"]) is None  # a dead server's file


def test_watch_reindexes_what_changes(project):
    service = Service(project / ".kenning", allow_write=True)
    updates = []
    watcher = Watcher(
        service, [str(project / "notes")], debounce_ms=200, on_update=lambda r, e: updates.append((r, e))
    )
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        time.sleep(0.5)
        (project / "notes" / "deploy.md").write_text("# Deploys\n\nRoll the canary back when it fails.\n")
        deadline = time.time() + 30
        while time.time() < deadline and not updates:
            time.sleep(0.1)
        report, embedded = updates[0]
        assert report.files_indexed == 1 and embedded is not None and embedded.embedded == 1
        assert service.search("canary rollback", limit=1)["hits"][0]["path"].endswith("deploy.md")
        (project / "notes" / "deploy.md").unlink()
        deadline = time.time() + 30
        while time.time() < deadline and len(updates) < 2:
            time.sleep(0.1)
        assert updates[-1][0].files_removed == 1
    finally:
        watcher.stop()
        thread.join(timeout=10)
        service.close()
