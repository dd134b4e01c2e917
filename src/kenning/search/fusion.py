"""Fusion: one ranking from independent channels (lexical BM25, dense cosine, substring).

Modes:
- rrf:    sum over channels of w_c / (k + rank_c), ranks 1-based within each channel's top `depth`
          (a chunk absent from a channel gets nothing from it).
- norm:   each channel's raw scores min-max normalised to [0, 1] over the candidate pool (the union of
          every channel's top `depth`), then a weighted sum. Every candidate's score in every channel is
          known (lexical and cosine are computed for the whole pool), so no guess fills a gap.
- blend:  Lume's line: bm25 * (1 + alpha * cosine + beta * graph), where beta is the graph signal's
          weight (w_graph) and graph its normalised entity mass; a chunk with no lexical match is
          admitted with cosine + beta * graph, so semantic-only hits rank below lexical ones.
- blend_norm: Lume's normalised form, bm25 / max(bm25) + alpha * cosine + beta * graph: all three on
          [0, 1], so strong semantic or graph evidence can overtake a lexical match.
- rerank: luplo's rule: vectors only reorder the lexical candidates, by cosine; they never add any,
          and an empty lexical result stays empty.
- zscore: (the default) each channel's raw score becomes its distance from what an unremarkable
          chunk scores for this query, in standard deviations: z = (s - mean) / std, where the mean and
          std come from the channel's background (lexical: every chunk holding a query word; dense: the
          cosine over a fixed sample of the corpus). Then a weighted sum. This is how the fusion adapts
          per query: a channel whose best chunks stand far out of its background (a peaked lexical
          match for a pasted sentence or a rare term; a dense neighbour far closer than the rest) gets
          the larger say, and a channel with a flat, undistinguished top list gets little, whatever
          the collection. Min-max normalisation, by contrast, stretches any top list to [0, 1], so a
          flat channel's noise counts as much as another channel's clear signal.

After a zscore, norm or rrf fusion, pseudo-relevance feedback (on by default) runs a second pass: see
kenning.search.feedback.

The defaults (zscore, lexical : dense = 1 : 3, feedback from the top 2 chunks with 20 weighted terms at
0.2) were chosen on the six dev sets and checked leave-one-set-out; docs/scoring.md explains the
choice and docs/benchmarks.md has the figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kenning import signals
from kenning.common.numbers import check_number
from kenning.signals.base import Channel

FUSIONS = ("rrf", "norm", "blend", "blend_norm", "rerank", "zscore")
FEEDBACK_FUSIONS = ("zscore", "norm", "rrf")  # the fusions a feedback pass follows


_FIXED = {  # the fusion knobs of the fusion itself; signal weights and knobs come from the registry
    "mode": "zscore",
    "depth": 100,
    "rrf_k": 60.0,
    "alpha": 0.5,
    "min_similarity": 0.3,  # a chunk found only by vectors needs at least this cosine
    "feedback_k": 2,  # pseudo-relevance feedback from the first pass's top chunks (0 = off)
    "feedback_beta": 1.0,  # Rocchio weight of their mean vector
    "feedback_gamma": 0.2,  # weight of their expansion terms in the lexical channel
    "feedback_terms": 20,
}
INT_KNOBS = ("depth", "feedback_k", "feedback_terms")


@dataclass(frozen=True, init=False)
class FusionParams:
    """Every fusion knob, with defaults chosen on the dev sets (see the module docstring), plus every
    registered signal's weight (`w_<signal>`) and knobs, given as keywords:
    FusionParams(w_dense=2, depth=50)."""

    mode: str
    depth: int
    rrf_k: float
    alpha: float
    min_similarity: float
    feedback_k: int
    feedback_beta: float
    feedback_gamma: float
    feedback_terms: int
    weights: tuple[tuple[str, float], ...]  # (signal, weight) for every signal registered
    knobs: tuple[tuple[str, float], ...]  # (knob, value) for every signal's own knob

    def __init__(self, **settings: Any) -> None:
        registry = signals.registered()
        weights = {name: float(s.weight) for name, s in registry.items()}
        knobs = {k.name: k.default for s in registry.values() for k in getattr(s, "knobs", ())}
        fixed = dict(_FIXED)
        for key, value in settings.items():
            if key in ("weights", "knobs"):  # dataclasses.replace hands these back as pairs
                (weights if key == "weights" else knobs).update(dict(value))
            elif key in fixed:
                fixed[key] = value
            elif key.startswith("w_") and key[2:] in weights:
                weights[key[2:]] = float(value)
            elif key in knobs:
                knobs[key] = value
            else:
                known = [*fixed, *(f"w_{n}" for n in weights), *knobs]
                raise ValueError(f"unknown fusion setting {key!r}: choose from {', '.join(known)}")
        for key, value in fixed.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "weights", tuple(weights.items()))
        object.__setattr__(self, "knobs", tuple(knobs.items()))
        self._check()

    def _check(self) -> None:
        if self.mode not in FUSIONS:
            raise ValueError(f"unknown fusion {self.mode!r}: choose one of {', '.join(FUSIONS)}")
        check_number("depth", self.depth, 1, 10_000_000, integer=True)
        check_number("rrf_k", self.rrf_k, 0, 1_000_000, low_open=True)
        check_number("min_similarity", self.min_similarity, -1, 1)
        check_number("feedback_k", self.feedback_k, 0, 1000, integer=True)
        check_number("feedback_terms", self.feedback_terms, 0, 1000, integer=True)
        named = [("alpha", self.alpha), ("feedback_beta", self.feedback_beta)]
        named += [("feedback_gamma", self.feedback_gamma), *((f"w_{n}", w) for n, w in self.weights)]
        for name, value in named:
            check_number(name, value, 0, 1000)
        minimum = {k.name: k.minimum for s in signals.registered().values() for k in getattr(s, "knobs", ())}
        for name, value in self.knobs:
            check_number(name, value, -1e9 if minimum.get(name) is None else minimum[name], 1e9)

    def weight(self, channel: str) -> float:
        """A signal's weight; one registered after these params were made has its own default."""
        for name, w in self.weights:
            if name == channel:
                return w
        registry = signals.registered()
        return float(registry[channel].weight) if channel in registry else 0.0

    def knob(self, name: str, default: float | None = None) -> float | None:
        """A registered signal's knob by name (`default` when not given)."""
        return dict(self.knobs).get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """Every knob by name, each signal's weight as `w_<name>`."""
        out = {key: getattr(self, key) for key in _FIXED}
        out.update({f"w_{name}": w for name, w in self.weights})
        out.update(dict(self.knobs))
        return out


