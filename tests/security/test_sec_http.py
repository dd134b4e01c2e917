"""The HTTP server: a server on every interface answers the host names the user allows (and still no
other, against DNS rebinding), its API description needs the token like the API, and its writing
tools index only inside the folders the index already covers."""

import http.client
import json
import urllib.request
from urllib.parse import urlsplit

import pytest
import raw_mcp

from kenning import Index


@pytest.fixture
def index_dir(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keys.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "diary.md").write_text("# Diary\n\nSomething nobody should index.\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
    return tmp_path / "ix"


def request(base, path, host=None, token=None, method="GET", body=None):
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Host": host or parts.netloc}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def test_allowed_host_names_reach_a_server_on_every_interface(index_dir, monkeypatch):
    import socket
    import threading
    import time

    import uvicorn

    from kenning.surfaces.http_app import create_app
    from kenning.surfaces.service import Service

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    service = Service(index_dir)
    app = create_app(service, "0.0.0.0", port, "tok", "local", allowed_hosts=["192.168.1.10", "kb.lan"])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    try:
        for name in ("192.168.1.10", "kb.lan", "KB.LAN"):
            status, _ = request(base, "/api/status", host=f"{name}:{port}", token="tok")
            assert status == 200, name
        status, body = request(base, "/api/status", host=f"evil.example:{port}", token="tok")
        assert status == 421 and b"--allow-host" in body
        status, _ = request(base, "/api/status", host=f"0.0.0.0:{port}", token="tok")
        assert status == 421
    finally:
        server.should_exit = True
        service.close()


def test_the_api_description_needs_the_token(index_dir, http_server):
    base = http_server(index_dir, token="tok")
    assert request(base, "/openapi.json")[0] == 401
    assert request(base, "/openapi.json", token="tok")[0] == 200
    for page in ("/", "/docs", "/docs/swagger-ui-bundle.js"):  # the pages hold no data: they ask for it
        assert request(base, page)[0] == 200, page


def test_the_writing_api_indexes_only_inside_the_index_folders(index_dir, http_server):
    base = http_server(index_dir, allow_write=True)
    root = index_dir.parent
    for outside in (str(root / "private"), str(root / "notes" / ".." / "private"), "/etc", "/"):
        status, body = request(base, "/api/index", method="POST", body={"paths": [outside]})
        assert status in (400, 403), (outside, body)
        assert b"outside" in body
    status, body = request(base, "/api/index", method="POST", body={"paths": [str(root / "notes")]})
    assert status == 200, body
    with urllib.request.urlopen(base + "/api/search?q=diary&mode=lexical") as response:
        assert json.loads(response.read())["hits"] == []


def test_the_mcp_index_tool_is_bounded_the_same_way(index_dir):
    from kenning.surfaces.service import Service, WriteRefused

    service = Service(index_dir, allow_write=True)
    try:
        with pytest.raises((WriteRefused, ValueError), match="outside"):
            service.add([str(index_dir.parent / "private")], "default")
    finally:
        service.close()


def test_writing_roots_come_from_the_user_not_from_the_index(index_dir, tmp_path, monkeypatch):
    """An index's source rows may name any folder (a handed-over index, a tampered row): writing
    calls may index only where this user indexed into this index, as recorded in the user's own
    state folder (kenning.api.own_roots)."""
    import sqlite3

    from kenning.surfaces.service import Service, WriteRefused

    with sqlite3.connect(index_dir / "index.db") as db:  # a row naming a folder nobody indexed
        db.execute("UPDATE sources SET path = ?", (str(tmp_path / "private" / "diary.md"),))
    service = Service(index_dir, allow_write=True)
    try:
        with pytest.raises(WriteRefused, match="outside"):
            service.add([str(tmp_path / "private")], "default")
        assert service.add([str(tmp_path / "notes")], "default")["errors"] == []  # where the user indexed
    finally:
        service.close()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "someone-else"))  # the index, handed over
    service = Service(index_dir, allow_write=True)
    try:
        with pytest.raises(WriteRefused, match="outside"):
            service.add([str(tmp_path / "notes")], "default")
    finally:
        service.close()


