"""Exact top-k BM25 without scoring every match: MaxScore in C, or block-max pruning in NumPy.

Both return exactly the exhaustive top k, ties by chunk id, with the same scores to the last bit:
contributions are summed clause by clause in the query's order, as the exhaustive bincount sums them,
and a chunk is skipped only when a bound on its score lies strictly below the k-th best (tests hold
both paths equal to the exhaustive one on random queries).

MaxScore (Turtle & Flood 1995; kenning/kernels/c/scoring.c), over the terms' postings by windows of 1,024
chunk ids (the candidates of a window are gathered term by term, then visited in id order), is what
runs where kenning's C module is built. Terms are ordered by their largest contribution; once
the k-th best score exceeds what a chunk holding only the weakest few terms could reach (their maxima
summed, times the coordination holding them all earns: by their count, or by their idf), those terms
stop supplying candidates and are only looked up, by a galloping search, for chunks the other terms
bring, while those chunks can still reach the k-th best. On a large index a query of common and
rare words then scores a small share of the chunks its terms match.

Block-max pruning (the NumPy path) cuts the chunk-id space into blocks of 2^`BLOCK_BITS` ids. For every
term the index keeps, per block, the largest contribution the term makes to any chunk in it (kept
beside the term's weighted scores, per parameter set). A block's upper bound for a query is the sum of
its terms' block maxima, times the coordination it would get if one chunk held every term present in
the block. The blocks with the largest bounds are scored exactly first; the k-th best score among them
is a threshold no skipped chunk can reach when its block's bound lies below it. Every block at or above
the threshold is then scored exactly, and the rest are skipped (Ding & Suel 2011 apply the same bound
per postings block inside block-max WAND; over numpy arrays, whole id blocks are the unit that
vectorises).

Pruning needs plain clauses (one term each, no per-term or per-clause chunk sets: phrases and
glossary expansions score exhaustively) and per-field saturation (bm25f scores exhaustively), and
pays off only on a large enough index
(`MAXSCORE_FROM_IDS`, the NumPy path `PRUNE_FROM_IDS`); the NumPy path also only when the blocks
left to score hold a small share of the query's postings (`MAX_SCORED_SHARE`). Otherwise the
caller scores exhaustively. Either way the results are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kenning import kernels
from kenning.kernels.topk import top_k

BLOCK_BITS = 4  # blocks of 16 chunk ids
# score by blocks only when the blocks left hold at most this share of the query's postings: gathering
# a scored posting by its block costs more than the exhaustive path's bincount of it
MAX_SCORED_SHARE = 0.4
# below this many chunk ids, one exhaustive pass (a bincount into corpus-sized arrays) costs less
# than block pruning's fixed work, both in the typical and in the slow queries (docs/scoring.md)
PRUNE_FROM_IDS = 100_000
# MaxScore in C has little fixed work and pays from far fewer chunk ids: from this size on it is at
# least as fast as exhaustive scoring on whole warm queries (below it, scoring everything is as fast)
MAXSCORE_FROM_IDS = 10_000
FIRST_BLOCKS = 16  # blocks, besides k, scored for the threshold


@dataclass
class PrunedTop:
    """The exact top k of a pruned evaluation, and what it did."""

    ids: np.ndarray  # int64, best first, ties by id
    scores: np.ndarray
    scored: int  # chunks whose score was computed (the others holding a term were skipped)
    how: str  # the method and what it skipped by, for the funnel


@dataclass
class _Term:
    term: str
    ids: np.ndarray  # sorted chunk ids holding it
    contribution: np.ndarray  # its weighted score in each of those chunks
    held: float  # what holding it counts for in the coordination (1.0: one clause; idf: its idf)
    blocks: np.ndarray  # the id blocks it occurs in, ascending
    block_max: np.ndarray  # its largest contribution in each of them
    block_start: np.ndarray  # where each one's postings begin in `ids` (one more entry: the end)

    def ranges(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) in `ids` of its postings in each wanted block (empty where it has none)."""
        at = np.minimum(np.searchsorted(self.blocks, wanted), len(self.blocks) - 1)
        there = self.blocks[at] == wanted
        lo = np.where(there, self.block_start[at], 0)
        return lo, np.where(there, self.block_start[at + 1], 0)


def prunable(clauses) -> bool:
    """Whether every clause is one plain term (no chunk sets to honour)."""
    return bool(clauses) and all(
        len(c.terms) == 1 and c.docs is None and c.terms[0].docs is None for c in clauses
    )


