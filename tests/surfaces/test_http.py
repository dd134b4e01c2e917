"""`kenning serve` over HTTP: the JSON API returns the command line's shapes, and the server refuses
what it must (foreign Host or Origin, missing tokens, addresses beyond this machine without one)."""

import json
import urllib.error
import urllib.request

import pytest

from kenning import Index
from kenning.store import StorageError
from kenning.surfaces.cli import main
from kenning.surfaces.server_process import run_server


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("http")
    docs = root / "notes"
    docs.mkdir()
    (docs / "auth.md").write_text("# Auth\n\n## Tokens\n\nRotate the signing keys every quarter.\n")
    (docs / "backup.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
    with Index(root / "ix") as ix:
        ix.add([docs])
    return root / "ix"


def fetch(url, headers=None, data=None):
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_api_returns_what_the_command_line_prints(index_dir, http_server, capsys):
    base = http_server(index_dir)
    status, body = fetch(f"{base}/api/search?q=rotate+keys&limit=5")
    api = json.loads(body)
    assert status == 200
    main(["search", "rotate keys", "-n", "5", "--index", str(index_dir), "--json"])
    cli = json.loads(capsys.readouterr().out)
    assert [h["id"] for h in api["hits"]] == [h["id"] for h in cli["hits"]]
    assert [h["score"] for h in api["hits"]] == [h["score"] for h in cli["hits"]]
    status, body = fetch(f"{base}/api/get?path={index_dir.parent / 'notes' / 'auth.md'}:5-5")
    assert status == 200 and json.loads(body)["sections"][0]["lines"] == [
        {"n": 5, "text": "Rotate the signing keys every quarter."}
    ]
    assert fetch(f"{base}/api/get?path=/etc/passwd")[0] == 404  # only what the index holds
    status, body = fetch(f"{base}/api/multi-get?pattern=notes/*.md")
    assert status == 200 and len(json.loads(body)["documents"]) == 2
    status, body = fetch(f"{base}/api/status")
    assert status == 200 and json.loads(body)["sources"] == 2
    assert fetch(f"{base}/api/search?q=keys&limit=0")[0] == 422
    status, body = fetch(f"{base}/api/search?q=keys&k1=nan")
    assert status == 200  # unknown query parameters are ignored, as HTTP APIs do
    status, body = fetch(f"{base}/api/search?q=keys&since=someday")
    assert status == 400 and "since 'someday'" in json.loads(body)["detail"]
    assert fetch(f"{base}/api/index", {"Content-Type": "application/json"}, b'{"paths": ["/"]}')[0] == 403
    status, body = fetch(f"{base}/api/answer?q=How+often+are+the+signing+keys+rotated%3F")
    main(["answer", "How often are the signing keys rotated?", "--index", str(index_dir), "--json"])
    assert status == 200 and json.loads(body) == json.loads(capsys.readouterr().out)
    assert "quarter" in json.loads(body)["lead"].lower()  # the one-line answer leads


def test_page_docs_and_assets_need_nothing_from_outside(index_dir, http_server):
    base = http_server(index_dir)
    status, page = fetch(f"{base}/")
    assert status == 200 and '<form id="search"' in page and "http" not in page.replace("http-equiv", "")
    status, docs = fetch(f"{base}/docs")
    assert status == 200 and "cdn" not in docs.lower() and "http" not in docs  # every script is ours
    for name in ("swagger-ui-bundle.js", "swagger-ui.css"):  # Swagger UI, from an installed package
        status, body = fetch(f"{base}/docs/{name}")
        assert status == 200 and len(body) > 10_000, name
    assert fetch(f"{base}/docs/../../etc/passwd")[0] == 404 and fetch(f"{base}/docs/index.j2")[0] == 404
    status, spec = fetch(f"{base}/openapi.json")
    search = json.loads(spec)["paths"]["/api/search"]["get"]
    assert {"limit", "offset"} <= {p["name"] for p in search["parameters"]}
    schemas = json.loads(spec)["components"]["schemas"]
    assert search["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "SearchOutput"
    )
    assert "highlights" in schemas["SearchOutput"]["properties"]["hits"]["description"]
    assert "application/problem+json" in search["responses"]["4XX"]["content"] and "Problem" in schemas
    assert fetch(f"{base}/web/app.js")[0] == 200
    assert fetch(f"{base}/web/..%2F..%2Fsurfaces%2Fservice.py")[0] == 404


def test_search_pages_with_offset(index_dir, http_server):
    base = http_server(index_dir)
    _, whole = fetch(f"{base}/api/search?q=signing+keys+nightly+backup&mode=lexical&limit=2")
    _, second = fetch(f"{base}/api/search?q=signing+keys+nightly+backup&mode=lexical&limit=1&offset=1")
    whole, second = json.loads(whole), json.loads(second)
    assert len(whole["hits"]) == 2 and second["offset"] == 1
    assert [h["id"] for h in second["hits"]] == [whole["hits"][1]["id"]]
    status, body = fetch(f"{base}/api/search?q=keys&offset=-1")
    assert status == 422 and "offset" in json.loads(body)["detail"]


def test_host_origin_and_tokens_are_checked(index_dir, http_server):
    base = http_server(index_dir, token="s3cret")
    port = base.rsplit(":", 1)[1]
    assert fetch(f"{base}/api/status")[0] == 401  # a token is configured: it must come along
    assert fetch(f"{base}/api/status", {"Authorization": "Bearer wrong"})[0] == 401
    assert fetch(f"{base}/api/status", {"Authorization": "Bearer s3cret"})[0] == 200
    rebinding = {"Authorization": "Bearer s3cret", "Host": f"attacker.example:{port}"}
    assert fetch(f"{base}/api/status", rebinding)[0] == 421
    foreign = {"Authorization": "Bearer s3cret", "Origin": "http://attacker.example"}
    assert fetch(f"{base}/api/status", foreign)[0] == 403
    own = {"Authorization": "Bearer s3cret", "Origin": f"http://localhost:{port}"}
    assert fetch(f"{base}/api/status", own)[0] == 200
    forwarded = {"Content-Type": "application/json", "Authorization": "Bearer s3cret"}
    assert fetch(f"{base}/api/cli", forwarded, b'{"argv": ["status"]}')[0] == 401  # the local token only
    local = {"Content-Type": "application/json", "Authorization": "Bearer local-secret"}
    status, body = fetch(f"{base}/api/cli", local, b'{"argv": ["index", "/"]}')
    assert status == 400 and "only search, get, multi-get and status" in body


def test_listening_beyond_this_machine_needs_a_token(index_dir, monkeypatch):
    monkeypatch.delenv("KENNING_SERVE_TOKEN", raising=False)
    with pytest.raises(StorageError, match="set KENNING_SERVE_TOKEN"):
        run_server(index_dir, "0.0.0.0", 0, False, None, quiet=True)
