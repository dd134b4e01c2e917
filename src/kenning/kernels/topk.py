"""Top-k selection, the one way kenning picks the best k of a scored set: ties broken by id, so every
ranking is stable across runs and machines."""

from __future__ import annotations

import numpy as np


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (ids, scores), best first, ties by ascending id; int64 ids, float64 scores."""
    ids = np.asarray(ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    k = min(k, len(ids))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
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
