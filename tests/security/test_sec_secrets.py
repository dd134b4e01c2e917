"""Credentials are recognised by content as well as by name. A file that is a credential (a private
key, a credential store) is skipped whole; a token inside an ordinary document is redacted and the
rest of the document indexed. A secret an earlier run indexed with --include-secrets leaves the
index on the next run without the flag."""

import json
import os
import subprocess
import sys

import pytest
import secret_files
from locations import SHARED_DATA

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]


def kenning(cwd, *args):
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    done = subprocess.run([*ENTRY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture
def folder(tmp_path):
    secrets = secret_files.write_all(tmp_path / "repo")
    (tmp_path / "repo" / "README.md").write_text("# Project\n\nHow to deploy the service.\n")
    return tmp_path, secrets


def chunk_texts(cwd) -> str:
    """Every chunk's title, body and metadata as the index holds them, read by the store (bodies may
    be compressed, alone or in blocks): all a search, `get` or an agent could ever be shown."""
    from kenning.store.sqlite import SqliteStore

    store = SqliteStore(cwd / "ix", create=False)
    try:
        rows = store.chunks_by_ids([cid for cid, _, _ in store.iter_chunk_texts()])
    finally:
        store.close()
    return "\n".join(f"{r.title}\n{r.body}\n{json.dumps(r.meta, default=str)}" for r in rows.values())


def test_no_secret_is_indexed_by_default(folder):
    cwd, secrets = folder
    done = kenning(cwd, "index", "repo", "--index", "ix", "--no-embed")
    assert done.returncode == 0, done.stderr
    held = chunk_texts(cwd)
    leaked = {name: value for name, value in secrets.items() if value in held}
    assert leaked == {}, f"indexed: {sorted(leaked)}"
    out = done.stdout + done.stderr
    assert "How to deploy" in held  # the ordinary file is there
    assert "region: eu-west-1" in held and "redacted" in held  # config.yml kept, its token redacted
    for name in (
        "deploy_key.txt",
        "tls.crt",
        "gcp-project.json",
        "aws_credentials",
        "kubeconfig",
        "terraform.tfstate",
        "npmrc",
        "netrc",
    ):
        assert f"repo/{name}" in out, (name, out)
    assert "config.yml" in out and "github token" in out  # the redaction is reported by kind
    for value in secrets.values():
        assert value not in out  # never the secret itself


def test_a_secret_indexed_with_the_flag_leaves_without_it(folder):
    cwd, secrets = folder
    kenning(cwd, "index", "repo", "--index", "ix", "--no-embed", "--include-secrets")
    held = chunk_texts(cwd)
    assert secrets["deploy_key.txt"] in held and secrets["config.yml"] in held  # the user asked for them
    done = kenning(cwd, "index", "repo", "--index", "ix", "--no-embed", "--json")
    report = json.loads(done.stdout)
    held = chunk_texts(cwd)
    assert [n for n, v in secrets.items() if v in held] == []
    assert report["files_removed"] >= 8  # counted truthfully
    got = kenning(cwd, "get", str(cwd / "repo" / "deploy_key.txt"), "--index", "ix")
    assert secrets["deploy_key.txt"] not in got.stdout and got.returncode != 0


def test_ordinary_text_is_not_flagged():
    """The dev sets' documents hold no credentials: none is flagged (a false positive would cut text
    out of someone's notes)."""
    from kenning.ingest.secrets import find_secrets

    flagged = []
    root = str(SHARED_DATA)
    names = ["cranfield", "msmarco-5k", "cacm", "scifact", "npl", "med"]
    seen = 0
    for name in names:
        corpus = os.path.join(root, name, "corpus.jsonl")
        if not os.path.exists(corpus):
            continue
        with open(corpus, encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                seen += 1
                if find_secrets(doc.get("title", "") + "\n" + doc.get("text", "")):
                    flagged.append((name, doc["_id"]))
    if not seen:
        pytest.skip("the dev sets are not beside this checkout (../shared/data)")
    assert flagged == []


@pytest.mark.parametrize(
    "text, kind",
    [
        ("key = AKIA" + "ABCDEFGHIJ234567", "aws access key id"),
        ("token: ghp_" + "a1B2" * 9, "github token"),
        ("GITLAB=glpat-" + "x" * 20, "gitlab token"),
        ("slack xoxb-" + "1234567890-abcdef", "slack token"),
        ("stripe sk_live_" + "a" * 24, "stripe key"),
        ("maps AIza" + "B" * 35, "google api key"),
        ("OPENAI_API_KEY=sk-proj-" + "q" * 48, "openai key"),
        ("ANTHROPIC_API_KEY=sk-ant-api03-" + "z" * 90, "anthropic key"),
        ("//registry.npmjs.org/:_authToken=npm_" + "n" * 36, "npm token"),
        ("password = pypi-AgEIcHlwaS5vcmc" + "p" * 60, "pypi token"),
        ("HF_TOKEN=hf_" + "h" * 34, "hugging face token"),
        ("DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + "k" * 86 + "==", "azure storage key"),
        ("DATABASE_URL=postgres://app:s3cretpw@db.internal/app", "database password"),
        ('{"password": "correct-horse-battery"}', "password field"),
    ],
)
def test_each_token_format_is_redacted(text, kind):
    from kenning.ingest.secrets import redact

    redacted, kinds = redact(text)
    assert kinds and kinds[0] == kind
    assert f"[redacted {kind}]" in redacted


@pytest.mark.parametrize(
    "text",
    [
        "The machine learning model was trained on a password-protected dataset.",
        "Use the sk- prefix for keys; AKIA is how AWS ids start; ghp_ marks a GitHub token.",
        "postgres://localhost/app and https://example.com/docs are addresses without passwords.",
        'A JSON field such as "password": "" stays empty here.',
        "-----BEGIN CERTIFICATE----- is a public certificate, not a key.",
    ],
)
def test_prose_about_secrets_is_not_a_secret(text):
    from kenning.ingest.secrets import find_secrets

    assert find_secrets(text) == []


def test_every_chunk_of_a_file_is_screened_for_the_rules_the_file_holds():
    """A file is searched once for the rules' fixed texts; the chunks are then tried for those
    rules alone, a token in any chunk's text or metadata still redacted (a metadata key JSON cannot
    write included), and a file holding none is left as it is."""
    import datetime

    from kenning.ingest.chunk import Chunk
    from kenning.ingest.secrets import screen_chunks

    token = "ghp_" + "a1B2" * 9
    chunks = [Chunk("chat", f"Ana: plain words {i}", "log") for i in range(5)]
    chunks.append(Chunk("chat", f"Ben: use {token}", "log", meta={"message_ids": [f"m-{token}"]}))
    chunks.append(Chunk("notes", "text", "log", meta={"front_matter": {datetime.date(2024, 1, 5): token}}))
    credential, kinds = screen_chunks(chunks)
    assert credential is None and kinds == ["github token"] * 3
    assert all(token not in f"{c.body} {c.meta}" for c in chunks)
    assert chunks[0].body == "Ana: plain words 0" and chunks[5].body == "Ben: use [redacted github token]"
    clean = [Chunk("chat", "Ana: nothing here", "log", meta={"message_ids": ["m_1"]})]
    assert screen_chunks(clean) == (None, []) and clean[0].meta == {"message_ids": ["m_1"]}