def fusion_knobs() -> dict[str, tuple[object, str]]:
    """Every fusion setting's default and help, fixed knobs first, then the registered signals'."""
    help_text = {
        "depth": "results each channel contributes to the fusion",
        "rrf_k": "RRF smoothing constant",
        "alpha": "blend: weight of cosine similarity",
        "min_similarity": "cosine a chunk found only by vectors must reach",
        "feedback_k": "pseudo-relevance feedback: top chunks of the first pass to learn from (0 = off)",
        "feedback_beta": "feedback: weight of their mean vector added to the query's",
        "feedback_gamma": "feedback: weight of their expansion terms in the lexical channel",
        "feedback_terms": "feedback: how many expansion terms",
    }
    out = {key: (default, help_text[key]) for key, default in _FIXED.items() if key != "mode"}
    out.update({k.name: (k.default, k.help) for k in signals.signal_knobs()})
    return out


@dataclass
class Fused:
    ids: list[int]
    scores: list[float]
    explain: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)  # chunk -> channel -> parts
    # per channel, what this query's fusion made of it: weight, normalisation, and its share of the top
    weights: dict[str, dict[str, Any]] = field(default_factory=dict)


def _sorted(scores: dict[int, float]) -> tuple[list[int], list[float]]:
    order = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [c for c, _ in order], [s for _, s in order]


def _score_of(channel: Channel, ids: np.ndarray) -> np.ndarray:
    """A channel's raw scores for `ids`, chunks beyond its list included (every fusion but rrf asks)."""
    if channel.score_of is None:
        raise TypeError(f"the {channel.name} channel has no score_of, which this fusion needs")
    return channel.score_of(ids)


