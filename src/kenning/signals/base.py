"""Signals as plugins: the protocol each ranking signal implements, and the registry of them.

A signal is an independent way to score chunks for a query: lexical BM25, dense cosine, substring
matches, later the entity graph. Each one, for a query, gives a `Channel`: its ranked candidates and a
way to score any other chunk, plus what an unremarkable chunk scores (its background, for zscore
fusion). The fusion weights (`w_<name>`), the knobs (flags, kenning.toml keys, environment), the
`--explain` lines and the help text are all derived from this registry, so a new signal is one module
that calls `register` and nothing else.

Signals sit below the search package that calls them: they get the search context (`ctx`: the
lexical view, the store, the dense view and query embedder; see kenning.search.context) and a
SignalQuery, and import nothing from kenning.search.

A signal may also take part in pseudo-relevance feedback (`feedback`: a second channel learned from
the first pass's top chunks) and explain its score for one chunk (`explain`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from kenning.kernels.topk import top_k
from kenning.lexical.bm25 import Bm25Params

if TYPE_CHECKING:  # for the annotations only: signals import nothing from kenning.search when run
    from kenning.search.context import SearchContext


@dataclass
class Channel:
    """One signal's ranked list (best first) and a way to score any chunk in it."""

    name: str
    ids: np.ndarray
    scores: np.ndarray
    # ids -> raw scores, for chunks beyond the list (every fusion but rrf needs it)
    score_of: Callable[[np.ndarray], np.ndarray] | None = None
    background: tuple[float, float] | None = None  # (mean, std) of an unremarkable chunk's score
    info: dict[str, Any] = field(default_factory=dict)  # what the funnel reports for this channel

    def ranks(self) -> dict[int, int]:
        return {int(c): r for r, c in enumerate(self.ids.tolist(), 1)}


