"""`get` is bounded on every surface an agent or a page uses: a window of at most max_chars that says
what it left out and the offset that reads on, so following the offsets gives back the whole
document, line for line. A line range outside a document is an error, and the long-running surfaces
never create an index a mistyped path names."""

import json
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from kenning import Index
from kenning.surfaces.cli import main

CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
LINES = 3000  # about 150,000 characters: far past one window


def _book_text() -> str:
    chapters = []
    for c in range(1, 31):
        body = "\n".join(f"Line {c}.{i} of the long book, with words to fill it." for i in range(1, 99))
        chapters.append(f"## Chapter {c}\n\n{body}\n")
    return "# The long book\n\n" + "\n".join(chapters)


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounded")
    (root / "docs").mkdir()
    (root / "docs" / "book.md").write_text(_book_text())
    with Index(root / "ix") as ix:
        ix.add([root / "docs"])
        whole = ix.read(str(root / "docs" / "book.md"))
    return root, whole


def _rows(document: dict) -> list[tuple]:
    return [(row["n"], row["text"]) for s in document["sections"] for row in s["lines"]]


def _whole_rows(whole) -> list[tuple]:
    return [pair for s in whole.sections for pair in s.lines]


def test_windows_read_on_to_the_whole_document(book):
    root, whole = book
    path = str(root / "docs" / "book.md")
    assert whole.chars > 100_000
    got, offset, calls = [], 0, 0
    with Index(root / "ix", create=False) as ix:
        while offset is not None:
            part = ix.read(path, max_chars=20_000, offset=offset).to_dict()
            assert sum(len(t) + 9 for _, t in _rows(part)) <= 20_000  # as shown, numbered
            got += _rows(part)
            offset = part["window"]["next"]["offset"] if part["window"]["next"] else None
            calls += 1
        assert got == _whole_rows(whole) and calls > 5  # nothing lost, nothing twice
        last = ix.read(path, max_chars=20_000, offset=len(got) - 1).to_dict()["window"]
        assert last["next"] is None and last["lines_after"] == 0
        with pytest.raises(ValueError, match="outside"):
            ix.read(path, max_chars=20_000, offset=len(got))


def test_a_line_longer_than_the_budget_is_cut_and_counted(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "wide.txt").write_text("x" * 5000 + "\nshort line\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([tmp_path / "d"])
        part = ix.read(str(tmp_path / "d" / "wide.txt"), max_chars=1000)
    rows = [t for s in part.sections for _, t in s.lines]
    assert len(rows) == 1 and len(rows[0]) <= 1000 and rows[0].endswith("…")
    assert part.window.cut == 1 and part.window.next_offset == 1


def test_a_line_range_outside_the_document_is_an_error(book, capsys):
    root, _ = book
    path = str(root / "docs" / "book.md")
    with Index(root / "ix", create=False) as ix:
        with pytest.raises(ValueError, match=r"lines 90000-90010 are not in it \(it has lines "):
            ix.read(f"{path}:90000-90010")
    code = main(["get", f"{path}:90000-90010", "--index", str(root / "ix")])
    _, err = capsys.readouterr()
    assert code == 2 and "are not in it" in err


def test_the_cli_prints_all_unless_asked_and_says_how_to_read_on(book, capsys):
    root, whole = book
    path = str(root / "docs" / "book.md")
    assert main(["get", path, "--index", str(root / "ix")]) == 0
    out, _ = capsys.readouterr()
    assert "Line 30.98 of the long book" in out and "--offset" not in out
    assert main(["get", path, "--index", str(root / "ix"), "--max-chars", "5000", "--offset", "10"]) == 0
    out, _ = capsys.readouterr()
    assert len(out) < 6000 and "not shown: --offset" in out
    with pytest.raises(SystemExit) as refused:
        main(["get", path, "--index", str(root / "ix"), "--max-chars", "0"])
    _, err = capsys.readouterr()
    assert refused.value.code == 2
    assert "must be 1 or more" in err


def test_mcp_get_is_bounded_and_reads_on(book):
    root, whole = book
    path = str(root / "docs" / "book.md")
    params = StdioServerParameters(
        command=sys.executable, args=["-c", CLI, "mcp", "--index", str(root / "ix")]
    )

    async def run():
        async with Client(params) as client:
            first = await client.call_tool("get", {"path": path})
            parts, call = [first], first.structured_content["window"]["next"]
            while call is not None:
                parts.append(await client.call_tool("get", call))
                call = parts[-1].structured_content["window"]["next"]
            bad = await client.call_tool("get", {"path": path, "offset": 10**6})
            return parts, bad

    parts, bad = anyio.run(run)
    first = parts[0]
    assert not first.is_error and len(first.content[0].text) < 20_000 + 400  # a header and a last line
    assert len(json.dumps(first.structured_content)) < 60_000  # the data too, not only the text
    assert f'call get with {{"path": "{path}", "offset": ' in first.content[0].text
    assert [row for p in parts for row in _rows(p.structured_content)] == [
        (n, t) for n, t in _whole_rows(whole)
    ]
    assert bad.is_error and "outside" in bad.content[0].text


def test_http_get_is_bounded_and_reads_on(book, http_server):
    root, whole = book
    base = http_server(root / "ix")
    path = str(root / "docs" / "book.md")

    def get(query: str):
        with urllib.request.urlopen(f"{base}/api/get?{query}") as response:
            return json.load(response)

    quoted = urllib.parse.quote(path)
    first = get(f"path={quoted}")
    assert sum(len(t) + 9 for _, t in _rows(first)) <= 20_000
    assert first["window"]["next"] == {"path": path, "offset": first["window"]["lines_shown"]}
    rest = get(f"path={quoted}&offset={first['window']['lines_shown']}&max_chars=1000000")
    assert [tuple(r) for r in _rows(first) + _rows(rest)] == _whole_rows(whole)
    with pytest.raises(urllib.error.HTTPError) as caught:
        get(f"path={urllib.parse.quote(path + ':90000-90010')}")
    assert caught.value.code == 400


@pytest.mark.parametrize("command", ["mcp", "serve"])
def test_a_mistyped_index_is_an_error_not_an_empty_index(tmp_path, command):
    missing = tmp_path / "no-such-index"
    extra = ["--port", "0"] if command == "serve" else []
    done = subprocess.run(
        [sys.executable, "-c", CLI, command, "--index", str(missing), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    assert f"no kenning index at {missing}" in done.stderr and "Traceback" not in done.stderr
    assert not missing.exists()
