"""BM25 variants, coordination and explain, checked against scores worked out by hand.

Corpus (BEIR lines; stemmed terms in brackets):
  d1  title "apple"       text "apple banana apple"            title len 1, body len 3
  d2  title ""            text "banana cherry"                 title len 0, body len 2
  d3  title "cherry pie"  text "apple pie recipe with cherry"  title len 2, body len 5
N = 3, avg title len = 1, avg body len = 10/3. "apple" [appl] is in d1 and d3: df 2,
idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6) = 0.470004.
"""

import json
import math

import pytest

from kenning import Bm25Params, Index

IDF_APPLE = math.log(1.6)
IDF_BANANA = math.log(1.6)  # banana: d1, d2


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("bm25")
    corpus = root / "corpus.jsonl"
    docs = [
        {"_id": "d1", "title": "apple", "text": "apple banana apple"},
        {"_id": "d2", "title": "", "text": "banana cherry"},
        {"_id": "d3", "title": "cherry pie", "text": "apple pie recipe with cherry"},
    ]
    corpus.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    ix = Index(root / "ix")
    ix.add([corpus])
    yield ix
    ix.close()


def scores(ix, query, params):
    return {h.doc_key: h.score for h in ix.search(query, limit=10, params=params).hits}


def test_classic_by_hand(index):
    p = Bm25Params(variant="classic", k1=1.2, b=0.75, title_weight=2.0, body_weight=1.0, coord_floor=1.0)
    got = scores(index, "apple", p)
    # d1 title: tf 1, norm = 0.25 + 0.75 * 1/1 = 1      -> 1 * 2.2 / (1 + 1.2) = 1.0
    # d1 body:  tf 2, norm = 0.25 + 0.75 * 3/(10/3) = 0.925 -> 2 * 2.2 / (2 + 1.11) = 1.414791
    d1 = IDF_APPLE * (2.0 * 1.0 + 1.0 * 4.4 / (2 + 1.2 * 0.925))
    # d3 body:  tf 1, norm = 0.25 + 0.75 * 5/(10/3) = 1.375 -> 2.2 / (1 + 1.65) = 0.830189
    d3 = IDF_APPLE * (2.2 / (1 + 1.2 * 1.375))
    assert got["d1"] == pytest.approx(d1, rel=1e-9)
    assert got["d3"] == pytest.approx(d3, rel=1e-9)
    assert got["d1"] == pytest.approx(0.470004 * 3.414791, rel=1e-5)
    assert set(got) == {"d1", "d3"}


def test_plus_adds_delta_per_matched_field(index):
    p = Bm25Params(
        variant="plus", k1=1.2, b=0.75, delta=1.0, title_weight=2.0, body_weight=1.0, coord_floor=1.0
    )
    got = scores(index, "apple", p)
    d1 = IDF_APPLE * (2.0 * (1.0 + 1.0) + 1.0 * (4.4 / (2 + 1.2 * 0.925) + 1.0))
    d3 = IDF_APPLE * (2.2 / (1 + 1.2 * 1.375) + 1.0)  # no title match: no delta for the title
    assert got["d1"] == pytest.approx(d1, rel=1e-9)
    assert got["d3"] == pytest.approx(d3, rel=1e-9)


def test_l_variant(index):
    p = Bm25Params(variant="l", k1=1.2, b=0.75, delta=0.5, title_weight=2.0, body_weight=1.0, coord_floor=1.0)
    got = scores(index, "apple", p)

    def s(tf, norm):
        c = tf / norm + 0.5
        return 2.2 * c / (1.2 + c)

    assert got["d1"] == pytest.approx(IDF_APPLE * (2.0 * s(1, 1.0) + s(2, 0.925)), rel=1e-9)
    assert got["d3"] == pytest.approx(IDF_APPLE * s(1, 1.375), rel=1e-9)


def test_coordination_floor(index):
    p = Bm25Params(variant="classic", k1=1.2, b=0.75, title_weight=2.0, body_weight=1.0, coord_floor=0.5)
    got = scores(index, "apple banana", p)
    # d2 matches only banana (1 of 2 terms): coordination 0.5 + 0.5 * 1/2 = 0.75.
    # banana in d2 body: tf 1, norm = 0.25 + 0.75 * 2/(10/3) = 0.7 -> 2.2 / (1 + 0.84)
    assert got["d2"] == pytest.approx(0.75 * IDF_BANANA * 2.2 / (1 + 1.2 * 0.7), rel=1e-9)
    # d1 matches both: coordination 1.
    d1_apple = IDF_APPLE * (2.0 + 4.4 / (2 + 1.2 * 0.925))
    d1_banana = IDF_BANANA * 2.2 / (1 + 1.2 * 0.925)
    assert got["d1"] == pytest.approx(d1_apple + d1_banana, rel=1e-9)


def test_field_weights_change_ranking(index):
    body_only = Bm25Params(title_weight=0.0, body_weight=1.0, coord_floor=1.0)
    title_only = Bm25Params(title_weight=1.0, body_weight=0.0, coord_floor=1.0)
    assert set(scores(index, "pie", body_only)) == {"d3"}
    assert scores(index, "cherry", title_only)["d2"] == 0.0
    assert scores(index, "cherry", title_only)["d3"] > 0.0