def pruned_top_k(view, clauses, found, params, allowed, k: int) -> PrunedTop | None:
    """The exact top k by BM25 with coordination, or None when pruning does not apply or would not
    pay (then score exhaustively). `allowed`: a boolean mask over chunk ids (the funnel's survivors)
    or None for all."""
    smallest = MAXSCORE_FROM_IDS if kernels.NATIVE else PRUNE_FROM_IDS
    if k <= 0 or view.max_id + 1 < smallest or not prunable(clauses) or not bounded(params):
        return None
    if kernels.NATIVE:
        return _maxscore(view, clauses, found, params, allowed, k)
    holds = _holds(view, clauses, found, params)
    terms = _terms(view, clauses, found, params, holds, blocks=True)
    present = [t for t in terms if t is not None]
    if not present:
        return None
    coord = _coordination(params, holds)
    n_blocks = int(max(t.blocks[-1] for t in present)) + 1
    occupied = np.concatenate([t.blocks for t in present])
    holding = np.concatenate([np.full(len(t.blocks), t.held) for t in present])
    held = np.bincount(occupied, weights=holding, minlength=n_blocks)
    # (a hair above the exact sums: they are added in another order, and rounding must not make a
    # chunk's score exceed its block's bound)
    bounds = np.bincount(occupied, weights=np.concatenate([t.block_max for t in present]), minlength=n_blocks)
    bounds *= coord(held) * (1.0 + 1e-9)
    # a threshold: the k-th best exact score in the blocks with the largest bounds
    top = min(int((held > 0).sum()), FIRST_BLOCKS + k)
    first = np.sort(np.argpartition(-bounds, top - 1)[:top])
    _, scores = _score_blocks(first, _spans(terms, first), coord, allowed)
    keep = np.flatnonzero((bounds >= _kth(scores, k)) & (held > 0))
    spans = _spans(terms, keep)
    scored = sum(int(lengths.sum()) for _, _, lengths in spans)
    if scored > MAX_SCORED_SHARE * sum(len(t.ids) for t in present):
        return None
    ids, scores = _score_blocks(keep, spans, coord, allowed)
    best_ids, best_scores = top_k(ids, scores, k)
    return PrunedTop(best_ids, best_scores, len(ids), f"{len(keep)} of {len(bounds)} id blocks scored")


def _maxscore(view, clauses, found, params, allowed, k: int) -> PrunedTop | None:
    """MaxScore (Turtle & Flood 1995) in C, by windows of chunk ids: the terms whose largest scores
    together (with the coordination they would earn) cannot reach the k-th best so far stop
    supplying candidates, and are looked up only for chunks the others bring, while those can
    still reach it. Exact.

    The kernel weighs only the postings it visits, from their frequencies and lengths, and bounds a
    term's scores from its largest frequencies (kept in the view's cache) instead of finding its
    maximum: finding it would weigh a common term's postings whole (a hundred thousand or more on a
    large index) for that one number, and keeping weighed scores for later queries would make the
    cache larger without making warm queries faster."""
    holds = _holds(view, clauses, found, params)
    present, held = [], []
    for clause, holding in zip(clauses, holds, strict=True):
        st = clause.terms[0]
        postings = found.get(st.term)
        if postings is None:
            continue
        weight = (params.query_weight(clause.qtf) if clause.qtf != 1 else 1.0) * clause.boost
        if weight < 0:  # (a maximum is then a minimum: the exhaustive path scores it)
            return None
        present.append((st, postings, weight))
        held.append(holding)
    if not present:
        return None
    known = [view.cached_bound(st.term, params, st.field, weight) for st, _, weight in present]
    use_coord = params.coord_floor < 1.0 and len(clauses) > 1
    ids, scores, scored, essential, bounds = kernels.maxscore(
        tuple(postings.ids for _, postings, _ in present),
        tuple(
            kernels.weighed(
                postings.tf_title, postings.tf_body, view.postings_idf(postings), weight, st.field
            )
            for st, postings, weight in present
        ),
        known,
        len(clauses),
        params.coord_floor if use_coord else 1.0,
        k,
        allowed,
        kernels.weighing_of(view.title_len, view.body_len, view.avg_title_len, view.avg_body_len, params),
        (held, sum(holds)),
    )
    for (st, _, weight), bound, new in zip(present, known, bounds, strict=True):
        if bound is None:
            view.keep_bound(st.term, params, st.field, weight, new)
    how = f"MaxScore: candidates from {essential} of {len(present)} terms at the end"
    return PrunedTop(ids, scores, scored, how)


def _spans(terms, blocks: np.ndarray) -> list:
    """(term, where its postings in each block start, how many there are) for the query's terms in
    order, over the given blocks."""
    out = []
    for term in terms:
        if term is not None:
            lo, hi = term.ranges(blocks)
            out.append((term, lo, hi - lo))
    return out


