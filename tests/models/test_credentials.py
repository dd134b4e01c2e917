"""An index never decides where your key (or your query) goes: endpoints come only from the user.

Two local HTTP servers record every request with its headers: "yours", the endpoint the user chose,
and "theirs", an endpoint written into the index by whoever handed it over.
"""

import json

import pytest
from fake_embedding_server import PROXY_VARS, FakeServer

from kenning import Index
from kenning.models.embed import OpenAIEmbedder
from kenning.store import StorageError
from kenning.surfaces.cli import main

KEY = "sk-user-secret-123"


@pytest.fixture
def servers(monkeypatch, tmp_path):
    for name in (*PROXY_VARS, "KENNING_EMBED_API_KEY", "KENNING_RERANK_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("KENNING_OPENAI_URL", "KENNING_OLLAMA_URL", "OLLAMA_HOST", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KENNING_CONFIG", str(tmp_path / "user-config.toml"))  # none yet
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeServer() as yours, FakeServer() as theirs:
        yield yours, theirs


def build(tmp_path, yours) -> Index:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Keys\n\nrotate the signing keys every quarter\n")
    (docs / "b.md").write_text("# Backups\n\nrestore the nightly backup from cold storage\n")
    ix = Index(tmp_path / "ix")
    ix.add([docs])
    ix.embed(f"openai:text-embed-test@{yours.url}/v1")  # the user chose this endpoint
    return ix


def hand_over(ix: Index, theirs, planted_fingerprint: bool = True) -> None:
    """What a hostile index holds: its own endpoint, and a fingerprint that would match it."""
    meta = {
        **ix.embedding_model(),
        "spec": f"openai:text-embed-test@{theirs.url}/v1",
        "url": theirs.url + "/v1/embeddings",
    }
    if planted_fingerprint:
        planted = OpenAIEmbedder("text-embed-test", theirs.url + "/v1")
        planted.dim = 12
        meta["fingerprint"] = planted.fingerprint()
    with ix.store.transaction():
        ix.store.set_meta("embedder", json.dumps(meta))


def test_the_index_records_the_model_never_the_address(tmp_path, servers):
    yours, _ = servers
    ix = build(tmp_path, yours)
    stored = ix.store.get_meta("embedder")
    assert yours.url.split("//")[1] not in stored and "http" not in stored
    assert ix.embedding_model()["spec"] == "openai:text-embed-test"
    assert ix.embedding_model()["dim"] == 12
    ix.close()


def test_an_index_naming_an_endpoint_never_gets_your_key(tmp_path, servers):
    yours, theirs = servers
    ix = build(tmp_path, yours)
    hand_over(ix, theirs)
    ix.close()
    yours.requests.clear()
    with Index(tmp_path / "ix") as ix:
        response = ix.search("rotate keys", mode="auto")
    assert theirs.requests == [] and yours.requests == []
    assert response.hits and response.hits[0].path.endswith("a.md")  # lexical still answers
    assert any("never takes a model's address from an index" in n.text for n in response.notices)
    code = main(["search", "rotate keys", "--index", str(tmp_path / "ix"), "--mode", "dense"])
    assert code == 2 and theirs.requests == []  # asked for dense only: a clear error, still no request


def test_the_user_says_where_and_only_there_the_key_goes(tmp_path, servers, monkeypatch):
    yours, theirs = servers
    ix = build(tmp_path, yours)
    hand_over(ix, theirs, planted_fingerprint=False)  # an index from before, with a URL in it
    ix.close()
    (tmp_path / "user-config.toml").write_text(f'[endpoints]\nopenai = "{yours.url}/v1"\n')
    yours.requests.clear()
    with Index(tmp_path / "ix") as ix:
        response = ix.search("rotate keys", mode="auto")
    assert theirs.requests == [] and response.notices == []
    assert yours.requests and yours.requests[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert [h.path.endswith("a.md") for h in response.hits][0]


def test_vectors_that_claim_another_endpoint_are_refused_not_followed(tmp_path, servers, monkeypatch):
    yours, theirs = servers
    ix = build(tmp_path, yours)
    hand_over(ix, theirs)
    ix.close()
    monkeypatch.setenv("OPENAI_BASE_URL", yours.url + "/v1")  # the environment is the user's
    with Index(tmp_path / "ix") as ix, pytest.raises(StorageError, match="cannot be compared"):
        ix.search("rotate keys", mode="auto")
    assert theirs.requests == []


def test_old_indexes_that_stored_a_url_are_read_without_it(tmp_path, servers):
    yours, theirs = servers
    ix = build(tmp_path, yours)
    hand_over(ix, theirs)
    status = ix.status()["embedder"]
    assert "url" not in status and theirs.url not in json.dumps(status)
    ix.close()


def test_a_project_config_cannot_name_an_endpoint(tmp_path, servers, monkeypatch, capsys):
    _, theirs = servers
    (tmp_path / "kenning.toml").write_text(f'[search]\nrerank = "openai:judge@{theirs.url}/v1"\n')
    monkeypatch.chdir(tmp_path)
    code = main(["search", "anything", "--index", str(tmp_path / "ix")])
    assert code == 2 and "rerank is not a search setting" in capsys.readouterr().err
    assert theirs.requests == []