def test_bm25f_saturates_the_fields_together(index):
    p = Bm25Params(variant="bm25f", k1=1.2, b=0.75, title_weight=2.0, body_weight=1.0, coord_floor=1.0)
    got = scores(index, "apple", p)
    # d1: t = 2 * 1 / 1 (title) + 1 * 2 / 0.925 (body) = 4.162162; S = t * 2.2 / (t + 1.2)
    t = 2.0 / 1.0 + 2.0 / 0.925
    assert got["d1"] == pytest.approx(IDF_APPLE * t * 2.2 / (t + 1.2), rel=1e-9)
    # d3: body only, t = 1 / 1.375
    t3 = 1.0 / 1.375
    assert got["d3"] == pytest.approx(IDF_APPLE * t3 * 2.2 / (t3 + 1.2), rel=1e-9)
    # the cap: however often a word is in both fields, it earns less than (k1 + 1) idf
    assert got["d1"] < IDF_APPLE * 2.2 < scores(index, "apple", Bm25Params(coord_floor=1.0, k1=1.2))["d1"]


def test_idf_coordination_counts_rare_clauses_more(index):
    # "apple banana cherry": apple [d1, d3], banana [d1, d2], cherry [d2, d3]: all df 2, so idf
    # coordination equals count coordination here; "pie" (d3 only) is rarer
    count = Bm25Params(coord_floor=0.5)
    by_idf = Bm25Params(coord_floor=0.5, coordination="idf")
    same = "apple banana cherry"
    assert scores(index, same, by_idf) == pytest.approx(scores(index, same, count), rel=1e-12)
    idf_pie = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    flat = scores(index, "banana pie", Bm25Params(coord_floor=1.0))
    got = scores(index, "banana pie", by_idf)
    # d3 holds the rare "pie", d1 and d2 the common "banana": each held share of the query's idf
    assert got["d3"] == pytest.approx(flat["d3"] * (0.5 + 0.5 * idf_pie / (idf_pie + IDF_BANANA)), rel=1e-9)
    assert got["d2"] == pytest.approx(
        flat["d2"] * (0.5 + 0.5 * IDF_BANANA / (idf_pie + IDF_BANANA)), rel=1e-9
    )
    with pytest.raises(ValueError, match="unknown coordination 'votes'"):
        Bm25Params(coordination="votes")
    from kenning.surfaces.render import explain_lines

    hit = next(h for h in index.search("banana pie", params=by_idf, explain=True).hits if h.doc_key == "d3")
    share = idf_pie / (idf_pie + IDF_BANANA)
    assert hit.explain["lexical"]["matched_share"] == pytest.approx(share)
    assert f"(1/2 clauses, {share:.0%} of their idf)" in explain_lines(hit.explain)[-1]


@pytest.mark.parametrize(
    "variant,coordination",
    [("classic", "clauses"), ("plus", "clauses"), ("l", "clauses"), ("bm25f", "clauses"), ("bm25f", "idf")],
)
def test_explain_matches_ranking_score(index, variant, coordination):
    p = Bm25Params(variant=variant, coord_floor=0.6, coordination=coordination)
    response = index.search("apple cherry pie banana", limit=10, params=p, explain=True)
    assert response.hits
    for hit in response.hits:
        ex = hit.explain["lexical"]
        assert ex["score"] == pytest.approx(hit.score, rel=1e-9)
        assert ex["sum"] == pytest.approx(
            sum(r["title"]["contribution"] + r["body"]["contribution"] for r in ex["terms"]), rel=1e-12
        )


def test_funnel_counts(index):
    response = index.search("banana", limit=1, params=Bm25Params())
    f = response.funnel
    assert (f.corpus, f.gathered, f.filtered, f.scored, f.returned) == (3, 2, 2, 2, 1)
    assert set(f.timings_ms) == {
        "analyze",
        "gather",
        "filter",
        "score",
        "rank",
        "verbatim",
        "post",
        "present",
    }


def test_unknown_terms_and_empty_query(index):
    response = index.search("zeppelin", limit=5)
    assert response.hits == [] and response.missing_terms == ["zeppelin"]
    assert index.search("!!!", limit=5).hits == []


def test_bad_params_are_refused():
    with pytest.raises(ValueError, match="variant"):
        Bm25Params(variant="bm42")
    with pytest.raises(ValueError, match="b must be"):
        Bm25Params(b=1.5)


def test_query_term_frequency_is_weighted_by_k3(index):
    """A term the query says twice counts (k3 + 1) * 2 / (k3 + 2) times; k3 = 0 counts it once."""
    base = Bm25Params(coord_floor=1.0, k3=0.0)
    once = scores(index, "apple banana", base)
    assert scores(index, "apple banana apple", base) == pytest.approx(once)
    k3 = 4.0
    twice = scores(index, "apple banana apple", Bm25Params(coord_floor=1.0, k3=k3))
    apple_only = scores(index, "apple", Bm25Params(coord_floor=1.0))
    weight = (k3 + 1) * 2 / (k3 + 2)
    for doc in ("d1", "d3"):
        assert twice[doc] == pytest.approx(once[doc] + (weight - 1) * apple_only[doc], rel=1e-9)
    response = index.search("apple banana apple", params=Bm25Params(k3=k3), explain=True)
    rows = {r["term"]: r for r in response.hits[0].explain["lexical"]["terms"]}
    assert rows["appl"]["qtf"] == 2 and rows["appl"]["query_weight"] == pytest.approx(weight)
    assert rows["banana"]["qtf"] == 1 and rows["banana"]["query_weight"] == 1.0
    assert response.hits[0].score == pytest.approx(response.hits[0].explain["lexical"]["score"])
    with pytest.raises(ValueError, match="k3"):
        Bm25Params(k3=float("inf"))
    with pytest.raises(ValueError, match="k3"):
        Bm25Params(k3=-1)
