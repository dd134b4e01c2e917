"""OpenAI-compatible and Ollama embedders against a fake HTTP server on 127.0.0.1 (no network)."""

import socket

import numpy as np
import pytest
from fake_embedding_server import DIM, PROXY_VARS, FakeServer, fake_vector, unit

from kenning.models.embed import EmbedderError, OllamaEmbedder, OpenAIEmbedder, make_embedder


@pytest.fixture
def server(monkeypatch):
    for name in (*PROXY_VARS, "KENNING_EMBED_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer() as fake:
        yield fake


def openai(server, **kwargs):
    return OpenAIEmbedder("text-embed-test", server.url + "/v1", **kwargs)


def ollama(server, **kwargs):
    return OllamaEmbedder("nomic-embed-text:latest", server.url, **kwargs)


@pytest.mark.parametrize("make", [openai, ollama])
def test_embeds_normalises_and_learns_the_dimension(server, make):
    embedder = make(server)
    assert embedder.dim == 0
    assert embedder.describe()["fingerprint"] is None  # describe never makes a request
    assert server.requests == []
    texts = ["alpha", "bravo", "charlie"]
    vectors = embedder.embed(texts)
    assert embedder.dim == DIM
    assert vectors.shape == (3, DIM) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, np.vstack([unit(fake_vector(t)) for t in texts]), atol=1e-6)
    request = server.requests[0]
    assert request["body"]["model"] == embedder.model and request["body"]["input"] == texts
    assert "Authorization" not in request["headers"]


@pytest.mark.parametrize("make", [openai, ollama])
def test_batches_in_order(server, make):
    embedder = make(server, batch_size=4)
    texts = [f"text number {i}" for i in range(10)]
    vectors = embedder.embed(texts, kind="query")
    assert [len(r["body"]["input"]) for r in server.requests] == [4, 4, 2]
    np.testing.assert_allclose(vectors, np.vstack([unit(fake_vector(t)) for t in texts]), atol=1e-6)


def test_openai_sends_kenning_key_first(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    openai(server).embed(["x"])
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-openai"
    monkeypatch.setenv("KENNING_EMBED_API_KEY", "sk-kenning")
    openai(server).embed(["x"])
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-kenning"


def test_ollama_key_only_from_kenning_variable(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    ollama(server).embed(["x"])
    assert "Authorization" not in server.requests[-1]["headers"]
    monkeypatch.setenv("KENNING_EMBED_API_KEY", "sk-kenning")
    ollama(server).embed(["x"])
    assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-kenning"


@pytest.mark.parametrize("make", [openai, ollama])
def test_fingerprint(server, make):
    embedder = make(server)
    fingerprint = embedder.fingerprint()  # learns the dimension with one request
    assert len(server.requests) == 1 and embedder.dim == DIM
    assert fingerprint.startswith(embedder.backend + ":")
    assert make(server).fingerprint() == fingerprint
    info = embedder.describe()
    assert info["fingerprint"] == fingerprint
    assert info["fingerprint_inputs"] == {
        "host": server.url.split("//")[1],
        "model": embedder.model,
        "dim": DIM,
    }
    server.dim = DIM + 1
    assert make(server).fingerprint() != fingerprint
    other_model = type(embedder)("other-model", embedder.base_url)
    assert other_model.fingerprint() != make(server).fingerprint()


@pytest.mark.parametrize("make", [openai, ollama])
def test_dimension_change_is_an_error(server, make):
    embedder = make(server)
    embedder.embed(["a"])
    server.dim = DIM + 4
    with pytest.raises(EmbedderError, match=f"got {DIM + 4}-d vectors, earlier answers were {DIM}-d"):
        embedder.embed(["b"])


@pytest.mark.parametrize("make", [openai, ollama])
def test_http_500_names_the_url(server, make):
    server.mode = "500"
    embedder = make(server)
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["x"])
    message = str(info.value)
    assert embedder.backend in message and embedder.url in message
    assert "HTTP 500" in message and "model overloaded" in message


def test_http_401_says_which_variable(server):
    server.mode = "401"
    with pytest.raises(
        EmbedderError, match="HTTP 401.*no API key: set KENNING_EMBED_API_KEY or OPENAI_API_KEY"
    ):
        openai(server).embed(["x"])


@pytest.mark.parametrize("make", [openai, ollama])
def test_malformed_json(server, make):
    server.mode = "malformed"
    embedder = make(server)
    with pytest.raises(EmbedderError, match="not valid JSON") as info:
        embedder.embed(["x"])
    assert embedder.url in str(info.value)


@pytest.mark.parametrize("make", [openai, ollama])
def test_wrong_response_shape(server, make):
    server.mode = "wrong-shape"
    embedder = make(server)
    with pytest.raises(EmbedderError, match="expected") as info:
        embedder.embed(["x"])
    assert embedder.url in str(info.value)


@pytest.mark.parametrize("make", [openai, ollama])
def test_wrong_vector_count(server, make):
    server.mode = "too-few"
    with pytest.raises(EmbedderError, match="sent 2 texts but got 1 vectors back"):
        make(server).embed(["a", "b"])


def test_server_hangs_up(server):
    server.mode = "drop"
    embedder = openai(server)
    with pytest.raises(EmbedderError, match="connection failed .RemoteDisconnected") as info:
        embedder.embed(["x"])
    assert embedder.url in str(info.value)


def test_timeout(server):
    server.mode = "slow"
    with pytest.raises(EmbedderError, match="no answer within 0.2 s"):
        ollama(server, timeout=0.2).embed(["x"])


@pytest.mark.parametrize("backend", ["openai", "ollama"])
def test_connection_refused_names_the_url(backend, monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as probe:  # a port nobody listens on once this socket is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}" + ("/v1" if backend == "openai" else "")
    embedder = make_embedder(f"{backend}:some-model@{base}")
    with pytest.raises(EmbedderError, match="connection refused") as info:
        embedder.embed(["x"])
    assert embedder.url in str(info.value) and embedder.url.startswith(base)


def test_empty_input_makes_no_request(server):
    embedder = ollama(server)
    assert embedder.embed([]).shape == (0, 0)
    assert server.requests == []
