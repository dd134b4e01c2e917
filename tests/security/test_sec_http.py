"""The HTTP server: a server on every interface answers the host names the user allows (and still no
other, against DNS rebinding), its API description needs the token like the API, and its writing
tools index only inside the folders the index already covers."""

import http.client
import json
import urllib.request
from urllib.parse import urlsplit

import pytest

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
    for path in ("/docs", "/openapi.json"):
        assert request(base, path)[0] == 401, path
        assert request(base, path, token="tok")[0] == 200, path
    assert request(base, "/")[0] == 200  # the page itself holds no data


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
