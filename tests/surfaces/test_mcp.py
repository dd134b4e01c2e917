"""kenning over MCP, tested with the SDK's own client: over stdio (`kenning mcp`) and over streamable
HTTP (`/mcp` of `kenning serve`), and once with the MCP inspector from the npm registry."""

import json
import os
import shutil
import subprocess
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kenning import Index

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
NOTES = {
    "auth.md": "# Auth\n\n## Tokens\n\nRotate the signing keys every quarter.\nRevoke leaked tokens now.\n",
    "backup.md": "# Backups\n\nRestore the nightly backup from cold storage.\n",
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp")
    docs = root / "notes"
    docs.mkdir()
    for name, text in NOTES.items():
        (docs / name).write_text(text)
    with Index(root / "ix") as ix:
        ix.add([docs])
        ix.embed()
    return root / "ix"


def stdio(index_dir, *extra) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-c", CLI, "mcp", "--index", str(index_dir), *extra]
    )


async def exercise(client, notes_dir) -> dict:
    """Every read tool, a bad argument and a query with no hits; what came back, by case."""
    out = {"tools": sorted(t.name for t in (await client.list_tools()).tools)}
    result = await client.call_tool("search", {"query": "rotate signing keys", "limit": 3})
    out["search"] = result
    paging = {"query": "signing keys nightly backup", "mode": "lexical"}
    out["first_page"] = await client.call_tool("search", {**paging, "limit": 2})
    out["next_page"] = await client.call_tool("search", {**paging, "limit": 1, "offset": 1})
    out["past_the_end"] = await client.call_tool("search", {**paging, "offset": 5})
    out["get"] = await client.call_tool("get", {"path": f"{notes_dir / 'auth.md'}:5-6"})
    out["multi_get"] = await client.call_tool("multi_get", {"pattern": "notes/*.md", "max_chars": 100000})
    out["status"] = await client.call_tool("status", {})
    out["answer"] = await client.call_tool("answer", {"question": "How often are the signing keys rotated?"})
    out["bad_argument"] = await client.call_tool("search", {"query": "keys", "limit": "many"})
    out["no_hits"] = await client.call_tool("search", {"query": "zyzzyva quokka", "mode": "lexical"})
    out["outside"] = await client.call_tool("get", {"path": "/etc/passwd"})
    return out


def check(out: dict, notes_dir) -> None:
    assert out["tools"] == ["answer", "get", "multi_get", "search", "status"]  # no writing tools by default
    answer = out["answer"].structured_content
    assert not out["answer"].is_error and {"question", "found", "answer", "citations", "queries"} <= set(
        answer
    )
    assert answer["found"] is True and answer["citations"][0]["path"].endswith("auth.md")
    assert "[1]" in out["answer"].content[0].text
    search = out["search"]
    assert not search.is_error and search.structured_content["hits"][0]["path"].endswith("auth.md")
    assert "Auth > Tokens" in search.content[0].text
    first, page = out["first_page"].structured_content, out["next_page"].structured_content
    assert page["offset"] == 1 and [h["id"] for h in page["hits"]] == [first["hits"][1]["id"]]
    assert out["next_page"].content[0].text.splitlines()[1].startswith("2. ")  # ranks go on from the offset
    assert out["past_the_end"].content[0].text.startswith("No more results after the first 5")
    get = out["get"]
    lines = get.structured_content["sections"][0]["lines"]
    assert [row["n"] for row in lines] == [5, 6] and lines[0]["text"].startswith("Rotate the signing keys")
    assert "     5  Rotate the signing keys" in get.content[0].text
    assert len(out["multi_get"].structured_content["documents"]) == 2
    assert out["status"].structured_content["chunks"] >= 2 and "all-MiniLM" in out["status"].content[0].text
    assert out["bad_argument"].is_error and "limit" in out["bad_argument"].content[0].text
    no_hits = out["no_hits"]
    assert not no_hits.is_error and no_hits.structured_content["hits"] == []
    assert no_hits.content[0].text.startswith("No results for 'zyzzyva quokka'")
    assert out["outside"].is_error and "nothing indexed under '/etc/passwd'" in out["outside"].content[0].text


def test_mcp_over_stdio(index_dir):
    async def main():
        async with Client(stdio(index_dir)) as client:
            return await exercise(client, index_dir.parent / "notes")

    check(anyio.run(main), index_dir.parent / "notes")


