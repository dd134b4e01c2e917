"""Fuzzing: every ingest format fed random and truncated bytes, and the JSON every command prints.

A reader may refuse a file (IngestError naming it) but never crash, never make a chunk over its
bound, never put a control character into a title. JSON output is always valid JSON (no NaN)."""

import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ingest_formats import make_pdf
from test_ingest_readable import make_docx

from kenning import Index
from kenning.ingest import ChunkOptions, IngestError, parse_file
from kenning.surfaces.cli import main

EXTENSIONS = [".md", ".txt", ".html", ".ipynb", ".docx", ".pdf", ".jsonl", ".py", ".js", ".ts", ".go", ".rs"]
OPTIONS = ChunkOptions(max_chars=2000)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

SAMPLES = {  # a valid file of each kind, to be cut short anywhere
    ".md": b"---\ntitle: Plan\ndate: 2026-01-02\n---\n# Launch\n\nSetext\n======\n\n| a | b |\n|---|---|\n",
    ".html": b"<html><head><title>T</title><style>x{}</style></head><body><h1>Run</h1><p>restart</p></body>",
    ".ipynb": json.dumps(
        {"cells": [{"cell_type": "markdown", "source": "# Study"}, {"cell_type": "code", "source": "x = 1"}]}
    ).encode(),
    ".docx": make_docx([("Heading1", "Launch"), (None, "Budget approved.")]),
    ".pdf": make_pdf([["launch physics"], ["second page"]]),
    ".jsonl": b'{"text": "hi", "timestamp": 1700000000, "sender": "ana"}\n{"text": "ok", "ts": 1700000005}\n',
    ".py": b"class Launcher:\n    def launch(self):\n        return 'go'\n\ndef main():\n    pass\n",
    ".go": b"package main\n\ntype T struct{}\n\nfunc (t T) Run() int { return 1 }\n",
    ".rs": b"struct S;\nimpl S { fn run(&self) -> u8 { 1 } }\n",
    ".txt": "launch checklist\n".encode("utf-16"),
}


def read(tmp_path: Path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    try:
        parsed = parse_file(path, OPTIONS)
    except IngestError as exc:
        assert name in str(exc)  # a refusal names the file
        return None
    for chunk in parsed.chunks:
        assert len(chunk.body) <= OPTIONS.max_chars, (name, len(chunk.body))
        assert not CONTROL.search(chunk.title), (name, chunk.title)
    return parsed


@FUZZ
@given(extension=st.sampled_from(EXTENSIONS), data=st.binary(max_size=3000))
def test_random_bytes_in_any_format_are_chunks_or_a_named_refusal(tmp_path, extension, data):
    read(tmp_path, f"fuzz{extension}", data)


@FUZZ
@given(extension=st.sampled_from(sorted(SAMPLES)), cut=st.floats(0, 1), flip=st.integers(0, 10**6))
def test_truncated_or_damaged_files_are_chunks_or_a_named_refusal(tmp_path, extension, cut, flip):
    sample = bytearray(SAMPLES[extension][: int(len(SAMPLES[extension]) * cut)])
    read(tmp_path, f"cut{extension}", bytes(sample))
    if sample:
        sample[flip % len(sample)] ^= 0xFF
        read(tmp_path, f"flipped{extension}", bytes(sample))


@FUZZ
@given(text=st.text(max_size=40).map(str.strip).filter(bool))
def test_random_text_in_any_format_is_read(tmp_path, text):
    for extension in (".md", ".txt", ".html", ".py"):
        read(tmp_path, f"text{extension}", text.encode("utf-8", "surrogatepass"))


def _index(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-json")
    docs = root / "docs"
    docs.mkdir()
    for name, text in {
        "keys.md": "# Keys\n\nrotate the signing keys every quarter\n",
        "backup.md": "# Backups\n\nrestore the nightly backup from cold storage\n",
    }.items():
        (docs / name).write_text(text)
    with Index(root / "ix") as ix:
        ix.add([docs])
        ix.embed()
    return root / "ix"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.text(max_size=30).filter(lambda q: q.strip() and not q.lstrip().startswith("-")),
    mode=st.sampled_from(["lexical", "hybrid", "dense"]),
    explain=st.booleans(),
)
def test_search_json_is_always_strict_json(tmp_path_factory, capsys, query, mode, explain):
    index = FUZZ_INDEX.get("ix") or FUZZ_INDEX.setdefault("ix", _index(tmp_path_factory))
    args = ["search", "--index", str(index), "--json", "--mode", mode, *(["--explain"] if explain else [])]
    code = main([*args, "--", query])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # no NaN/Infinity
    assert data["query"] is not None and isinstance(data["hits"], list)


FUZZ_INDEX: dict = {}


def test_every_command_prints_strict_json(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Launch\n\nthe launch is on Friday\n")
    index = str(tmp_path / "ix")
    commands = [
        ["index", str(docs), "--index", index, "--no-embed"],
        ["embed", "--index", index],
        ["search", "launch", "--index", index],
        ["search", "zzzz-nothing", "--index", index],
        ["get", str(docs / "a.md"), "--index", index],
        ["status", "--index", index],
        ["verify", "--index", index],
        ["glossary", "add", "launch", "liftoff", "--index", index],
        ["glossary", "ls", "--index", index],
    ]
    for command in commands:
        code = main([*command, "--json"])
        out = capsys.readouterr().out
        assert code == 0, command
        json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
