"""A model server's redirect never carries the user's key to another host: every model client
(embedder, chat model, chat reranker) refuses redirects and names the address instead."""

import pytest
from canary import Canary

from kenning.models.chat import ChatError, post_chat
from kenning.models.embed import EmbedderError, OllamaEmbedder, OpenAIEmbedder

KEY = "sk-redirect-canary-42"


@pytest.fixture
def hosts(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("KENNING_EMBED_API_KEY", KEY)
    with Canary() as elsewhere, Canary(redirect_to=None) as first:
        first.redirect_to = elsewhere.url.replace("127.0.0.1", "localhost")  # another host name
        yield first, elsewhere


@pytest.mark.parametrize("make", [lambda u: OpenAIEmbedder("m", u + "/v1"), lambda u: OllamaEmbedder("m", u)])
def test_an_embedder_does_not_follow_a_redirect(hosts, make):
    first, elsewhere = hosts
    with pytest.raises(EmbedderError, match="redirected to"):
        make(first.url).embed(["a text"])
    assert first.requests and first.requests[0]["headers"].get("Authorization") == f"Bearer {KEY}"
    assert elsewhere.requests == [], elsewhere.heard()


def test_a_chat_model_does_not_follow_a_redirect(hosts):
    first, elsewhere = hosts
    with pytest.raises(ChatError, match="redirected to"):
        post_chat(first.url + "/v1/chat/completions", {"messages": []}, KEY, 5.0, "the chat model")
    assert elsewhere.requests == [], elsewhere.heard()
