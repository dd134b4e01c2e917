"""top_k: the best k, ties by ascending id, whatever order the candidates come in."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kenning.kernels.topk import top_k


def test_ties_at_the_cut_go_to_the_lowest_ids_in_any_input_order():
    rng = np.random.default_rng(3)
    ids = np.arange(1000, dtype=np.int64)
    scores = rng.choice([1.0, 2.0, 3.0], size=1000)
    expected = sorted(zip(ids.tolist(), scores.tolist(), strict=True), key=lambda p: (-p[1], p[0]))[:50]
    for _ in range(5):
        order = rng.permutation(1000)
        got_ids, got_scores = top_k(ids[order], scores[order], 50)
        assert list(zip(got_ids.tolist(), got_scores.tolist(), strict=True)) == expected


def test_k_beyond_the_candidates_and_zero():
    ids, scores = top_k(np.array([5, 3]), np.array([1.0, 1.0]), 10)
    assert ids.tolist() == [3, 5]
    assert len(top_k(np.array([1]), np.array([1.0]), 0)[0]) == 0


@given(
    st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=0, max_size=300),
    st.integers(1, 40),
)
def test_best_found_is_the_top_k_of_the_admitted(rows, k):
    """SignalQuery.best_found checks admission lazily, best first; it must pick exactly what filtering
    every candidate and then taking the top k picks (ties included)."""
    from kenning.signals.base import SignalQuery

    ids = np.arange(len(rows), dtype=np.int64)[::-1].copy()  # candidates in no particular order
    scores = np.array([float(r[0]) for r in rows])
    admitted = np.array([r[1] for r in rows], dtype=bool)[::-1].copy()
    checked = []

    def cosine(chunk_ids):
        checked.extend(chunk_ids.tolist())
        return np.where(admitted[len(rows) - 1 - chunk_ids], 1.0, 0.0)

    query = SignalQuery(
        "q", [], np.ones(len(rows), bool), np.zeros(len(rows), bool), np.zeros(len(rows)), k, 0.5
    )
    query.cosine = cosine
    got = query.best_found(ids, scores, k)
    keep = admitted
    expected = top_k(ids[keep], scores[keep], k)
    assert got[0].tolist() == expected[0].tolist() and got[1].tolist() == expected[1].tolist()
    assert len(checked) == len(set(checked))  # each candidate checked at most once
