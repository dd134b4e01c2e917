"""Top-k selection, the one way kenning picks the best k of a scored set: ties broken by id, so every
ranking is stable across runs and machines. In C where the kernels are built (a heap of k: one pass,
against about ten NumPy calls, which on a small collection were a tenth of a lexical query), else
in NumPy; tests/lexical/test_kernels.py holds the two equal."""

from __future__ import annotations

import numpy as np

from kenning import kernels


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (ids, scores), best first, ties by ascending id (a score that is not a number
    ranks last); int64 ids, float64 scores."""
    native = kernels.top_k(ids, scores, k)
    if native is not None:
        return native
    return top_k_numpy(ids, scores, k)


def top_k_of_dense(ids: np.ndarray, dense: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`top_k(ids, dense[ids], k)`: the scores read by chunk id from a corpus-sized array."""
    native = kernels.top_k(ids, dense, k, by_id=True)
    if native is not None:
        return native
    ids = np.asarray(ids, dtype=np.int64)
    return top_k_numpy(ids, dense[ids] if len(ids) else np.zeros(0), k)


def top_k_numpy(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`top_k` in NumPy: argpartition for the k-th best score, the ties at it by id, then a sort."""
    ids = np.asarray(ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    k = min(k, len(ids))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    unnumbered = np.isnan(scores)
    if unnumbered.any():  # a damaged input: a score that is not a number ranks below every number
        order = np.lexsort((ids, -np.where(unnumbered, 0.0, scores), unnumbered))[:k]
        return ids[order], scores[order]
    if k < len(ids):
        # argpartition leaves an arbitrary few of the chunks tied with the k-th best; take the lowest
        # ids among them, so the top k does not depend on the order the candidates came in
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)
        if len(above) + len(tied) > k:
            tied = tied[np.argsort(ids[tied], kind="stable")[: k - len(above)]]
        top = np.concatenate((above, tied))
    else:
        top = np.arange(len(ids))
    order = top[np.lexsort((ids[top], -scores[top]))]
    return ids[order], scores[order]
