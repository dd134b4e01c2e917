"""The command line as a person meets it: formats, documents read back once with line numbers,
collections, the index found from any subfolder, and no markup left in piped text."""

import csv
import io
import json
import re
from types import SimpleNamespace

import pytest

from kenning.surfaces.cli import main
from kenning.surfaces.render import Style
from kenning.surfaces.terminal import terminal_safe

LONG = (
    "# Guide\n\n"
    + "\n".join(f"line {i} about the launch window and its checklist" for i in range(3, 203))
    + "\n"
)


@pytest.fixture
def notes(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "guide.md").write_text(LONG)
    (folder / "keys.md").write_text("---\ndate: 2026-01-02\n---\n# Keys\n\nrotate the launch keys\n")
    return folder


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_get_prints_each_line_once_with_its_number(tmp_path, notes, capsys):
    ix = tmp_path / "ix"
    run(capsys, "index", notes, "--index", ix, "--no-embed", "-q")
    code, out, _ = run(capsys, "get", notes / "guide.md", "--index", ix)
    numbered = [
        re.match(r"^\s*(\d+)  (.*)$", line).groups()
        for line in out.splitlines()
        if line[:6].strip().isdigit()
    ]
    numbers = [int(n) for n, _ in numbered]
    assert code == 0 and numbers == list(range(1, 203))  # windows overlap; every line still once
    assert numbered[0][1] == "# Guide"  # the heading line too: the numbers are the file's
    assert numbered[2][1] == "line 3 about the launch window and its checklist"
    code, out, _ = run(capsys, "get", f"{notes / 'guide.md'}:120-122", "--index", ix, "--json")
    lines = [row for s in json.loads(out)["sections"] for row in s["lines"]]
    assert [r["n"] for r in lines] == [120, 121, 122] and lines[0]["text"].startswith("line 120 ")
    code, out, _ = run(capsys, "get", "chunk:1", "--index", ix, "--format", "md")
    assert code == 0 and out.startswith("## ") and "```" in out


def test_multi_get_takes_a_glob_and_says_what_it_left_out(tmp_path, notes, capsys):
    ix = tmp_path / "ix"
    run(capsys, "index", notes, "--index", ix, "--no-embed", "-q")
    code, out, _ = run(capsys, "multi-get", "notes/*.md", "--index", ix, "--json", "--max-chars", "500")
    data = json.loads(out)
    assert code == 0 and [d["path"] for d in data["documents"]] == [str(notes / "keys.md")]
    assert data["left_out"][0]["ref"] == str(notes / "guide.md") and data["left_out"][0]["chars"] > 500
    code, out, _ = run(capsys, "multi-get", "notes/*.md", "--index", ix, "--format", "files")
    assert sorted(out.split()) == [str(notes / "guide.md"), str(notes / "keys.md")]


def test_search_formats(tmp_path, notes, capsys):
    ix = tmp_path / "ix"
    run(capsys, "index", notes, "--index", ix, "--no-embed", "-q")
    code, out, _ = run(capsys, "search", "launch keys", "--index", ix)
    assert code == 0 and "**" not in out and "\x1b" not in out  # piped: plain text, no markup
    assert "· 2026-01-02" in out  # a dated source shows its date
    code, out, _ = run(capsys, "search", "launch keys", "--index", ix, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["rank"] == "1" and rows[0]["path"].endswith("keys.md") and rows[0]["date"] == "2026-01-02"
    code, out, _ = run(capsys, "search", "launch keys", "--index", ix, "--format", "files")
    assert out.split()[0].endswith("keys.md") and len(out.split()) == len(set(out.split()))
    code, out, _ = run(capsys, "search", "launch keys", "--index", ix, "--format", "md")
    assert out.startswith("Results for *launch keys*") and "1. **Keys**" in out


def test_a_terminal_gets_bold_matches_and_links(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    style = Style(Terminal())
    shown = terminal_safe  # kenning's own escapes become ESC on the way out (kenning.surfaces.terminal)
    hit = SimpleNamespace(snippet="the launch window", highlights=[(4, 10)])
    assert shown(style.marks(hit)) == "the \x1b[1;33mlaunch\x1b[0m window"
    assert "\x1b]8;;file:///tmp/a.md#L3\x1b\\" in shown(style.link("a.md:3", "/tmp/a.md", 3))
    monkeypatch.setenv("NO_COLOR", "1")
    assert Style(Terminal()).marks(hit) == "the launch window"


def test_collections_version_and_status(tmp_path, notes, capsys):
    ix = tmp_path / "ix"
    run(capsys, "index", notes, "--index", ix, "--no-embed", "-q")
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("kenning ")
    code, out, _ = run(capsys, "collections", "--index", ix, "--json")
    assert json.loads(out) == {"default": {"files": 2, "chunks": json.loads(out)["default"]["chunks"]}}
    assert run(capsys, "collections", "rename", "default", "notes", "--index", ix)[0] == 0
    code, out, _ = run(capsys, "status", "--index", ix)
    assert "notes      2 file(s)" in out and "vectors      none: searches are lexical only" in out
    code, out, _ = run(capsys, "collections", "rm", "notes", "--index", ix)
    assert code == 0 and "2 file(s)" in out
    code, out, _ = run(capsys, "search", "launch", "--index", ix, "--json")
    assert json.loads(out)["hits"] == []
    code, _, err = run(capsys, "collections", "rm", "notes", "--index", ix)
    assert code == 2 and "no collection 'notes'" in err
