"""What a search works with: the index's side (SearchContext) and the query's (QueryState).

Each stage of kenning.search.pipeline reads fields that earlier stages filled and fills its own, so
the whole data flow of one search is this one object, inspectable at any point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from pyroaring import BitMap

from kenning.lexical.bm25 import ScoringClause
from kenning.lexical.pruning import PrunedTop
from kenning.query.filters import Filters
from kenning.query.parser import ParsedQuery
from kenning.query.plan import QueryPlan
from kenning.search.notices import Notice
from kenning.search.relax import Relaxation
from kenning.search.request import SearchRequest
from kenning.search.results import Funnel, Hit
from kenning.signals.base import Channel, SignalQuery

if TYPE_CHECKING:  # what the index builds; the stages only read it
    from kenning.analysis.analyzer import Analyzer
    from kenning.entities.graph import EntityGraph
    from kenning.glossary.glossary import Glossary
    from kenning.lexical.view import LexicalView
    from kenning.models.rerankers import Reranker
    from kenning.query.spelling import Speller
    from kenning.signals.dense import DenseView
    from kenning.signals.substring import SubstringView, TrigramSubstrings
    from kenning.store.protocols import Store
    from kenning.store.records import ChunkHead


@dataclass
class SearchContext:
    """What the stages need besides the query: the snapshot view, the store and helpers, each built
    by the index (kenning.api.index) for this search."""

    view: LexicalView  # the committed generation the whole search reads
    store: Store
    analyzer: Analyzer
    glossary: Glossary | None = None  # None when the index's glossary is empty
    speller: Speller | None = None  # only when the request spells or wants full detail
    resolve_filters: Callable[[Filters], BitMap] | None = None  # cached by the index
    dense: DenseView | None = None  # this generation's vectors, when the search uses them
    embed_query: Callable[[str], np.ndarray] | None = None  # text -> unit vector, the index's model
    substring: Callable[[], SubstringView | TrigramSubstrings] | None = None  # built on first use
    graph: Callable[[], EntityGraph] | None = None  # built on first use
    reranker: Reranker | None = None  # the request's reranker, built by the index
    heads: dict[int, ChunkHead] | None = None  # chunk heads already read by this search


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
    notices: list[Notice] = field(default_factory=list)  # any stage: what the user should know (a fault met)
