"""Python, the command line, HTTP and MCP return the same hits for the same request: one request
builder, one set of defaults, one result shape."""

import json
import urllib.parse
import urllib.request

import anyio
import pytest
from mcp import Client
from test_mcp import index_dir, stdio  # noqa: F401  (the fixture and the stdio server parameters)

from kenning import Index
from kenning.surfaces.cli import main

QUERIES = [
    ("rotate signing keys", {}),
    ("restore backup", {"mode": "lexical", "limit": 1}),
    ("keys OR storage", {"mode": "hybrid", "limit": 5}),
    ("what do we do with leaked tokens?", {"limit": 3}),
]


@pytest.fixture(params=["folder", "postgres"])
def location(request, index_dir):  # noqa: F811
    """The index folder, or the same notes indexed into a PostgreSQL store (tests/pg_server.py)."""
    if request.param == "folder":
        return index_dir
    url = request.getfixturevalue("pg_url")
    with Index(url) as ix:
        ix.add([index_dir.parent / "notes"])
        ix.embed()
    return url


def test_every_surface_returns_the_same_hits(location, index_dir, http_server, capsys):  # noqa: F811
    """And a PostgreSQL store returns what the folder index returns."""
    base = http_server(location)
    python, cli, http = [], [], []
    with Index(location) as ix:
        for query, settings in QUERIES:
            python.append([(h.id, round(h.score, 9)) for h in ix.search(query, **settings).hits])
    for query, settings in QUERIES:
        flags = [f"--{k}" if k != "limit" else "-n" for k in settings]
        argv = ["search", query, "--index", str(location), "--json"]
        for flag, value in zip(flags, settings.values(), strict=True):
            argv += [flag, str(value)]
        main(argv)
        cli.append([(h["id"], round(h["score"], 9)) for h in json.loads(capsys.readouterr().out)["hits"]])
        params = urllib.parse.urlencode({"q": query, **settings})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{base}/api/search?{params}", timeout=30) as response:
            http.append([(h["id"], round(h["score"], 9)) for h in json.loads(response.read())["hits"]])

    async def over_mcp():
        found = []
        async with Client(stdio(location)) as client:
            for query, settings in QUERIES:
                result = await client.call_tool("search", {"query": query, **settings})
                found.append([(h["id"], round(h["score"], 9)) for h in result.structured_content["hits"]])
        return found

    mcp = anyio.run(over_mcp)
    assert python == cli == http == mcp
    assert all(python)  # and every query found something
    with Index(index_dir) as folder:
        paths = lambda ix, q, kw: [(h.path, round(h.score, 9)) for h in ix.search(q, **kw).hits]  # noqa: E731
        with Index(location) as ix:
            assert [paths(ix, q, kw) for q, kw in QUERIES] == [paths(folder, q, kw) for q, kw in QUERIES]
