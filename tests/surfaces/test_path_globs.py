"""One meaning of a path glob everywhere: a relative glob is relative to the folders the index covers,
an absolute one is absolute, and neither depends on the folder a command or a server runs in. The
same globs give the same files through search filters and multi-get, from Python, the command
line, HTTP and MCP (the MCP server started from another folder)."""

import json
import sys
import urllib.parse
import urllib.request

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kenning import Index
from kenning.query.filters import Filters
from kenning.surfaces.cli import main

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
FILES = {
    "docs/alpha.md": "# Alpha\n\nThe harbour crane lifts containers.\n",
    "docs/deep/beta.md": "# Beta\n\nA harbour pilot guides the ship.\n",
    "other/gamma.md": "# Gamma\n\nThe harbour closes at night.\n",
    "other/delta.txt": "The harbour master keeps the log.\n",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("globs") / "project"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    with Index(root.parent / "ix") as ix:
        ix.add([root])
    return root


def cases(root):
    """(glob, the files it names, relative to the project folder)."""
    return [
        ("docs/*.md", {"docs/alpha.md", "docs/deep/beta.md"}),  # * crosses folders, as in fnmatch
        ("docs/deep/*.md", {"docs/deep/beta.md"}),
        ("./other/*", {"other/gamma.md", "other/delta.txt"}),
        ("*.txt", {"other/delta.txt"}),
        ("gamma.md", {"other/gamma.md"}),
        (f"{root}/docs/alpha.md", {"docs/alpha.md"}),  # absolute: the whole path
        (f"{root}/other/*.md", {"other/gamma.md"}),
        ("/elsewhere/docs/*.md", set()),  # absolute, and not where the files are
        ("project/other/*.txt", {"other/delta.txt"}),  # relative to a folder above the root too
    ]


def _relative(root, paths) -> set[str]:
    return {str(p).removeprefix(f"{root}/") for p in paths}


def test_python_search_and_multi_get_agree_from_any_folder(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the project's folder
    with Index(project.parent / "ix", create=False) as ix:
        for glob, want in cases(project):
            hits = ix.search("harbour", limit=20, mode="lexical", filters=Filters(paths=(glob,))).hits
            assert _relative(project, {h.path for h in hits}) == want, glob
            found = ix.read_many(glob)["documents"]
            assert _relative(project, {d.path for d in found}) == want, glob


def test_the_command_line_from_another_folder(project, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ix = str(project.parent / "ix")
    for glob, want in cases(project):
        main(["search", "harbour", "--index", ix, "--path", glob, "--mode", "lexical", "--json", "-n", "20"])
        hits = json.loads(capsys.readouterr().out)["hits"]
        assert _relative(project, {h["path"] for h in hits}) == want, glob


def test_http_search_and_multi_get(project, http_server):
    base = http_server(project.parent / "ix")
    for glob, want in cases(project):
        quoted = urllib.parse.quote(glob)
        with urllib.request.urlopen(f"{base}/api/search?q=harbour&mode=lexical&limit=20&path={quoted}") as r:
            hits = json.load(r)["hits"]
        assert _relative(project, {h["path"] for h in hits}) == want, glob
        with urllib.request.urlopen(f"{base}/api/multi-get?pattern={quoted}") as r:
            documents = json.load(r)["documents"]
        assert _relative(project, {d["path"] for d in documents}) == want, glob


def test_mcp_started_from_another_folder(project, tmp_path):
    args = ["-c", CLI, "mcp", "--index", str(project.parent / "ix")]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path))

    async def run():
        out = []
        async with Client(params) as client:
            for glob, want in cases(project):
                found = await client.call_tool(
                    "search", {"query": "harbour", "mode": "lexical", "limit": 20, "paths": [glob]}
                )
                read = await client.call_tool("multi_get", {"pattern": glob})
                out.append((glob, want, found.structured_content, read.structured_content))
        return out

    for glob, want, found, read in anyio.run(run):
        assert _relative(project, {h["path"] for h in found["hits"]}) == want, glob
        assert _relative(project, {d["path"] for d in read["documents"]}) == want, glob