def fuse(channels: Mapping[str, Channel | None], params: FusionParams) -> Fused:
    """Combine channels into one ranked list, recording each channel's part for every chunk."""
    lists = {name: ch for name, ch in channels.items() if ch is not None}
    ranks = {name: ch.ranks() for name, ch in lists.items()}
    explain: dict[int, dict[str, dict[str, Any]]] = {}

    def note(cid: int, name: str, raw: float, part: float) -> None:
        explain.setdefault(cid, {})[name] = {"score": raw, "rank": ranks[name].get(cid), "contribution": part}

    if params.mode == "rrf":
        fused: dict[int, float] = {}
        for name, ch in lists.items():
            w = params.weight(name)
            for r, (cid, raw) in enumerate(
                zip(ch.ids[: params.depth].tolist(), ch.scores.tolist(), strict=False), 1
            ):
                part = w / (params.rrf_k + r)
                fused[cid] = fused.get(cid, 0.0) + part
                note(cid, name, raw, part)
        ids, scores = _sorted(fused)
        return Fused(ids, scores, explain)

    if params.mode == "rerank":
        lexical = lists.get("lexical")
        dense = lists.get("dense")
        if lexical is None or not len(lexical.ids):
            return Fused([], [], {})
        pool = lexical.ids[: params.depth]
        cos = _score_of(dense, pool) if dense is not None else np.zeros(len(pool))
        fused = {}
        for cid, raw, c in zip(pool.tolist(), lexical.scores.tolist(), cos.tolist(), strict=False):
            fused[cid] = c
            note(cid, "lexical", raw, 0.0)
            explain[cid]["dense"] = {"score": c, "rank": None, "contribution": c}
        ids, scores = _sorted(fused)
        return Fused(ids, scores, explain)

    # norm and blend work on the pool: every channel's top `depth`, each scored in every channel
    pool = np.array(
        sorted({int(c) for ch in lists.values() for c in ch.ids[: params.depth].tolist()}), dtype=np.int64
    )
    if not len(pool):
        return Fused([], [], {})
    raw = {name: np.asarray(_score_of(ch, pool), dtype=np.float64) for name, ch in lists.items()}

    if params.mode in ("blend", "blend_norm"):
        return _blend(pool, raw, params, note, explain)

    total = np.zeros(len(pool))
    parts: dict[str, np.ndarray] = {}
    how: dict[str, dict[str, Any]] = {}
    for name, values in raw.items():
        normalised, how[name] = _normalise(values, lists[name], params.mode)
        parts[name] = params.weight(name) * normalised
        total += parts[name]
        for i, cid in enumerate(pool.tolist()):
            note(cid, name, float(values[i]), float(parts[name][i]))
    ids, scores = _sorted(dict(zip(pool.tolist(), total.tolist(), strict=True)))
    return Fused(ids, scores, explain, _weights(params, how, parts, total))


def _blend(
    pool: np.ndarray,
    raw: dict[str, np.ndarray],
    params: FusionParams,
    note: Callable[[int, str, float, float], None],
    explain: dict[int, dict[str, dict[str, Any]]],
) -> Fused:
    """Lume's line, multiplicative (blend) or on one [0, 1] scale (blend_norm); each channel's part is
    what it added to the chunk's score."""
    zeros = np.zeros(len(pool))
    bm25 = raw.get("lexical", zeros)
    sem = np.clip(raw.get("dense", zeros), 0.0, None)
    graph = np.clip(raw.get("graph", zeros), 0.0, None)
    alpha, beta = params.alpha, params.weight("graph")
    if params.mode == "blend_norm":
        top = float(bm25.max()) if len(bm25) else 0.0
        lexical = bm25 / top if top > 0 else zeros
        parts = {"lexical": lexical, "dense": alpha * sem, "graph": beta * graph}
    else:
        matched = bm25 > 0
        lift = np.where(matched, bm25, 1.0)  # without a lexical match: cosine + beta * graph
        parts = {"lexical": bm25, "dense": lift * alpha * sem, "graph": lift * beta * graph}
        parts["dense"] = np.where(matched, parts["dense"], sem)
    scores = sum(parts.values())
    for name, part in parts.items():
        if name in raw:
            values = {"lexical": bm25, "dense": sem, "graph": graph}[name]
            for i, cid in enumerate(pool.tolist()):
                note(cid, name, float(values[i]), float(part[i]))
    ids, fused_scores = _sorted(dict(zip(pool.tolist(), scores.tolist(), strict=True)))
    return Fused(ids, fused_scores, explain)


def _normalise(values: np.ndarray, channel: Channel, mode: str) -> tuple[np.ndarray, dict[str, Any]]:
    """A channel's raw scores over the pool on a common scale, and how they were put there."""
    if mode == "zscore":
        mean, std = channel.background or (float(values.mean()), float(values.std()))
        z = (values - mean) / std if std > 0 else np.zeros(len(values))
        return z, {"normalise": "zscore", "background_mean": mean, "background_std": std}
    lo, hi = float(values.min()), float(values.max())
    if hi > lo:
        return (values - lo) / (hi - lo), {"normalise": "minmax", "min": lo, "max": hi}
    # one chunk, or all tied: full marks if the channel found them at all
    return np.full(len(values), 1.0 if hi > 0 else 0.0), {"normalise": "minmax", "min": lo, "max": hi}


def _weights(
    params: FusionParams,
    how: dict[str, dict[str, Any]],
    parts: dict[str, np.ndarray],
    total: np.ndarray,
    top: int = 10,
) -> dict[str, dict[str, Any]]:
    """Per channel: its weight, how its scores were normalised, how far its best chunk stands above
    its background (zscore), and its share of the fused score of the top results: the per-query
    weighting --explain shows."""
    best = np.argsort(-total, kind="stable")[:top]
    positive = {name: float(np.clip(part[best], 0, None).sum()) for name, part in parts.items()}
    whole = sum(positive.values()) or 1.0
    out = {}
    for name, part in parts.items():
        entry = {"weight": params.weight(name), **how[name], "share_of_top": positive[name] / whole}
        if how[name]["normalise"] == "zscore" and params.weight(name) > 0:
            entry["best_z"] = float(part.max() / params.weight(name))
        out[name] = entry
    return out
