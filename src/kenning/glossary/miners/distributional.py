"""The distributional miner (`distributional`): words used in the same contexts.

Each word's contexts are the words one and two positions left and right, weighted by positive PMI;
two words are proposed when each is the other's nearest neighbour with a cosine of at least 0.38, they
are never coordinated ("X and Y", "X or Y": how siblings like "mother" / "father" show themselves)
and they are not written side by side as one phrase ("vice president").
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kenning.analysis.stopwords import ENGLISH_QUERY_STOPWORDS
from kenning.glossary.miners.corpus import Corpus, Suggestion

_COORD_WORDS = frozenset(["and", "or", "nor"])


def mine_distributional(
    corpus: Corpus,
    min_count: int = 20,
    max_targets: int = 3000,
    max_contexts: int = 2000,
    min_cosine: float = 0.38,
) -> list[Suggestion]:
    """Mutual nearest neighbours by positive-PMI context vectors, never coordinated in the text."""
    seq, term_ids, forms, fragments = corpus.term_sequence()
    if not len(seq):
        return []
    n_terms = len(term_ids)
    # "X and Y", "X or Y", "X nor Y": coordinated words are siblings (mother/father), not synonyms.
    coord_ids = [term_ids[w] for w in _COORD_WORDS if w in term_ids]
    mid = np.isin(seq[1:-1], coord_ids)
    coord_pairs = Counter(
        (min(a, b), max(a, b)) for a, b in zip(seq[:-2][mid].tolist(), seq[2:][mid].tolist(), strict=True)
    )
    freq = np.bincount(seq[seq >= 0], minlength=n_terms)
    names = [""] * n_terms
    for t, i in term_ids.items():
        names[i] = t

    def eligible(i: int) -> bool:
        t = names[i]
        if freq[i] < min_count or len(t) < 3 or not t.isalpha() or t in ENGLISH_QUERY_STOPWORDS:
            return False
        if 2 * fragments[i] >= freq[i]:
            return False
        top = forms[i].most_common(1)[0][0]
        return top not in ENGLISH_QUERY_STOPWORDS and corpus.protected(top) is None

    order = np.argsort(-freq, kind="stable")
    targets = [int(i) for i in order if eligible(int(i))][:max_targets]
    contexts = [int(i) for i in order[:max_contexts]]
    if len(targets) < 2:
        return []
    row_of = np.full(n_terms + 1, -1, dtype=np.int64)
    row_of[targets] = np.arange(len(targets))
    col_of = np.full(n_terms + 1, -1, dtype=np.int64)
    col_of[contexts] = np.arange(len(contexts))
    n_rows, n_cols = len(targets), 2 * len(contexts)
    cells = []
    for d in (1, 2):
        left, right = seq[:-d], seq[d:]
        ok = (left >= 0) & (right >= 0)
        if d == 2:
            ok &= seq[1:-1] >= 0
        left, right = left[ok], right[ok]
        # right word as context of the left word (block 1), left word as context of the right (block 0)
        r, c = row_of[left], col_of[right]
        m = (r >= 0) & (c >= 0)
        cells.append(r[m] * n_cols + len(contexts) + c[m])
        r, c = row_of[right], col_of[left]
        m = (r >= 0) & (c >= 0)
        cells.append(r[m] * n_cols + c[m])
    counts = np.bincount(np.concatenate(cells), minlength=n_rows * n_cols)
    mat = counts.reshape(n_rows, n_cols).astype(np.float32)
    total = mat.sum()
    if total == 0:
        return []
    col = mat.sum(axis=0) ** 0.75
    col /= col.sum()
    row = mat.sum(axis=1, keepdims=True) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log((mat / total) / (row * col[None, :]))
    pmi[~np.isfinite(pmi)] = 0
    np.maximum(pmi, 0, out=pmi)
    norms = np.linalg.norm(pmi, axis=1, keepdims=True)
    norms[norms == 0] = 1
    vec = pmi / norms
    sims = vec @ vec.T
    np.fill_diagonal(sims, -1)
    best = sims.argmax(axis=1)
    out = []
    for a in range(n_rows):
        b = int(best[a])
        if b <= a or int(best[b]) != a or sims[a, b] < min_cosine:
            continue
        ta, tb = targets[a], targets[b]
        if coord_pairs[(ta, tb) if ta < tb else (tb, ta)]:
            continue
        fa, fb = int(freq[ta]), int(freq[tb])
        # Words written side by side ("vice president") are parts of one phrase, not alternatives.
        side_by_side = int(np.count_nonzero((seq[:-1] == ta) & (seq[1:] == tb))) + int(
            np.count_nonzero((seq[:-1] == tb) & (seq[1:] == ta))
        )
        if side_by_side > max(2, 0.02 * min(fa, fb)):
            continue
        wa, wb = forms[ta].most_common(1)[0][0], forms[tb].most_common(1)[0][0]
        canonical, alias = (wa, wb) if fa >= fb else (wb, wa)
        examples = corpus.examples_of(alias, canonical)
        cos = float(sims[a, b])
        out.append(
            Suggestion(
                canonical=canonical,
                alias=alias,
                kind="distributional",
                score=0.3 + 0.4 * cos,
                counts={"canonical": max(fa, fb), "alias": min(fa, fb), "cosine": round(cos, 3)},
                examples=examples,
                note=f"each is the other's nearest neighbour by context (cosine {cos:.2f}); "
                'not coordinated ("X and Y") and not a phrase',
            )
        )
    return out
