"""Eval metrics against values computed by hand, and the eval command on a tiny BEIR set."""

import json
import math

import pytest

from kenning.eval import DatasetError, evaluate, load_beir, mrr_at, ndcg_at, recall_at


def test_ndcg_by_hand():
    rels = {"a": 3, "b": 1, "c": 2}
    ranked = ["b", "x", "a"]
    dcg = 1 / math.log2(2) + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranked, rels) == pytest.approx(dcg / idcg)
    assert ndcg_at(["a", "c", "b"], rels) == pytest.approx(1.0)
    assert ndcg_at([], rels) == 0.0
    assert ndcg_at(["x"] * 10 + ["a"], rels, k=10) == 0.0


def test_recall_and_mrr_by_hand():
    rels = {"a": 1, "b": 2, "z": 0}
    assert recall_at(["x", "a"], rels, k=100) == 0.5
    assert recall_at(["x", "a"], rels, k=1) == 0.0
    assert mrr_at(["z", "x", "b"], rels) == pytest.approx(1 / 3)  # relevance 0 does not count
    assert mrr_at(["x"] * 10 + ["a"], rels) == 0.0


def write_beir(root):
    root.mkdir()
    docs = [
        {"_id": "1", "title": "jet engines", "text": "turbine blades and combustion in jet engines"},
        {"_id": "2", "title": "wings", "text": "lift and drag over a wing in a slipstream"},
        {"_id": "3", "title": "boundary layers", "text": "heat transfer in a laminar boundary layer"},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    (root / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "wing slipstream lift"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "laminar heat transfer"})
        + "\n"
        + json.dumps({"_id": "q3", "text": "unjudged query"})
        + "\n"
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t2\t1\nq2\t3\t2\nq2\t1\t1\n")


def test_evaluate_tiny_set(tmp_path):
    write_beir(tmp_path / "tiny")
    report = evaluate(tmp_path / "tiny", index_dir=tmp_path / "ix")
    assert report.queries == 2  # only judged queries
    assert report.per_query["q1"]["ndcg@10"] == pytest.approx(1.0)
    # q2 ranks doc 3 first; doc 1 shares no term, so it is never retrieved.
    ideal = 2 + 1 / math.log2(3)
    assert report.per_query["q2"]["ndcg@10"] == pytest.approx(2 / ideal)
    assert report.recall_at_100 == pytest.approx((1 + 0.5) / 2)
    assert report.qps > 0
    again = evaluate(tmp_path / "tiny", index_dir=tmp_path / "ix")  # reuses the index
    assert again.ndcg_at_10 == report.ndcg_at_10


def test_missing_layout_is_named(tmp_path):
    with pytest.raises(DatasetError, match="queries.jsonl"):
        (tmp_path / "corpus.jsonl").write_text("")
        load_beir(tmp_path)


def test_queries_go_in_as_plain_text_and_a_failing_query_scores_zero(tmp_path, monkeypatch):
    write_beir(tmp_path / "tiny")
    queries = tmp_path / "tiny" / "queries.jsonl"
    queries.write_text(
        json.dumps({"_id": "q1", "text": "(slipstream) heat -drag"})  # operators, read as words
        + "\n"
        + json.dumps({"_id": "q2", "text": "laminar heat transfer"})
        + "\n"
    )
    report = evaluate(tmp_path / "tiny", index_dir=tmp_path / "ix")
    assert report.syntax == "plain" and report.failures == {}
    assert report.per_query["q1"]["ndcg@10"] > 0.5  # -drag did not exclude doc 2
    dialect = evaluate(tmp_path / "tiny", index_dir=tmp_path / "ix", syntax="dialect")
    assert dialect.per_query["q1"]["ndcg@10"] == 0.0  # through the dialect, -drag excludes doc 2

    from kenning.api.index import Index

    real = Index.search

    def flaky(self, query, *args, **kwargs):
        if "laminar" in str(query):
            raise RuntimeError("the disk is on fire")
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(Index, "search", flaky)
    report = evaluate(tmp_path / "tiny", index_dir=tmp_path / "ix")
    assert report.failures == {"q2": "RuntimeError: the disk is on fire"}
    assert report.per_query["q2"]["ndcg@10"] == 0.0 and report.per_query["q1"]["ndcg@10"] > 0.5
