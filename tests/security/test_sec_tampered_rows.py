"""Rows of a handed-over index that kenning never writes, read by commands the tampered-index suite
does not run (graph, answer, glossary listings and mining, spelling, status): each gives an answer or
one line naming the damage, never a traceback. Found by an adversarial review."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from kenning import Index
from kenning.store.sqlite.connection import DB_NAME
from kenning.surfaces.cli import main


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows")
    docs = root / "docs"
    docs.mkdir()
    for i in range(8):
        (docs / f"n{i}.md").write_text(
            f"# Note {i}\n\nAlice Smith met Bob Jones at Acme Corp in Paris.\nKubernetes runs at Acme Corp.\n"
        )
    with Index(root / "ix") as ix:
        ix.add([docs])
        ix.glossary.add("Kubernetes", ["k8s"])
    with sqlite3.connect(root / "ix" / DB_NAME) as db:  # a pending term with the miner's evidence
        group = db.execute("SELECT group_id FROM glossary_terms LIMIT 1").fetchone()[0]
        db.execute(
            "INSERT INTO glossary_terms(group_id, surface, key, status, origin, evidence, created, updated)"
            " VALUES (?, 'kube', 'kube', 'pending', 'suggest', '{\"kind\": \"corpus\", \"score\": 1}', 0, 0)",
            (group,),
        )
    return root / "ix"


DAMAGED = "the index is damaged"
CASES = [
    # (what, SQL, command, what it must say: None for an answer)
    ("a chunk's time past any calendar", "UPDATE chunks SET time=1e308", ["search", "Alice"], None),
    ("a chunk's time past any calendar", "UPDATE chunks SET time=-1e308", ["get", "chunk:1"], None),
    (
        "the last commit past any calendar",
        "UPDATE meta SET value='1e308' WHERE key='last_commit'",
        ["status"],
        None,
    ),
    ("a chunk of no file", "UPDATE chunks SET source_id=99999", ["search", "Alice"], DAMAGED),
    ("a chunk of no file", "UPDATE chunks SET source_id=99999", ["answer", "who met Bob"], DAMAGED),
    (
        "a stemmer for no language",
        """UPDATE meta SET value='{"stem":true,"language":"klingon"}' WHERE key='analyzer'""",
        ["status"],
        DAMAGED,
    ),
    (
        "analyzer settings a list",
        "UPDATE meta SET value='[1]' WHERE key='analyzer'",
        ["search", "Alice"],
        DAMAGED,
    ),
    ("an entity's chunks as text", "UPDATE entities SET docs='garbage'", ["graph", "Acme Corp"], DAMAGED),
    ("an entity's chunks as text", "UPDATE entities SET docs='garbage'", ["answer", "who is Alice"], DAMAGED),
    (
        "evidence that is a list",
        "UPDATE glossary_terms SET evidence='[1,2]' WHERE status='pending'",
        ["glossary", "ls"],
        None,
    ),
    (
        "evidence that is a list",
        "UPDATE glossary_terms SET evidence='[1,2]' WHERE status='pending'",
        ["glossary", "pending"],
        None,
    ),
    (
        "examples that are text",
        """UPDATE glossary_terms SET evidence='{"examples": "xy"}' WHERE status='pending'""",
        ["glossary", "pending"],
        None,
    ),
    ("a term of no group", "UPDATE glossary_terms SET group_id=999", ["glossary", "export"], None),
    ("a file's chunk count as text", "UPDATE sources SET n_chunks='w'", ["glossary", "suggest"], DAMAGED),
    ("a word's count as text", "UPDATE vocabulary SET df='x'", ["search", "--spell", "Alise"], DAMAGED),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}: {' '.join(c[2][:2])}" for c in CASES])
def test_a_row_kenning_never_writes_is_answered_or_named(case, pristine, tmp_path, capsys):
    _, sql, argv, says = case
    ix = tmp_path / "ix"
    shutil.copytree(pristine, ix)
    with sqlite3.connect(ix / DB_NAME) as db:
        db.execute(sql)
    code = main([*argv, "--index", str(ix)])  # an exception here is the traceback a user would see
    out, err = capsys.readouterr()
    if says is None:
        assert code == 0, err
    else:
        lines = [line for line in err.splitlines() if line.strip()]
        assert code != 0 and len(lines) == 1 and says in lines[0] and "kenning repair" in lines[0], err
