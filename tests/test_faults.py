"""A clear message for every fault, never a traceback: servers down or slow, bad knobs, closed output,
read-only and full disks, a second writer."""

import json
import socket
import subprocess
import sys
import time

import pytest
from test_embed_http import PROXY_VARS, FakeServer

from kenning import Index
from kenning.models.embed import EmbedderError, OpenAIEmbedder
from kenning.surfaces.cli import main


@pytest.fixture
def server(monkeypatch):
    for name in (*PROXY_VARS, "KENNING_EMBED_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer() as fake:
        monkeypatch.setenv("KENNING_OPENAI_URL", fake.url + "/v1")
        yield fake


@pytest.fixture
def embedded(tmp_path, server):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Keys\n\nrotate the signing keys every quarter\n")
    (docs / "b.md").write_text("# Backups\n\nrestore the nightly backup from cold storage\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([docs])
        ix.embed("openai:text-embed-test")
    return tmp_path / "ix"


def fail_first(server, n: int, status: int = 503):
    """The server answers `status` to its first n requests, then works."""
    ok = server.answer

    def answer(path, body):
        if len(server.requests) <= n:
            return status, {"error": {"message": "busy"}}
        return ok(path, body)

    server.answer = answer


def test_a_busy_server_is_retried_with_backoff(server):
    fail_first(server, 2)
    embedder = OpenAIEmbedder("text-embed-test", server.url + "/v1")
    started = time.perf_counter()
    assert embedder.embed(["hello"]).shape == (1, 12)
    assert len(server.requests) == 3 and time.perf_counter() - started >= 0.25 + 0.5
    fail_first(server, 99, status=400)  # a request the server refuses is not tried again
    server.requests.clear()
    with pytest.raises(EmbedderError, match="HTTP 400"):
        embedder.embed(["hello"])
    assert len(server.requests) == 1


def test_a_server_that_stays_down_gives_lexical_results_and_says_why(embedded, server):
    server.mode = "500"
    with Index(embedded) as ix:
        response = ix.search("rotate keys")
    assert response.hits and response.hits[0].path.endswith("a.md")
    assert any("could not be embedded" in n and "tried 3 times" in n for n in response.notices)
    assert response.funnel.channels.get("dense") is None


def test_a_slow_server_costs_at_most_the_query_timeout(embedded, server, monkeypatch, capsys):
    monkeypatch.setenv("KENNING_EMBED_TIMEOUT", "0.3")
    server.mode = "slow"  # answers after 1 s
    started = time.perf_counter()
    code = main(["search", "rotate keys", "--index", str(embedded), "--json"])
    elapsed = time.perf_counter() - started
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["hits"] and elapsed < 1.0
    assert any("no answer within 0.3 s" in n for n in out["notices"])


def test_a_server_that_is_gone(embedded, server, capsys):
    server.httpd.shutdown()
    server.httpd.server_close()  # nothing listens at the address the vectors came from any more
    code = main(["search", "backup", "--index", str(embedded)])
    out, err = capsys.readouterr()
    assert code == 0 and "b.md" in out and "connection refused" in out + err
    code = main(["search", "backup", "--index", str(embedded), "--mode", "dense"])
    err = capsys.readouterr().err
    assert code == 2 and "connection refused" in err and "Traceback" not in err


def test_a_reranker_that_is_down_keeps_the_fused_order(embedded, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Index(embedded) as ix:
        plain = ix.search("rotate keys")
        response = ix.search("rotate keys", rerank=f"openai:judge@http://127.0.0.1:{port}/v1")
    assert [h.id for h in response.hits] == [h.id for h in plain.hits]
    assert any("not reranked" in n for n in response.notices)


def test_output_closed_early_exits_quietly(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(300):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nthe launch checklist, item {i}: " + "words " * 80)
    assert main(["index", str(docs), "--index", str(tmp_path / "ix"), "--no-embed", "-q"]) == 0
    command = "from kenning.surfaces.cli import main; import sys; sys.exit(main())"
    args = ["search", "launch checklist", "--index", str(tmp_path / "ix"), "--json", "-n", "300"]
    proc = subprocess.Popen(
        [sys.executable, "-c", command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout.readline()  # `| head -1`: one line, then the reader goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == ""
