"""A clear message for every fault, never a traceback: servers down or slow, bad knobs, closed output,
read-only and full disks, a second writer."""

import json
import math
import socket
import subprocess
import sys
import time

import pytest
from fake_embedding_server import PROXY_VARS, FakeServer
from hypothesis import given
from hypothesis import strategies as st

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
    assert any("could not be embedded" in n.text and "tried 3 times" in n.text for n in response.notices)
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
    assert any("not reranked" in n.text for n in response.notices)


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


@pytest.fixture
def lexical_index(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Launch\n\nthe launch is on Friday\n")
    assert main(["index", str(docs), "--index", str(tmp_path / "ix"), "--no-embed", "-q"]) == 0
    return tmp_path / "ix"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--k1", "nan"], "k1 must be a number in [0, 100], got nan"),
        (["--k1", "inf"], "k1 must be a number in [0, 100], got inf"),
        (["--k1", "1e300"], "k1 must be a number in [0, 100]"),
        (["--b=-0.1"], "b must be a number in [0, 1]"),
        (["--title-weight", "nan"], "title_weight must be a number"),
        (["--delta=-inf"], "delta must be a number"),
        (["--w-dense", "inf"], "w_dense must be a number in [0, 1000], got inf"),
        (["--w-lexical=-1"], "w_lexical must be a number in [0, 1000]"),
        (["--depth", "0"], "depth must be a whole number in [1, 10,000,000]"),
        (["--depth", "99999999999"], "depth must be a whole number"),
        (["--rrf-k", "0"], "rrf_k must be a number in (0,"),
        (["--min-similarity", "nan"], "min_similarity must be a number in [-1, 1]"),
        (["-n", "0"], "limit must be a whole number in [1, 100000]"),
        (["-n", "1000000000"], "limit must be a whole number in [1, 100000]"),
        (["--mmr", "nan"], "MMR lambda must be a number in [0, 1]"),
        (["--recency", "inf"], "recency lambda must be a number"),
        (["--diversity", "0"], "diversity penalty must be a number in (0, 1]"),
        (["--cap", "0"], "per-document cap must be a whole number"),
        (["--rerank", "bogus"], "unknown reranker spec 'bogus'"),
        (["--rerank", "openai:"], "give the model name"),
        (["--embedder", "bogus"], "unknown embedder 'bogus'"),
        (["--embedder", "openai:m@ftp://x"], "must start with http:// or https://"),
        (["--since", "yesterday-ish"], "expected a date like 2026-01-31, or an age like 7d"),
    ],
)
def test_bad_settings_are_one_clear_line(lexical_index, capsys, flags, message):
    code = main(["search", "launch", "--index", str(lexical_index), *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_an_age_older_than_the_calendar_means_everything(lexical_index, capsys):
    for age in ("99999999d", "99999999999999y"):
        assert main(["search", "launch", "--index", str(lexical_index), "--since", age, "--json"]) == 0
        assert len(json.loads(capsys.readouterr().out)["hits"]) == 1


ANY_NUMBER = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**20), 10**20)
BM25_KNOBS = ["k1", "b", "delta", "title_weight", "body_weight", "coord_floor", "k3"]
FUSION_KNOBS = ["depth", "rrf_k", "alpha", "min_similarity", "feedback_k", "w_dense", "w_lexical"]


@given(
    st.sampled_from(["bm25", "fusion"]).flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            st.dictionaries(st.sampled_from(BM25_KNOBS if kind == "bm25" else FUSION_KNOBS), ANY_NUMBER),
        )
    )
)
def test_any_number_for_any_knob_is_accepted_finite_or_a_value_error_naming_it(case):
    from kenning.lexical.bm25 import Bm25Params
    from kenning.search.fusion import FusionParams

    kind, knobs = case
    try:
        params = (Bm25Params if kind == "bm25" else FusionParams)(**knobs)
    except ValueError as exc:
        assert str(exc).split(" must be ")[0] in knobs
        return
    if kind == "bm25":
        assert all(math.isfinite(getattr(params, k)) for k in knobs)


def test_a_database_that_fails_mid_query_is_one_clear_line(lexical_index, capsys):
    """The driver's own error (here sqlite3's, a table gone under the index) reaches the command
    line as one line naming verify and repair; the command line imports no driver to say so."""
    import sqlite3

    with sqlite3.connect(lexical_index / "index.db") as db:
        db.execute("DROP TABLE chunks")
    code = main(["get", "chunk:1", "--index", str(lexical_index)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("kenning: error:") and "kenning verify" in err
