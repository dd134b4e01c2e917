"""An index's record of its embedding model only identifies the model; it never chooses what kenning
talks to or loads. A handed-over index whose record names an endpoint, another backend or a model
folder gets no request, no key and no model load: the command says what the index expects instead,
and `kenning verify` calls the record damaged."""

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from canary import Canary

from kenning import Index
from kenning.models.embed import OpenAIEmbedder

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]
KEY = "sk-canary-key-0123456789"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("record")
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    (docs / "b.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
    with Index(root / "ix") as ix:
        ix.add([docs])
        ix.embed()
    return root


def env_for(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KENNING_", "OPENAI_", "OLLAMA_"))}
    env.update(
        OPENAI_API_KEY=KEY,
        KENNING_EMBED_API_KEY=KEY,
        KENNING_CONFIG=str(tmp_path / "none.toml"),
        KENNING_NO_SERVER="1",
        KENNING_MODEL_CACHE=os.environ.get("KENNING_MODEL_CACHE", str(tmp_path / "models")),
    )
    return env


def tampered_copy(built, tmp_path, record: dict, drop_vectors: bool = True):
    import shutil

    shutil.copytree(built / "ix", tmp_path / "ix")
    shutil.copytree(built / "docs", tmp_path / "docs")
    with sqlite3.connect(tmp_path / "ix" / "index.db") as db:
        old = json.loads(db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0])
        db.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (json.dumps({**old, **record}),))
        if drop_vectors:
            db.execute("DELETE FROM embeddings")
    for side in (tmp_path / "ix").iterdir():
        if side.name.startswith("vectors"):
            side.unlink() if side.is_file() else shutil.rmtree(side)
    return tmp_path / "ix"


def run(tmp_path, *args):
    done = subprocess.run(
        [*ENTRY, *args], cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_a_recorded_endpoint_is_never_called(built, tmp_path):
    with Canary() as canary:
        planted = OpenAIEmbedder("x", canary.url + "/v1")
        planted.dim = 384
        ix = tampered_copy(
            built,
            tmp_path,
            {"backend": "minilm", "spec": f"openai:x@{canary.url}/v1", "fingerprint": planted.fingerprint()},
        )
        (tmp_path / "docs" / "c.md").write_text("# New\n\nA new note about quarterly key rotation.\n")
        indexed = run(tmp_path, "index", "docs", "--index", str(ix))
        embedded = run(tmp_path, "embed", "--index", str(ix))
        searched = run(tmp_path, "search", "signing keys", "--index", str(ix))
        verified = run(tmp_path, "verify", "--index", str(ix))
        assert canary.requests == [], canary.heard()
    assert embedded.returncode != 0 and "minilm" in embedded.stderr
    assert searched.returncode != 0 and "fingerprint" in searched.stderr and "verify" in searched.stderr
    assert "does not match what that model gives here" in indexed.stderr  # the files are indexed
    assert verified.returncode != 0 and "embedder" in (verified.stdout + verified.stderr)


@pytest.mark.parametrize(
    "record",
    [
        {"spec": "sentence-transformers:/tmp/hostile-model"},
        {"backend": "sentence-transformers", "spec": "sentence-transformers:/tmp/hostile-model"},
        {"backend": "openai", "spec": "openai:x@http://127.0.0.1:9/v1"},
        {"spec": "ollama:x@http://127.0.0.1:9"},
    ],
)
def test_a_recorded_spec_never_loads_or_reaches_anything(built, tmp_path, record, monkeypatch):
    """In-process: the embedder an index's own record gives is only ever the built-in model, or an
    error naming what the user must supply."""
    from kenning.models.embed import EmbedderError
    from kenning.models.endpoints import EndpointError
    from kenning.store import StorageError

    monkeypatch.setenv("KENNING_CONFIG", str(tmp_path / "none.toml"))
    for name in ("KENNING_OPENAI_URL", "OPENAI_BASE_URL", "KENNING_OLLAMA_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    ix_dir = tampered_copy(built, tmp_path, record)
    with Index(ix_dir) as ix:
        try:
            embedder = ix.embedder()
        except (EndpointError, EmbedderError, StorageError) as exc:
            assert "--embedder" in str(exc)
        else:
            assert embedder.backend == "minilm"


def test_verify_reports_a_record_that_names_an_address(built, tmp_path):
    ix = tampered_copy(built, tmp_path, {"spec": "openai:x@http://127.0.0.1:9/v1"}, drop_vectors=False)
    verified = run(tmp_path, "verify", "--index", str(ix))
    assert verified.returncode != 0
    assert "embedder" in verified.stdout + verified.stderr


@pytest.fixture()
def with_graph(tmp_path):
    """An index large enough for a saved HNSW graph (the threshold lowered for the test). Built per
    test: a copied graph file carries another file's seal and is never opened (kenning.sidefiles.seal),
    so each test damages its own index in place."""
    root = tmp_path / "graph"
    docs = root / "docs"
    docs.mkdir(parents=True)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    for i in range(40):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\n{words[i % 12]} {words[(i * 5) % 12]} number {i}\n")
    env = {**env_for(root), "KENNING_HNSW_THRESHOLD": "10"}
    subprocess.run([*ENTRY, "index", "docs", "--index", "ix"], cwd=root, env=env, check=True, timeout=300)
    assert list((root / "ix" / "ann").glob("*.usearch")), "no graph was saved"
    return root, env


@pytest.mark.parametrize("damage", ["row deleted", "rows swapped"])
def test_verify_finds_a_vector_detached_from_its_graph(with_graph, damage):
    """The saved graph answers dense searches for the chunks it holds; a stored vector that is gone
    or differs from the graph's copy is damage that `verify --full` reports."""
    root, env = with_graph
    verify = [*ENTRY, "verify", "--full", "--index", "ix"]
    sound = subprocess.run(verify, cwd=root, env=env, capture_output=True, text=True)
    assert sound.returncode == 0, sound.stdout + sound.stderr
    assert "40 graph" in sound.stdout  # the graph was opened and each of its vectors checked
    with sqlite3.connect(root / "ix" / "index.db") as db:
        rows = db.execute("SELECT text_hash, vector FROM embeddings ORDER BY text_hash LIMIT 2").fetchall()
        if damage == "row deleted":
            db.execute("DELETE FROM embeddings WHERE text_hash = ?", (rows[0][0],))
        else:
            db.execute("UPDATE embeddings SET vector = ? WHERE text_hash = ?", (rows[1][1], rows[0][0]))
            db.execute("UPDATE embeddings SET vector = ? WHERE text_hash = ?", (rows[0][1], rows[1][0]))
    done = subprocess.run(verify, cwd=root, env=env, capture_output=True, text=True)
    assert "Traceback" not in done.stderr
    assert done.returncode != 0, done.stdout
    assert "graph" in done.stdout + done.stderr
