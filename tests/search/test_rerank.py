"""Rerankers: a tiny cross-encoder built here (no downloaded weights) and chat rerankers against a local
fake server. No quality is measured or claimed; the tests check that the pool is ordered as the model says.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tiny_cross_encoder import expected_score, make_cross_encoder

from kenning.models.rerankers import (
    ChatReranker,
    OnnxCrossEncoder,
    RerankError,
    make_reranker,
    parse_rating,
)
from kenning.search.postprocess import Candidate, describe
from kenning.search.rerank import pool_size, rerank


def test_pool_size():
    assert pool_size(1) == 30 and pool_size(10) == 30 and pool_size(11) == 33 and pool_size(20) == 60


def test_none_specs_and_unknown():
    assert make_reranker(None) is None
    assert make_reranker("none") is None
    assert make_reranker("") is None
    with pytest.raises(RerankError, match="unknown reranker spec 'bm42:x'"):
        make_reranker("bm42:x")
    with pytest.raises(RerankError, match="needs a directory"):
        make_reranker("cross-encoder:")
    with pytest.raises(RerankError, match="must start with http"):
        make_reranker("openai:gpt@localhost:8080")


# ------------------------------------------------------------------------------------ cross-encoder
@pytest.fixture(scope="module")
def ce_dir(tmp_path_factory):
    return make_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny")


PASSAGES = {
    10: "the cat and the dog",  # 0
    11: "zebra cat",  # 10 * 1/3
    12: "zebra zebra cat",  # 10 * 2/4
    13: "horse",  # 0
    14: "the zebra the dog the cat the horse",  # 10 * 1/9
}


def test_cross_encoder_scores_follow_the_model(ce_dir):
    r = make_reranker(f"cross-encoder:{ce_dir}")
    assert isinstance(r, OnnxCrossEncoder) and r.name == f"cross-encoder:{ce_dir}"
    texts = list(PASSAGES.values()) + ["", "Zebra unknownword"]
    got = r.score("zebra", texts)
    assert got == pytest.approx([expected_score(t) for t in texts], abs=1e-4)
    # the query's own "zebra" is segment A (type 0) and does not count: proof the pair is encoded as a pair
    assert r.score("zebra zebra zebra", ["cat"]) == pytest.approx([0.0], abs=1e-6)


def test_cross_encoder_batches_pad_correctly(ce_dir):
    whole = make_reranker(f"cross-encoder:{ce_dir}").score("q", list(PASSAGES.values()))
    small = make_reranker(f"cross-encoder:{ce_dir}")
    small.batch_size = 2  # different padding widths per batch must not change any score
    assert small.score("q", list(PASSAGES.values())) == pytest.approx(whole, abs=1e-6)
    assert small.score("q", []) == []


def test_rerank_reorders_pool_and_records_ranks(ce_dir):
    r = make_reranker(f"cross-encoder:{ce_dir}")
    pool = [Candidate(i, 1.0 - 0.1 * n, f"d{i}") for n, i in enumerate(PASSAGES)]  # fused order 10..14
    out = rerank(pool, "zebra", PASSAGES, r, limit=3)
    assert [c.id for c in out] == [12, 11, 14]
    adj = [c.adjustments[-1] for c in out]
    assert [(a["before"], a["after"]) for a in adj] == [(3, 1), (2, 2), (5, 3)]
    assert adj[0]["score"] == pytest.approx(5.0, abs=1e-4) and adj[0]["previous_score"] == pytest.approx(0.8)
    assert adj[0]["stage"] == "rerank" and adj[0]["reranker"] == r.name
    assert out[0].score == adj[0]["score"]
    assert describe(adj[0]).startswith(f"rerank ({r.name}): rank 3 -> 1 (score 5")
    assert pool[2].adjustments == [] and pool[2].score == pytest.approx(0.8)  # the pool is untouched
    # the zero-scored passages tie and keep their pool order
    out = rerank(pool, "zebra", PASSAGES, r, limit=5)
    assert [c.id for c in out] == [12, 11, 14, 10, 13]


def test_single_logit_model_and_truncation_from_config(tmp_path):
    d = make_cross_encoder(tmp_path / "one", n_classes=1, max_length=8)
    r = make_reranker(f"cross-encoder:{d}")
    assert r.max_length == 8
    # [CLS] zebra [SEP] + passage + [SEP] = 8 tokens at most: the passage keeps 4 words, so the
    # "zebra" at word 5 is cut off
    got = r.score("zebra", ["cat cat cat cat zebra", "zebra cat"])
    assert got == pytest.approx([0.0, 10 / 3], abs=1e-4)


def test_tokenizer_without_pair_template_gets_one(tmp_path):
    d = make_cross_encoder(tmp_path / "bare", with_template=False)
    r = make_reranker(f"cross-encoder:{d}")
    assert r.score("zebra", ["zebra zebra cat"]) == pytest.approx([5.0], abs=1e-4)


def test_cross_encoder_errors_name_the_path(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(RerankError, match=f"{missing} does not exist"):
        make_reranker(f"cross-encoder:{missing}")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RerankError, match=rf"{empty} has no model: looked for {empty}/model.onnx"):
        make_reranker(f"cross-encoder:{empty}")
    no_tok = make_cross_encoder(tmp_path / "notok")
    (no_tok / "tokenizer.json").unlink()
    with pytest.raises(RerankError, match=f"has no tokenizer.json \\({no_tok}/tokenizer.json\\)"):
        make_reranker(f"cross-encoder:{no_tok}")
    bad = make_cross_encoder(tmp_path / "bad")
    (bad / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(RerankError, match=f"cannot load ONNX model {bad}/model.onnx"):
        make_reranker(f"cross-encoder:{bad}")
    torch_only = tmp_path / "torch"
    torch_only.mkdir()
    (torch_only / "config.json").write_text("{}")
    (torch_only / "model.safetensors").write_bytes(b"")
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(RerankError, match="sentence-transformers is not installed"):
            make_reranker(f"cross-encoder:{torch_only}")


class FixedReranker:
    name = "fixed"

    def __init__(self, scores):
        self.scores = scores

    def score(self, query, texts):
        return self.scores


def test_rerank_edges():
    pool = [Candidate(1, 3.0, "a"), Candidate(2, 2.0, "b"), Candidate(3, 1.0, "c")]
    assert rerank(pool, "q", {}, None, 2) == pool[:2]  # no reranker: just the cut
    assert rerank([], "q", {}, FixedReranker([]), 5) == []
    out = rerank(pool, "q", {1: "x", 2: "y"}, FixedReranker([1.0, float("nan"), 2.0]), 3)
    assert [c.id for c in out] == [3, 1, 2]  # NaN ranks last
    assert out[0].adjustments[-1]["note"] == "no text for this chunk"
    assert "ranked last" in out[2].adjustments[-1]["note"]
    with pytest.raises(RerankError, match="returned 1 scores for 3 passages"):
        rerank(pool, "q", {}, FixedReranker([1.0]), 3)


# ---------------------------------------------------------------------------------------- LLM judges
@pytest.mark.parametrize(
    "answer, value, noted",
    [
        ('{"score": 7}', 7.0, False),
        ('```json\n{"score": "8"}\n```', 8.0, False),
        ('<think>maybe 3</think> {"Score": 6}', 6.0, False),
        ('{"relevance": 2.5}', 2.5, False),
        ("Relevance: 4/10", 4.0, False),
        ("9", 9.0, False),
        ("15", 10.0, True),
        ('{"score": -2}', 0.0, True),
        ("no idea", None, True),
        ("", None, True),
    ],
)
def test_parse_rating(answer, value, noted):
    got, note = parse_rating(answer)
    assert got == value and (note is not None) == noted


class FakeLLM(BaseHTTPRequestHandler):
    requests: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeLLM.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        mode = self.path.split("/")[1]
        if mode == "fail":
            return self._send(500, b"model exploded")
        if mode == "garbage":
            return self._send(200, b"<html>hello</html>")
        if mode == "nofield":
            return self._send(200, b'{"foo": 1}')
        if mode == "slow":
            time.sleep(1.0)
        passage = body["messages"][-1]["content"].split("Passage:\n", 1)[1]
        if "zebra" in passage:
            content = '{"score": 9}'
        elif "horse" in passage:
            content = "I would say 7/10."
        elif "garbled" in passage:
            content = "no idea, sorry"
        else:
            content = '{"score": 1}'
        message = {"role": "assistant", "content": content}
        data = (
            {"message": message} if self.path.endswith("/api/chat") else {"choices": [{"message": message}]}
        )
        self._send(200, json.dumps(data).encode())

    def _send(self, code, payload):
        self.send_response(code)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
            pass


@pytest.fixture
def server(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("KENNING_RERANK_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeLLM)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    FakeLLM.requests = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


LLM_TEXTS = {1: "a cat", 2: "a zebra", 3: "a horse", 4: "garbled text"}


@pytest.mark.parametrize("kind, base", [("openai", "/ok/v1"), ("ollama", "/ok")])
def test_chat_reranker_reorders_and_notes(server, kind, base):
    r = make_reranker(f"{kind}:tiny-model@{server}{base}")
    assert isinstance(r, ChatReranker) and r.name == f"{kind}:tiny-model"
    pool = [Candidate(i, 1.0 / i, f"d{i}") for i in LLM_TEXTS]
    out = rerank(pool, "striped animals", LLM_TEXTS, r, limit=4)
    assert [c.id for c in out] == [2, 3, 1, 4]
    assert [c.score for c in out] == [9.0, 7.0, 1.0, 0.0]
    assert out[3].adjustments[-1]["note"].startswith("unparseable answer 'no idea, sorry'")
    assert "note" not in out[0].adjustments[-1]
    assert r.score("q", ["garbled"]) == [0.0] and 0 in r.last_notes
    paths = {q["path"] for q in FakeLLM.requests}
    assert paths == {base + ("/chat/completions" if kind == "openai" else "/api/chat")}
    body = FakeLLM.requests[0]["body"]
    assert body["model"] == "tiny-model" and body["messages"][0]["role"] == "system"
    assert "Query: striped animals" in body["messages"][1]["content"]


def test_api_keys(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    make_reranker(f"openai:m@{server}/ok/v1").score("q", ["x"])
    assert FakeLLM.requests[-1]["auth"] == "Bearer sk-openai"
    make_reranker(f"ollama:m@{server}/ok").score("q", ["x"])
    assert FakeLLM.requests[-1]["auth"] is None  # the OpenAI key is not sent to Ollama
    monkeypatch.setenv("KENNING_RERANK_API_KEY", "sk-kenning")
    make_reranker(f"openai:m@{server}/ok/v1").score("q", ["x"])
    assert FakeLLM.requests[-1]["auth"] == "Bearer sk-kenning"
    make_reranker(f"ollama:m@{server}/ok").score("q", ["x"])
    assert FakeLLM.requests[-1]["auth"] == "Bearer sk-kenning"


def test_chat_errors_are_clear(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    r = make_reranker(f"openai:m@{server}/fail/v1")
    with pytest.raises(
        RerankError, match=rf"at {server}/fail/v1/chat/completions answered HTTP 500.*model exploded"
    ) as e:
        r.score("q", ["x", "y"])
    assert "sk-secret" not in str(e.value)
    with pytest.raises(RerankError, match=rf"{server}/garbage/v1/chat/completions did not answer with JSON"):
        make_reranker(f"openai:m@{server}/garbage/v1").score("q", ["x"])
    with pytest.raises(RerankError, match=r"answered JSON without choices\[0\]\.message\.content"):
        make_reranker(f"openai:m@{server}/nofield/v1").score("q", ["x"])
    with pytest.raises(RerankError, match=r"answered JSON without message\.content"):
        make_reranker(f"ollama:m@{server}/nofield").score("q", ["x"])
    with pytest.raises(RerankError, match=r"did not answer within 0.2s"):
        make_reranker(f"ollama:m@{server}/slow", timeout=0.2).score("q", ["x"])


def test_connection_refused_names_the_url(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as s:  # a port that was free a moment ago and has no listener now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = make_reranker(f"ollama:m@http://127.0.0.1:{port}")
    with pytest.raises(
        RerankError, match=rf"cannot reach ollama:m reranker at http://127.0.0.1:{port}/api/chat"
    ):
        r.score("q", ["x"])


def test_default_base_urls_and_empty_input():
    r = make_reranker("ollama:llama3.1:8b")
    assert r.model == "llama3.1:8b" and r.url == "http://127.0.0.1:11434/api/chat"
    assert r.score("q", []) == []  # no request made
    assert make_reranker("openai:gpt-4o-mini").url == "https://api.openai.com/v1/chat/completions"
