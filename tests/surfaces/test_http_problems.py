"""Every HTTP error of `kenning serve` is one shape, RFC 9457 problem details with a `detail` that says
what to do; `HEAD /` answers; and a collection the index does not have is named as such, with the
ones it has, on every surface."""

import json
import sys
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kenning import Index
from kenning.query.filters import Filters
from kenning.surfaces.cli import main

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("problems")
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("# A\n\nRotate the signing keys every quarter.\n")
    with Index(root / "ix") as ix:
        ix.add([root / "notes"], collection="notes")
    return root / "ix"


def call(url, method="GET", data=None, headers=None):
    request = urllib.request.Request(url, method=method, data=data, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers.get("content-type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", ""), exc.read().decode()


def test_every_error_is_a_problem_document(index_dir, http_server):
    base = http_server(index_dir, token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    cases = {
        "validation": (f"{base}/api/search?q=keys&limit=-1", "GET", None, auth, 422),
        "empty query": (f"{base}/api/search?q=", "GET", None, auth, 422),
        "bad date": (f"{base}/api/search?q=keys&since=someday", "GET", None, auth, 400),
        "bad meta": (f"{base}/api/search?q=keys&meta=status", "GET", None, auth, 400),
        "not indexed": (f"{base}/api/get?path=/etc/passwd", "GET", None, auth, 404),
        "no route": (f"{base}/api/nothing-here", "GET", None, auth, 404),
        "wrong method": (f"{base}/api/search?q=keys", "DELETE", None, auth, 405),
        "no token": (f"{base}/api/status", "GET", None, {}, 401),
        "read-only": (f"{base}/api/index", "POST", b'{"paths": ["/tmp"]}', auth, 403),
        "foreign host": (f"{base}/api/status", "GET", None, {**auth, "Host": "evil.example:80"}, 421),
        # a body nested deeper than Python's stack: json.loads raises RecursionError, not ValueError
        "nested body": (
            f"{base}/api/index",
            "POST",
            b'{"paths": ' + b"[" * 5000 + b"]" * 5000 + b"}",
            auth,
            400,
        ),
    }
    details = {}
    for name, (url, method, data, headers, status) in cases.items():
        headers = {**headers, "Content-Type": "application/json"} if data else headers
        got, kind, body = call(url, method, data, headers)
        assert got == status, (name, got, body)
        assert kind.startswith("application/problem+json"), (name, kind)
        problem = json.loads(body)
        assert problem["status"] == status and problem["title"] and problem["type"] == "about:blank", name
        assert isinstance(problem["detail"], str) and problem["detail"], name
        assert "pydantic" not in body and "Traceback" not in body, name
        details[name] = problem["detail"]
    assert details["validation"] == "limit should be greater than or equal to 1, got '-1'"
    assert details["empty query"] == "q must not be empty, got ''"
    assert details["bad meta"].startswith("meta 'status': expected KEY=VALUE")  # no command-line flag
    assert "the API is described at /docs" in details["no route"]


def test_head_of_the_page_answers(index_dir, http_server):
    base = http_server(index_dir)
    status, kind, body = call(f"{base}/", method="HEAD")
    assert status == 200 and kind.startswith("text/html") and body == ""


def test_an_unknown_collection_is_named_on_every_surface(index_dir, http_server, capsys):
    said = "no collection 'nope' in this index (it has 'notes')"
    with Index(index_dir, create=False) as ix:
        with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
            ix.search("keys", filters=Filters(collections=("nope",)))
        assert ix.search("keys", filters=Filters(collections=("notes",))).hits
    assert main(["search", "keys", "-c", "nope", "--index", str(index_dir)]) == 2
    assert said in capsys.readouterr().err
    base = http_server(index_dir)
    status, _, body = call(f"{base}/api/search?q=keys&collection=nope")
    assert status == 400 and json.loads(body)["detail"] == said

    args = ["-c", CLI, "mcp", "--index", str(index_dir)]
    params = StdioServerParameters(command=sys.executable, args=args)

    async def run():
        async with Client(params) as client:
            return await client.call_tool("search", {"query": "keys", "collections": ["nope"]})

    result = anyio.run(run)
    assert result.is_error and said in result.content[0].text
