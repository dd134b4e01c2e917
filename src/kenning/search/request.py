"""SearchRequest: one search, fully specified. Every surface (CLI, Python API, MCP, HTTP) builds it
with kenning.api.request.build_request, so they share one set of defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from kenning.common.numbers import check_number
from kenning.lexical.bm25 import Bm25Params
from kenning.models.rerankers import parse_rerank_spec
from kenning.query.filters import Filters
from kenning.query.parser import SYNTAXES, ParsedQuery
from kenning.search.fusion import FusionParams
from kenning.search.postprocess import PostprocessOptions

MODES = ("auto", "lexical", "dense", "hybrid")  # auto: hybrid when the index has vectors
DETAILS = ("full", "heads")  # heads: ids, titles and locations only (what eval and benchmarks read)

MAX_LIMIT = 100_000  # results a search may be asked for; more is a mistake, not a need


@dataclass(frozen=True)
class SearchRequest:
    """One search, every setting given: the query, how many hits, the mode, the query syntax, the
    scoring knobs (`params`, `fusion`), filters and post-fusion options. Make it with
    `build_request` (or pass keywords to `Index.search`): unset values take the same defaults on
    every surface."""

    query: str | ParsedQuery
    limit: int = 10
    mode: str = "auto"
    syntax: str = "dialect"  # plain: every word is a word, no operators
    strict: bool = False  # every plain word required
    spell: bool = False  # correct words no chunk holds, and say so
    relax: bool = True  # set aside constraints that leave almost nothing (kenning.search.relax)
    explain: bool = False
    detail: str = "full"
    params: Bm25Params = field(default_factory=Bm25Params)
    fusion: FusionParams = field(default_factory=FusionParams)
    post: PostprocessOptions = field(default_factory=PostprocessOptions)
    filters: Filters = field(default_factory=Filters)
    rerank: str | None = None  # a reranker spec (cross-encoder:DIR, openai:MODEL@URL, ...)
    embedder: str | None = None  # the query embedder (must match the index's vectors)
    pruning: bool = True  # lexical mode: skip chunks that cannot reach the top (same results, faster)

    def __post_init__(self) -> None:
        check_number("limit", self.limit, 1, MAX_LIMIT, integer=True)
        parse_rerank_spec(self.rerank)  # a bad spec is an error before the search, not after it
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.detail not in DETAILS:
            raise ValueError(f"detail must be one of {', '.join(DETAILS)}, got {self.detail!r}")
        if self.syntax not in SYNTAXES:
            raise ValueError(f"syntax must be one of {', '.join(SYNTAXES)}, got {self.syntax!r}")

    @property
    def text(self) -> str:
        """The query as the user wrote it."""
        return self.query.text if isinstance(self.query, ParsedQuery) else self.query