def _score_blocks(blocks: np.ndarray, spans, coord, allowed):
    """Exact scores of every chunk (allowed) holding a query term in the given blocks (ascending).

    The blocks' ids are numbered compactly (block's place in `blocks` x BLOCK + offset in the block),
    so one bincount over the terms' postings there, in the query's order, sums each chunk's
    contributions exactly as the exhaustive path does, without sorting."""
    size = len(blocks) << BLOCK_BITS
    places = np.arange(len(blocks), dtype=np.int64) << BLOCK_BITS
    local_parts, value_parts, held_parts = [], [], []
    for term, lo, lengths in spans:
        count = int(lengths.sum())
        if not count:
            continue
        at = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(count)
        local_parts.append(np.repeat(places, lengths) + (term.ids[at] & ((1 << BLOCK_BITS) - 1)))
        value_parts.append(term.contribution[at])
        held_parts.append(np.full(count, term.held))
    if not local_parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    local = np.concatenate(local_parts)
    sums = np.bincount(local, weights=np.concatenate(value_parts), minlength=size)
    matched = np.bincount(local, minlength=size)
    holding = np.bincount(local, weights=np.concatenate(held_parts), minlength=size)
    there = np.flatnonzero(matched)
    ids = (blocks[there >> BLOCK_BITS] << BLOCK_BITS) + (there & ((1 << BLOCK_BITS) - 1))
    scores = sums[there] * coord(holding[there])
    if allowed is not None:
        inside = (ids < len(allowed)) & allowed[np.minimum(ids, len(allowed) - 1)]
        ids, scores = ids[inside], scores[inside]
    return ids, scores


def bounded(params) -> bool:
    """Whether these knobs are the ones the pruning bounds and kernels are written for: per-field
    saturation (bm25f scores exhaustively), with either coordination."""
    return params.variant != "bm25f"


def score_ids(view, clauses, found, params, ids: np.ndarray) -> np.ndarray:
    """Exact BM25 with coordination for the given chunk ids only (plain clauses), equal to what the
    exhaustive path computes for them."""
    ids = np.asarray(ids, dtype=np.int64)
    if not bounded(params):
        return view.score(clauses, found, params)[ids] if len(ids) else np.zeros(0)
    holds = _holds(view, clauses, found, params)
    return _score_ids(ids, _terms(view, clauses, found, params, holds), _coordination(params, holds))


def _terms(view, clauses, found, params, holds: list[float], blocks: bool = False) -> list[_Term | None]:
    """Each clause's term with its weighted contributions and its share of the coordination
    (`holds`), and (`blocks`) their block maxima (None: no postings)."""
    out: list[_Term | None] = []
    for clause, holding in zip(clauses, holds, strict=True):
        st = clause.terms[0]
        postings = found.get(st.term)
        if postings is None:
            out.append(None)
            continue
        weight = (params.query_weight(clause.qtf) if clause.qtf != 1 else 1.0) * clause.boost
        contribution = view.weighted(st.term, postings, params, st.field)
        occupied = block_max = block_start = None
        if blocks:
            occupied, block_max, block_start = view.block_bounds(st.term, postings, params, st.field)
        if weight != 1.0:
            contribution = contribution * weight
            block_max = None if block_max is None else block_max * weight
        out.append(_Term(st.term, postings.ids, contribution, holding, occupied, block_max, block_start))
    return out


def _holds(view, clauses, found, params) -> list[float]:
    """What holding each clause counts for in the coordination: one clause each, or its idf."""
    if params.coordination == "idf":
        return view.clause_weights(clauses, found)
    return [1.0] * len(clauses)


def _coordination(params, holds: list[float]):
    """what a chunk holds (the summed `held` of its clauses) -> the coordination factor, the
    exhaustive path's expression (a sum of ones is the clause count exactly)."""
    use = params.coord_floor < 1.0 and len(holds) > 1
    whole = sum(holds)

    def coord(held):
        return params.coord_floor + (1.0 - params.coord_floor) * (held / whole) if use else 1.0

    return coord


def _score_ids(ids: np.ndarray, terms: list[_Term | None], coord) -> np.ndarray:
    """Scores of `ids`, summed clause by clause in the query's order (as the exhaustive bincount
    sums them), then coordination."""
    scores = np.zeros(len(ids))
    held = np.zeros(len(ids))
    if not len(ids):
        return scores
    for term in terms:
        if term is None:
            continue
        at = np.minimum(np.searchsorted(term.ids, ids), len(term.ids) - 1)
        hit = term.ids[at] == ids
        scores[hit] += term.contribution[at[hit]]
        held[hit] += term.held
    return scores * coord(held)


def _kth(scores: np.ndarray, k: int) -> float:
    """The k-th largest score, or -inf when there are fewer than k: a lower bound on the k-th best
    score overall, since these are exact scores of real chunks."""
    if len(scores) < k:
        return -np.inf
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])
