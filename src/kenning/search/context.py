"""What a search works with: the index's side (SearchContext) and the query's (QueryState).

Each stage of kenning.search.pipeline reads fields that earlier stages filled and fills its own, so
the whole data flow of one search is this one object, inspectable at any point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap

from kenning.lexical.bm25 import ScoringClause
from kenning.lexical.pruning import PrunedTop
from kenning.query.parser import ParsedQuery
from kenning.query.plan import QueryPlan
from kenning.search.relax import Relaxation
from kenning.search.request import SearchRequest
from kenning.search.results import Funnel, Hit
from kenning.signals.base import Channel, SignalQuery


@dataclass
class SearchContext:
    """What the stages need besides the query: the snapshot view, the store and helpers."""

    view: object  # the LexicalView of this generation
    store: object
    analyzer: object
    glossary: object | None = None
    speller: object | None = None
    resolve_filters: object | None = None  # Filters -> BitMap, cached by the index
    dense: object | None = None  # DenseView of this generation, when the index has vectors
    embed_query: object | None = None  # text -> unit vector, with the index's embedder
    substring: object | None = None  # () -> SubstringView of this generation (built on first use)
    graph: object | None = None  # () -> EntityGraph of this generation (built on first use)
    reranker: object | None = None  # the request's reranker, built by the index
    heads: dict | None = None  # chunk heads already read by this search


@dataclass
class QueryState:
    """One search's data, stage by stage (the stage that fills each field is named beside it)."""

    request: SearchRequest
    mode: str  # lexical, dense or hybrid: the request's mode as the index resolved it
    parsed: ParsedQuery  # parse
    funnel: Funnel
    plan: QueryPlan | None = None  # analyze
    found: dict = field(default_factory=dict)  # gather: postings of every planned term
    candidates: BitMap = field(default_factory=BitMap)  # gather
    survivors: BitMap = field(default_factory=BitMap)  # constrain
    relaxation: Relaxation | None = None  # constrain
    scoring: list[ScoringClause] = field(default_factory=list)  # score
    lexical: np.ndarray = field(default_factory=lambda: np.zeros(0))  # score: BM25 per chunk id
    pruned: PrunedTop | None = None  # score, lexical mode: the exact top `pool` without every score
    signal_query: SignalQuery | None = None  # channels
    channels: dict[str, Channel] = field(default_factory=dict)  # channels
    ranked: list[tuple[int, float]] = field(default_factory=list)  # rank, fuse, feedback, ... refine
    parts: dict[int, dict] = field(default_factory=dict)  # fuse: each hit's per-channel parts
    verbatim: BitMap = field(default_factory=BitMap)  # verbatim
    kept: list | None = None  # post: the candidates left, with what each stage did, for the reranker
    adjustments: dict[int, list[dict]] = field(default_factory=dict)  # post, rerank
    dropped: list[dict] = field(default_factory=list)  # post
    hits: list[Hit] = field(default_factory=list)  # present
    pool: int = 0  # how many ranked candidates the later stages need (kenning.search.refine.pool_for)
    notices: list[str] = field(default_factory=list)  # any stage: what the user should know (a fault met)