@pytest.fixture
def every_interface(index_dir):
    """every_interface(allowed_hosts) -> port of a real server listening on 0.0.0.0 with a token."""
    import socket
    import threading
    import time

    import uvicorn

    from kenning.surfaces.http_app import create_app
    from kenning.surfaces.service import Service

    running = []

    def start(allowed_hosts=()):
        with socket.socket() as probe:
            probe.bind(("0.0.0.0", 0))
            port = probe.getsockname()[1]
        service = Service(index_dir)
        app = create_app(service, "0.0.0.0", port, "tok", "local", allowed_hosts=list(allowed_hosts))
        server = uvicorn.Server(uvicorn.Config(app, host="0.0.0.0", port=port, log_level="warning"))
        threading.Thread(target=server.run, daemon=True).start()
        running.append((server, service))
        deadline = time.time() + 20
        while not server.started and time.time() < deadline:
            time.sleep(0.02)  # waiting for the server to listen, with a deadline
        assert server.started
        return port

    yield start
    for server, service in running:
        server.should_exit = True
        service.close()


def test_a_server_on_every_interface_answers_the_address_a_client_reached(every_interface):
    """A browser on another machine that opens http://ADDRESS:PORT/ sends Host ADDRESS:PORT; that
    is the address the connection arrived at, which no DNS rebinding can forge (a rebound name
    arrives with the attacker's name in Host). Any other address or name is still refused."""
    import socket

    port = every_interface()
    with socket.socket() as probe:  # Linux answers the whole 127/8 on loopback; other systems may not
        if probe.connect_ex(("127.0.0.2", port)) != 0:
            pytest.skip("127.0.0.2 does not reach this machine's loopback here")
    base = f"http://127.0.0.2:{port}"
    assert request(base, "/api/status", token="tok")[0] == 200
    assert request(base, "/api/status", host=f"127.0.0.3:{port}", token="tok")[0] == 421
    assert request(base, "/api/status", host=f"evil.example:{port}", token="tok")[0] == 421
    assert request(base, "/api/status", host=f"127.0.0.2:{port + 1}", token="tok")[0] == 421
    assert request(base, "/api/status")[0] == 401  # the token is still needed
    status, _ = request(base, "/mcp", host=f"evil.example:{port}", token="tok", method="POST", body={})
    assert status == 421  # MCP sits behind the same check


def initialize(base, host):
    body = raw_mcp.HELLO[0]
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {
        "Host": host,
        "Authorization": "Bearer tok",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def test_mcp_answers_every_host_the_api_answers(every_interface):
    port = every_interface(["kb.lan"])
    base = f"http://127.0.0.1:{port}"
    for host in (f"kb.lan:{port}", f"KB.LAN:{port}", f"127.0.0.1:{port}"):
        status, data = initialize(base, host)
        assert status == 200 and b"serverInfo" in data, (host, status, data[:200])
    assert initialize(base, f"evil.example:{port}")[0] == 421


@pytest.mark.parametrize("name", ["*", "http://kb.lan/", "kb lan", "kb.lan:8080", "", "a/b", "user@kb.lan"])
def test_a_host_name_that_cannot_be_one_is_refused(index_dir, name):
    from kenning.surfaces.http_app import create_app
    from kenning.surfaces.service import Service

    service = Service(index_dir)
    try:
        with pytest.raises(ValueError, match="--allow-host"):
            create_app(service, "0.0.0.0", 7474, "tok", "local", allowed_hosts=[name])
    finally:
        service.close()


def test_serve_names_a_bad_allowed_host_in_one_line(index_dir, tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "KENNING_SERVE_TOKEN": "tok", "XDG_RUNTIME_DIR": str(tmp_path)}
    serve = [sys.executable, "-m", "kenning.surfaces.entry", "serve", "--index", str(index_dir)]
    for flags, hosts in ((["--allow-host", "http://kb.lan/"], ""), ([], "kb.lan, 10.0.0.0/8")):
        done = subprocess.run(
            [*serve, "--port", "0", "--host", "0.0.0.0", *flags],
            env={**env, "KENNING_SERVE_HOSTS": hosts},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert "--allow-host" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_writing_api_says_what_a_bad_request_is(index_dir, http_server):
    base = http_server(index_dir, allow_write=True)
    notes = str(index_dir.parent / "notes")
    for body in (
        {"paths": notes},
        {"paths": [5]},
        {"paths": []},
        {"paths": [notes], "collection": 7},
        [notes],
    ):
        status, answer = request(base, "/api/index", method="POST", body=body)
        assert status in (400, 422) and b"Traceback" not in answer, (body, status, answer)
        assert b"paths" in answer or b"collection" in answer or b"dictionary" in answer, (body, answer)