def test_writing_tools_only_when_allowed(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "auth.md").write_text(NOTES["auth.md"])
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
    index_dir = tmp_path / "ix"
    more = notes / "more"  # a new folder inside the folders the index covers
    more.mkdir()
    (more / "deploy.md").write_text("# Deploys\n\nRoll the canary back when it fails.\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "private.md").write_text("# Private\n\nNot for this index.\n")

    async def main():
        async with Client(stdio(index_dir, "--allow-write")) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            refused = await client.call_tool("index", {"paths": [str(elsewhere)]})
            indexed = await client.call_tool("index", {"paths": [str(more)], "collection": "ops"})
            found = await client.call_tool("search", {"query": "canary", "collections": ["ops"]})
            return tools, refused, indexed, found

    tools, refused, indexed, found = anyio.run(main)
    assert tools == ["answer", "get", "glossary_add", "index", "multi_get", "search", "status"]
    assert refused.is_error and "outside the folders this index covers" in refused.content[0].text
    assert not indexed.is_error and indexed.structured_content["files_indexed"] == 1
    assert found.structured_content["hits"][0]["path"].endswith("deploy.md")


def test_mcp_over_streamable_http(index_dir, http_server):
    base = http_server(index_dir)

    async def main():
        async with Client(f"{base}/mcp") as client:
            return await exercise(client, index_dir.parent / "notes")

    check(anyio.run(main), index_dir.parent / "notes")


@pytest.mark.skipif(shutil.which("npx") is None, reason="needs node's npx to fetch the MCP inspector")
def test_the_mcp_inspector_lists_and_calls_tools(index_dir):
    command = [
        "npx", "-y", "@modelcontextprotocol/inspector@0.15.0", "--cli",
        sys.executable, "-c", CLI, "mcp", "--index", str(index_dir),
    ]  # fmt: skip
    listed = subprocess.run([*command, "--method", "tools/list"], capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} == {
        "answer",
        "get",
        "multi_get",
        "search",
        "status",
    }
    called = subprocess.run(
        [*command, "--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=restore backup"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    answer = json.loads(called.stdout)
    assert called.returncode == 0 and not answer["isError"]
    assert answer["structuredContent"]["hits"][0]["path"].endswith("backup.md")
    resources = subprocess.run(
        [*command, "--method", "resources/list"], capture_output=True, text=True, timeout=300
    )
    assert resources.returncode == 0, resources.stderr[-2000:]
    uris = [r["uri"] for r in json.loads(resources.stdout)["resources"]]
    assert sorted(uris) == sorted(f"kenning://{index_dir.parent / 'notes' / name}" for name in NOTES)
    reading = [*command, "--method", "resources/read", "--uri", uris[0]]
    read = subprocess.run(reading, capture_output=True, text=True, timeout=300)
    assert read.returncode == 0 and "§" in json.loads(read.stdout)["contents"][0]["text"], read.stderr[-2000:]


def test_tools_declare_what_they_do_and_return_and_errors_read_plainly(index_dir):
    """Annotations (read-only, closed world; write tools not destructive), an output schema for every
    tool that the results meet (the SDK client checks them), and argument errors in one sentence."""

    async def main():
        async with Client(stdio(index_dir, "--allow-write")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            calls = {
                "empty": await client.call_tool("search", {"query": ""}),
                "negative": await client.call_tool("search", {"query": "keys", "limit": -1}),
                "mode": await client.call_tool("search", {"query": "keys", "mode": "fast"}),
                "missing": await client.call_tool("get", {}),
                "status": await client.call_tool("status", {}),
            }
            return tools, calls

    tools, calls = anyio.run(main)
    for name in ("search", "get", "multi_get", "answer", "status"):
        hints = tools[name].annotations
        assert hints.read_only_hint is True and hints.open_world_hint is False, name
    for name in ("index", "glossary_add"):
        hints = tools[name].annotations
        assert hints.read_only_hint is False and hints.destructive_hint is False, name
    for name, tool in tools.items():
        assert tool.output_schema and tool.output_schema.get("properties"), name
    assert {"hits", "notices"} <= set(tools["search"].output_schema["properties"])
    assert {"sections", "window"} <= set(tools["get"].output_schema["properties"])
    assert not calls["status"].is_error
    said = {case: calls[case].content[0].text for case in ("empty", "negative", "mode", "missing")}
    assert said["empty"] == "search: query must not be empty, got ''"
    assert said["negative"] == "search: limit should be greater than or equal to 1, got -1"
    assert said["mode"] == "search: mode should be 'auto', 'lexical', 'dense' or 'hybrid', got 'fast'"
    assert said["missing"] == "get: path is required"
    assert all("pydantic" not in text and "http" not in text for text in said.values())


def test_indexed_documents_are_resources_that_get_also_reads(index_dir):
    notes = index_dir.parent / "notes"

    async def main():
        async with Client(stdio(index_dir)) as client:
            listed = (await client.list_resources()).resources
            auth = next(r for r in listed if r.name.endswith("auth.md"))
            read = await client.read_resource(auth.uri)
            got = await client.call_tool("get", {"path": f"{auth.uri}:5-5"})
            try:
                await client.read_resource("kenning:///etc/passwd")
                refused = None
            except Exception as exc:  # the SDK raises the server's error
                refused = str(exc)
            return listed, auth, read, got, refused

    listed, auth, read, got, refused = anyio.run(main)
    assert sorted(r.name for r in listed) == sorted(str(notes / name) for name in NOTES)
    assert str(auth.uri) == f"kenning://{notes / 'auth.md'}" and auth.mime_type == "text/plain"
    assert "     5  Rotate the signing keys every quarter." in read.contents[0].text
    assert not got.is_error and [r["n"] for r in got.structured_content["sections"][0]["lines"]] == [5]
    assert refused and "nothing indexed under 'kenning:///etc/passwd'" in refused