@dataclass
class SignalQuery:
    """What a signal is told about one query, after the lexical stage has run."""

    text: str  # what an embedder reads: the question as asked
    words: list[str]  # the query's positive words and phrases, as typed
    allowed: np.ndarray  # mask over chunk ids: what any channel may return (filters, constraints)
    holds_word: np.ndarray  # mask over chunk ids: the lexical survivors (they hold a query word)
    lexical: np.ndarray  # BM25 score per chunk id (0: no query term)
    depth: int  # how many candidates each channel contributes
    min_similarity: float  # the cosine a chunk found only by vectors must reach
    knobs: Mapping[str, float] = field(default_factory=dict)  # every signal knob's value
    bm25: Bm25Params = field(default_factory=Bm25Params)  # the request's lexical knobs
    vector: np.ndarray | None = None  # the query's embedding, once a signal has made it
    # ids -> cosine with the query as asked (None without vectors)
    cosine: Callable[[np.ndarray], np.ndarray] | None = None
    # what a signal worked out for this query, for its explain
    memo: dict[str, Any] = field(default_factory=dict)

    def found(self, ids: np.ndarray, known: np.ndarray | None = None) -> np.ndarray:
        """True for the chunks the query itself found: they hold a query word, or their cosine with
        the query as asked is at least min_similarity (`known` cosines aligned with `ids`, else
        computed for the chunks without a query word). Feedback reorders evidence; it never admits a
        chunk this rule refuses."""
        ids = np.asarray(ids, dtype=np.int64)
        found = np.zeros(len(ids), dtype=bool)
        inside = ids < len(self.holds_word)
        found[inside] = self.holds_word[ids[inside]]
        rest = np.flatnonzero(~found)
        if len(rest):
            if known is not None:
                found[rest] = np.asarray(known)[rest] >= self.min_similarity
            elif self.cosine is not None:
                found[rest] = self.cosine(ids[rest]) >= self.min_similarity
        return found

    def best_found(self, ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """top_k of the chunks `found` admits, the same k as filtering them all first, but `found` (a
        cosine each for chunks without a query word) runs only over as many of the best as it takes:
        the best m in top_k's order are a prefix of the best n, so each round checks only the new ones."""
        ids = np.asarray(ids, dtype=np.int64)
        kept_ids: list[np.ndarray] = []
        kept_scores: list[np.ndarray] = []
        checked, take = 0, max(4 * k, 64)
        while checked < len(ids) and sum(map(len, kept_ids)) < k:
            take = min(len(ids), take)
            best_ids, best_scores = top_k(ids, scores, take)
            new_ids, new_scores = best_ids[checked:], best_scores[checked:]
            ok = self.found(new_ids)
            kept_ids.append(new_ids[ok])
            kept_scores.append(new_scores[ok])
            checked, take = take, take * 4
        if not kept_ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(kept_ids)[:k], np.concatenate(kept_scores)[:k]


@dataclass
class Learned:
    """What pseudo-relevance feedback learned from the first pass's top chunks."""

    top: list[int]  # the chunks it learned from
    vector: np.ndarray | None  # the query vector moved towards their mean (Rocchio)
    terms: list[tuple[str, float]]  # their most distinctive terms, with weights, best first
    gamma: float  # weight of those terms against the query's own


@dataclass(frozen=True)
class Knob:
    """A setting a signal declares: it becomes `--NAME` (dashes for underscores), the kenning.toml
    [search] key NAME, and KENNING_NAME."""

    name: str
    default: float
    help: str
    kind: type = float
    minimum: float | None = 0.0


@runtime_checkable
class Signal(Protocol):
    name: str  # the channel's name, and its weight's: w_<name>
    weight: float  # default weight in fusion (0: off unless asked for)
    help: str  # one line for the help text of its weight

    @property
    def knobs(self) -> tuple[Knob, ...]:
        """Its own settings besides its weight, as a class attribute (`knobs = ()` when none)."""
        return ()

    def channel(self, ctx: SearchContext, query: SignalQuery) -> Channel | None:
        """This query's channel over the allowed chunks (query.allowed), None when the signal has
        nothing to say (no vectors, no words to look for)."""
        ...


def feedback_channel(
    signal: Signal, ctx: SearchContext, query: SignalQuery, learned: Learned
) -> Channel | None:
    """The signal's second-pass channel after feedback, or None to keep its first one."""
    hook: Callable[[SearchContext, SignalQuery, Learned], Channel | None] | None
    hook = getattr(signal, "feedback", None)
    return hook(ctx, query, learned) if hook is not None else None


def explain_signal(
    signal: Signal, ctx: SearchContext, query: SignalQuery, chunk_id: int
) -> dict[str, Any] | None:
    """What the signal says about one chunk's score, when it has something to say."""
    hook: Callable[[SearchContext, SignalQuery, int], dict[str, Any] | None] | None
    hook = getattr(signal, "explain", None)
    return hook(ctx, query, chunk_id) if hook is not None else None


_REGISTRY: dict[str, Signal] = {}
_VERSION = [0]  # bumped on every change, so values derived from the registry can be cached


def register(signal: Signal) -> Signal:
    """Add a signal (or replace one of the same name); returns it, so it can decorate an instance."""
    if not signal.name.isidentifier():
        raise ValueError(f"signal name {signal.name!r} must be an identifier (it names w_{signal.name})")
    _REGISTRY[signal.name] = signal
    _VERSION[0] += 1
    return signal


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)
    _VERSION[0] += 1


def version() -> int:
    """Changes whenever a signal is registered or removed."""
    return _VERSION[0]


def registered() -> dict[str, Signal]:
    """Every registered signal, by name, in registration order."""
    return dict(_REGISTRY)


def get(name: str) -> Signal:
    return _REGISTRY[name]


def default_weights() -> dict[str, float]:
    return {name: s.weight for name, s in _REGISTRY.items()}


def signal_knobs() -> list[Knob]:
    """The weight of every signal, then each signal's own knobs."""
    weights = [
        Knob(f"w_{n}", s.weight, f"weight of the {n} signal in fusion: {s.help}")
        for n, s in _REGISTRY.items()
    ]
    return weights + [k for s in _REGISTRY.values() for k in getattr(s, "knobs", ())]
