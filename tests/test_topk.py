"""top_k: the best k, ties by ascending id, whatever order the candidates come in."""

import numpy as np

from kenning.topk import top_k


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
