"""Inputs that broke a surface: a chunk id past 64 bits, a query holding a byte that is not UTF-8 or a
lone surrogate, escape sequences in documents and file names. Each gets an answer or one clear
line, never a traceback or a hang, and no control character reaches the terminal as itself."""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import raw_mcp

from kenning import Index

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]
CLI = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
HOSTILE = (
    "# Evil \x1b]0;TITLE\x07 heading\n\nbody with \x1b[2J clear, an \x1b]8;;http://evil.example\x1b\\link"
    "\x1b]8;;\x1b\\, an 8-bit \u009b31m CSI, a \r carriage return and a \u202e bidi override; rotate keys\n"
)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    notes = root / "notes"
    notes.mkdir()
    (notes / "evil.md").write_text(HOSTILE)
    (notes / "new\nline\x1b[31m.md").write_text("# Named\n\nrotate keys under a strange name\n")
    with Index(root / "ix") as ix:
        ix.add([notes])
        ix.embed()
    return root / "ix"


def kenning(index_dir, *args):
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    done = subprocess.run(
        [*ENTRY, *args, "--index", str(index_dir)], capture_output=True, env=env, timeout=300
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


CONTROLS = [bytes([c]) for c in range(32) if c not in (9, 10)] + [
    b"\x7f",
    "\u009b".encode(),
    "\u202e".encode(),
]


@pytest.mark.parametrize("fmt", ["text", "json", "md", "csv", "files"])
def test_no_control_character_reaches_the_terminal(index_dir, fmt):
    done = kenning(index_dir, "search", "rotate keys", "--mode", "lexical", "--format", fmt)
    assert done.returncode == 0
    for control in CONTROLS:
        assert control not in done.stdout, (fmt, control)
    if fmt == "json":
        hits = json.loads(done.stdout)["hits"]
        assert any("\x1b[2J" in (h.get("snippet") or "") for h in hits)  # the data itself is intact
    if fmt == "files":
        lines = done.stdout.decode().splitlines()
        assert len(lines) == 2  # one line per file, whatever its name holds
        assert any(line.startswith('"') and "\\n" in line and "\\x1b" in line for line in lines)


def test_get_shows_a_document_without_its_escapes(index_dir):
    done = kenning(index_dir, "get", str(index_dir.parent / "notes" / "evil.md"))
    assert done.returncode == 0 and b"rotate keys" in done.stdout
    for control in CONTROLS:
        assert control not in done.stdout, control


@pytest.mark.parametrize(
    "ref",
    ["chunk:9223372036854775808", "chunk:-1", "#" + "9" * 5000, "notes/evil.md:99999999999999999999999-1"],
)
def test_an_impossible_reference_is_one_line(index_dir, ref):
    done = kenning(index_dir, "get", ref)
    assert done.returncode != 0 and done.stderr.count(b"\n") == 1


def test_an_impossible_reference_over_http_is_not_a_server_error(index_dir, http_server):
    base = http_server(index_dir)
    for ref in ("chunk:9223372036854775808", "chunk:99999999999999999999", "a.md:99999999999999999999-1"):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(base + "/api/get?path=" + urllib.request.quote(ref))
        assert caught.value.code in (400, 404), ref


def test_a_query_byte_that_is_not_utf8_is_searched(index_dir):
    done = subprocess.run(
        [*ENTRY, "search", b"rotate caf\xff keys", "--mode", "hybrid", "--index", str(index_dir)],
        capture_output=True,
        env={**os.environ, "KENNING_NO_SERVER": "1"},
        timeout=300,
    )
    assert b"Traceback" not in done.stderr and done.returncode == 0, done.stderr


def test_an_mcp_message_nested_past_the_stack_leaves_the_server_answering(index_dir):
    """A message with an escape (read again to make its strings well-formed) and JSON nested deeper
    than Python's stack: it once raised RecursionError in the server's reader and ended the server."""
    deep = "[" * 5000 + "]" * 5000
    nested = (
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search",'
        '"arguments":{"query":"caf\\u00e9","deep":' + deep + "}}}"
    )
    calls = [nested, raw_mcp.call(3, "search", {"query": "rotate keys", "mode": "lexical"})]
    answers = raw_mcp.exchange([sys.executable, "-c", CLI, "mcp", "--index", str(index_dir)], calls)
    assert 3 in answers, f"the server stopped answering: {answers[-1]['stderr'][-800:]}"
    assert "RecursionError" not in answers[-1]["stderr"]
    assert answers[3]["result"]["structuredContent"]["hits"]


def test_an_mcp_query_that_is_a_lone_surrogate_is_answered(index_dir):
    """Raw JSON-RPC over stdio, as any client may send it (the SDK's own client cannot even write a
    lone surrogate): the server answers every call, within a deadline."""
    calls = [
        raw_mcp.call(2, "search", {"query": "\ud800"}),
        raw_mcp.call(3, "search", {"query": "rotate \udcff keys", "mode": "lexical"}),
        raw_mcp.call(4, "get", {"path": str(index_dir.parent / "notes" / "evil.md")}),
    ]
    answers = raw_mcp.exchange([sys.executable, "-c", CLI, "mcp", "--index", str(index_dir)], calls)
    assert {1, 2, 3, 4} <= set(answers), f"unanswered: {sorted({1, 2, 3, 4} - set(answers))}"
    assert "result" in answers[2]  # results, or an error result: answered either way
    mixed = answers[3]["result"]
    assert not mixed.get("isError") and mixed["structuredContent"]["hits"]
    text = answers[4]["result"]["content"][0]["text"]
    assert "\x1b" not in text and "\u009b" not in text and "\u202e" not in text and "rotate keys" in text


def test_a_lone_surrogate_escaped_in_a_document_is_indexed_as_u_fffd(tmp_path):
    """JSON and YAML write a surrogate as an escape ("\\ud800"), which decodes to a str no database or
    encoder takes: one such message once stopped a whole run's commit, every file unindexed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plain.md").write_text("# Plain\n\nharbour lanterns\n")
    (docs / "chat.jsonl").write_text(
        '{"text": "harbour \\ud800 ropes", "timestamp": 1700000000, "user": "u\\udc00"}\n'
    )
    (docs / "front.md").write_text(
        '---\ntitle: "t\\ud800"\ntags: ["x\\udfff", {"k\\udc01": "v"}]\n---\n# H\n\nharbour bells\n'
    )
    cells = {"cells": [{"cell_type": "markdown", "source": ["harbour \\ud83d maps"]}], "metadata": {}}
    (docs / "book.ipynb").write_text(json.dumps(cells).replace("\\\\ud83d", "\\ud83d"))
    with Index(tmp_path / "ix") as ix:
        report = ix.add([docs])
        assert not report.errors and report.files_indexed == 4
        hits = ix.search("harbour", mode="lexical", limit=10).hits
        assert len({h.path for h in hits}) == 4
        for hit in hits:
            json.dumps(hit.to_dict(), ensure_ascii=False).encode("utf-8")  # no surrogate left anywhere
        assert any("\ufffd" in h.snippet for h in hits)
