"""Post-fusion stages, checked against values worked out by hand in the comments."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning.search.postprocess import (
    Candidate,
    PostprocessOptions,
    apply_recency,
    cap_per_document,
    dedup_overlap,
    describe,
    diversity_penalty,
    mmr,
    run_stages,
    sort_candidates,
)

DAY = 86400.0
NOW = 1_000 * DAY


def ids(cands):
    return [c.id for c in cands]


def last(c):
    return c.adjustments[-1]


# ------------------------------------------------------------------------------------------- recency
def test_recency_hand_computed():
    cands = [
        Candidate(1, 1.0, "a", time=NOW - 20 * DAY),  # 1 / (1 + 0.01 * 20) = 1/1.2 -> 0.8333
        Candidate(2, 0.9, "b"),  # undated: stays 0.9
        Candidate(3, 0.95, "c", time=NOW),  # age 0: factor 1
        Candidate(4, 0.5, "d", time=NOW + 5 * DAY),  # dated in the future: counts as age 0
    ]
    out = apply_recency(cands, 0.01, NOW)
    assert ids(out) == [3, 2, 1, 4]
    by = {c.id: c for c in out}
    assert by[1].score == pytest.approx(1.0 / 1.2)
    assert last(by[1]) == {
        "stage": "recency",
        "factor": pytest.approx(1 / 1.2),
        "age_days": pytest.approx(20.0),
    }
    assert by[2].score == 0.9 and last(by[2])["undated"] is True and last(by[2])["factor"] == 1.0
    assert by[3].score == 0.95 and last(by[3])["factor"] == 1.0
    assert by[4].score == 0.5 and last(by[4])["age_days"] == 0.0
    assert describe(last(by[1])) == "recency x0.833 (20.0 days old)"
    assert describe(last(by[2])) == "recency: undated, score unchanged"


def test_recency_does_not_mutate_input_and_empty():
    c = Candidate(1, 1.0, "a", time=NOW - DAY)
    apply_recency([c], 0.5, NOW)
    assert c.score == 1.0 and c.adjustments == []
    assert apply_recency([], 0.01, NOW) == []
    with pytest.raises(ValueError):
        apply_recency([c], -1, NOW)


def test_identical_scores_break_ties_by_id():
    cands = [Candidate(i, 1.0, "a", time=NOW) for i in (5, 2, 9, 1)]
    assert ids(apply_recency(cands, 0.01, NOW)) == [1, 2, 5, 9]
    assert ids(sort_candidates(cands)) == [1, 2, 5, 9]
    assert ids(diversity_penalty(cands, 0.5, free=10)) == [1, 2, 5, 9]


# --------------------------------------------------------------------------------------------- dedup
def msgs(lo, hi):
    return [str(i) for i in range(lo, hi + 1)]


def test_dedup_messages_threshold_exactly_half_drops():
    cands = [
        Candidate(1, 4.0, "chat", message_ids=msgs(1, 8)),
        Candidate(2, 3.0, "chat", message_ids=msgs(5, 12)),  # 5..8 shown: 4/8 = 0.5 >= 0.5 -> dropped
        Candidate(3, 2.0, "chat", message_ids=msgs(7, 14)),  # kept so far: 1..8 -> 7, 8: 2/8 -> kept
        Candidate(4, 1.0, "chat", message_ids=msgs(9, 16)),  # 1..8 + 7..14 -> 9..14: 6/8 -> dropped by #3
    ]
    kept, dropped = dedup_overlap(cands, 0.5)
    assert ids(kept) == [1, 3] and ids(dropped) == [2, 4]
    a2, a4 = last(dropped[0]), last(dropped[1])
    assert a2["covered"] == 0.5 and a2["basis"] == "messages" and a2["by"] == [1] and a2["dropped"]
    assert a4["covered"] == 0.75 and a4["by"] == [3] and (a4["covered_count"], a4["total"]) == (6, 8)
    assert describe(a4) == "dropped by dedup: 75% of its messages already shown (by #3)"
    assert kept[1].adjustments == []  # kept unchanged: nothing recorded

    # at 0.6, #2 (0.5) stays; then #3 has 7..12 shown (6/8) -> dropped; #4 has 9..12 shown (4/8) -> kept
    kept, dropped = dedup_overlap(cands, 0.6)
    assert ids(kept) == [1, 2, 4] and ids(dropped) == [3]


def test_dedup_lines_within_a_document():
    cands = [
        Candidate(1, 5.0, "a.md", lines=(1, 10)),
        Candidate(2, 4.0, "a.md", lines=(6, 15)),  # 6..10 shown: 5/10 -> dropped
        Candidate(3, 3.0, "a.md", lines=(11, 30)),  # #2 was dropped, so 11..30 is new -> kept
        Candidate(4, 2.0, "b.md", lines=(1, 10)),  # another document -> kept
        Candidate(5, 1.0, "a.md", lines=(5, 24)),  # 5..10 by #1, 11..24 by #3: 20/20 -> dropped
    ]
    kept, dropped = dedup_overlap(cands)
    assert ids(kept) == [1, 3, 4] and ids(dropped) == [2, 5]
    assert last(dropped[1])["covered"] == 1.0 and last(dropped[1])["by"] == [1, 3]


def test_dedup_describe_matches_the_example():
    cands = [Candidate(12, 2.0, "a.md", lines=(1, 5)), Candidate(13, 1.0, "a.md", lines=(1, 8))]  # 5/8
    kept, dropped = dedup_overlap(cands)
    assert describe(last(dropped[0])) == "dropped by dedup: 62% of its lines already shown (by #12)"


def test_dedup_edge_cases():
    assert dedup_overlap([]) == ([], [])
    # the first is always kept; a candidate with neither lines nor messages is never dropped
    same = [
        Candidate(1, 2.0, "a", lines=(1, 4)),
        Candidate(2, 1.0, "a"),
        Candidate(3, 0.5, "a", lines=(1, 4)),
    ]
    kept, dropped = dedup_overlap(same)
    assert ids(kept) == [1, 2] and ids(dropped) == [3]
    # message ids only collide within one document
    kept, _ = dedup_overlap(
        [Candidate(1, 2.0, "x", message_ids=["1"]), Candidate(2, 1.0, "y", message_ids=["1"])]
    )
    assert ids(kept) == [1, 2]
    # both known: messages decide (an unsorted log's window spans lines from all over the file)
    both = [
        Candidate(1, 2.0, "a", lines=(1, 80), message_ids=msgs(1, 8)),
        Candidate(2, 1.0, "a", lines=(3, 60), message_ids=msgs(20, 23)),
        Candidate(3, 0.5, "a", lines=(90, 95), message_ids=msgs(5, 8)),
    ]
    kept, dropped = dedup_overlap(both)
    assert ids(kept) == [1, 2] and last(dropped[0])["basis"] == "messages"
    # input order is kept (dedup may follow MMR)
    kept, _ = dedup_overlap([Candidate(1, 0.1, "a"), Candidate(2, 9.0, "b")])
    assert ids(kept) == [1, 2]
    with pytest.raises(ValueError):
        dedup_overlap(same, 0.0)


# ----------------------------------------------------------------------------------------------- mmr
def vec(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_mmr_hand_computed():
    cands = [
        Candidate(1, 1.0, "a", vector=vec(1, 0)),  # rel 1.0
        Candidate(2, 0.9, "b", vector=vec(1, 0)),  # rel 0.9, a twin of #1
        Candidate(3, 0.5, "c", vector=vec(0, 1)),  # rel 0.5
        Candidate(4, 0.0, "d"),  # rel 0.0, no vector -> similarity 0
    ]
    # step 1: 0.7*rel: #1 0.7 wins. step 2: #2 0.63 - 0.3*1 = 0.33, #3 0.35 - 0 = 0.35 -> #3.
    # step 3: #2 0.33, #4 0 -> #2; then #4.
    out = mmr(cands, 0.7)
    assert ids(out) == [1, 3, 2, 4]
    a = {c.id: last(c) for c in out}
    assert a[3]["mmr"] == pytest.approx(0.35) and a[3]["before"] == 3 and a[3]["after"] == 2
    assert (
        a[2]["mmr"] == pytest.approx(0.33)
        and a[2]["max_sim"] == pytest.approx(1.0)
        and a[2]["similar_to"] == 1
    )
    assert a[4]["no_vector"] is True and a[4]["max_sim"] == 0.0 and a[4]["similar_to"] is None
    assert [c.score for c in out] == [1.0, 0.5, 0.9, 0.0]  # scores untouched
    assert describe(a[2]) == "mmr: rank 2 -> 3 (relevance 0.90, max similarity 1.00 to #1)"

    # k = 2: the first two in MMR order, then the rest in input order
    out = mmr(cands, 0.7, k=2)
    assert ids(out) == [1, 3, 2, 4]
    assert last(out[2])["beyond_k"] is True and last(out[2])["after"] == 3
    assert out[3].adjustments == []  # #4 stays 4th: nothing to note
    out = mmr(cands, 0.7, k=1)
    assert ids(out) == [1, 2, 3, 4]
    assert [len(c.adjustments) for c in out] == [1, 0, 0, 0]  # only moved candidates are noted


def test_mmr_extremes_and_edges():
    cands = [
        Candidate(1, 3.0, "a", vector=vec(1, 0)),
        Candidate(2, 2.0, "a", vector=vec(1, 0)),
        Candidate(3, 1.0, "a", vector=vec(0, 1)),
    ]
    assert ids(mmr(cands, 1.0)) == [1, 2, 3]  # pure relevance
    assert ids(mmr(cands, 0.0)) == [1, 3, 2]  # pure diversity: first pick ties at 0 -> best score
    assert mmr([], 0.7) == []
    no_vectors = [Candidate(i, s, "a") for i, s in ((1, 0.2), (2, 0.9), (3, 0.5))]
    assert ids(mmr(no_vectors, 0.7)) == [2, 3, 1]  # similarity 0 everywhere: score order
    same = [Candidate(i, 1.0, "a") for i in (4, 2, 3)]
    assert ids(mmr(same, 0.7)) == [2, 3, 4]  # all relevance 1, ties by id
    assert ids(mmr(cands, 0.7, k=0)) == [1, 2, 3]
    with pytest.raises(ValueError):
        mmr(cands, 1.5)


# ----------------------------------------------------------------------------------------- diversity
def test_diversity_all_same_group():
    cands = [Candidate(i, s, "a", group="g") for i, s in enumerate([1.0, 0.9, 0.8, 0.7, 0.6], start=1)]
    out = diversity_penalty(cands, penalty=0.5, free=2)
    # 3rd: 0.8*0.5 = 0.4; 4th: 0.7*0.25 = 0.175; 5th: 0.6*0.125 = 0.075
    assert [c.score for c in out] == pytest.approx([1.0, 0.9, 0.4, 0.175, 0.075])
    assert [len(c.adjustments) for c in out] == [0, 0, 1, 1, 1]
    assert last(out[3]) == {"stage": "diversity", "factor": 0.25, "group": "g", "nth_in_group": 4, "free": 2}
    assert describe(last(out[2])) == "diversity x0.500 (3rd result from 'g', 2 free)"


def test_diversity_reorders_and_ignores_ungrouped():
    cands = [
        Candidate(1, 1.0, "x", group="g1"),
        Candidate(2, 0.95, "y", group="g1"),
        Candidate(3, 0.9, "z", group="g1"),  # 0.9 * 0.85 = 0.765, falls below #4
        Candidate(4, 0.8, "w", group="g2"),
        Candidate(5, 0.7, "v"),
        Candidate(6, 0.6, "u"),
        Candidate(7, 0.5, "t"),  # no group: never penalised
    ]
    out = diversity_penalty(cands)
    assert ids(out) == [1, 2, 4, 3, 5, 6, 7]
    assert out[3].score == pytest.approx(0.765)
    assert all(not c.adjustments for c in out if c.id != 3)
    assert diversity_penalty([]) == []


# ----------------------------------------------------------------------------------------------- cap
def test_cap_per_document():
    cands = [Candidate(1, 5, "a"), Candidate(2, 4, "a"), Candidate(3, 3, "b"), Candidate(4, 2, "a")]
    kept, dropped = cap_per_document(cands, 2)
    assert ids(kept) == [1, 2, 3] and ids(dropped) == [4]
    assert last(dropped[0]) == {
        "stage": "cap",
        "dropped": True,
        "cap": 2,
        "doc_key": "a",
        "nth_in_doc": 3,
        "by": [1, 2],
    }
    assert describe(last(dropped[0])) == "dropped by cap: 2 results from this document already kept (#1, #2)"
    assert cap_per_document([], 1) == ([], [])
    with pytest.raises(ValueError):
        cap_per_document(cands, 0)


# ------------------------------------------------------------------------------------------ pipeline
def test_run_stages_funnel_and_order():
    cands = [
        Candidate(1, 1.0, "a.md", group="a", lines=(1, 10), time=NOW),
        Candidate(2, 0.9, "a.md", group="a", lines=(2, 9), time=NOW),  # inside #1 -> dedup
        Candidate(3, 0.8, "a.md", group="a", lines=(40, 50), time=NOW - 100 * DAY),  # 0.8 / 2 = 0.4
        Candidate(4, 0.7, "b.md", group="b", lines=(1, 5)),
        Candidate(5, 0.6, "a.md", group="a", lines=(60, 70), time=NOW),
    ]
    opts = PostprocessOptions(
        recency_lambda=0.01, now=NOW, diversity_penalty=0.85, dedup_threshold=0.5, cap=2
    )
    res = run_stages(cands, opts)
    # recency: 1.0, 0.9, 0.4, 0.7 (undated), 0.6 -> order 1 2 4 5 3
    # diversity (group a: 1, 2 free; 5 is 3rd -> 0.6*0.85 = 0.51; 3 is 4th -> 0.4*0.7225 = 0.289)
    # dedup drops 2; cap 2 per document: a.md keeps 1 and 5, drops 3
    assert ids(res.kept) == [1, 4, 5]
    assert sorted(ids(res.dropped)) == [2, 3]
    assert [f["stage"] for f in res.funnel] == ["recency", "diversity", "dedup", "cap"]
    assert [(f["in"], f["out"]) for f in res.funnel] == [(5, 5), (5, 5), (5, 4), (4, 3)]
    assert res.kept[2].score == pytest.approx(0.51)
    assert [a["stage"] for a in res.kept[2].adjustments] == ["recency", "diversity"]


# -------------------------------------------------------------------------------------- properties
cand_lists = st.lists(
    st.builds(
        lambda i, s, d, lo, n: (i, s, d, lo, n),
        st.integers(0, 10_000),
        st.floats(-5, 5, allow_nan=False),
        st.sampled_from(["a", "b", "c"]),
        st.integers(1, 40),
        st.integers(0, 12),
    ),
    max_size=25,
    unique_by=lambda t: t[0],
)


def build(rows):
    return [Candidate(i, s, d, group=d, lines=(lo, lo + n)) for i, s, d, lo, n in rows]


@settings(max_examples=150, deadline=None)
@given(cand_lists, st.sampled_from([0.25, 0.5, 1.0]))
def test_dedup_partitions_and_keeps_first(rows, threshold):
    cands = build(rows)
    kept, dropped = dedup_overlap(cands, threshold)
    assert sorted(ids(kept) + ids(dropped)) == sorted(ids(cands))
    if cands:
        assert kept[0].id == cands[0].id
    assert all(last(c)["covered"] >= threshold for c in dropped)


@settings(max_examples=150, deadline=None)
@given(cand_lists, st.floats(0, 1))
def test_mmr_and_diversity_are_permutations(rows, lam):
    cands = sort_candidates(build(rows))
    assert sorted(ids(mmr(cands, lam))) == sorted(ids(cands))
    assert ids(mmr(cands, 1.0)) == ids(cands)
    out = diversity_penalty(cands)
    assert sorted(ids(out)) == sorted(ids(cands))
    assert all(math.isfinite(c.score) for c in out)
    assert ids(out) == ids(sort_candidates(out))
