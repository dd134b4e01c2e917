"""build_request: the one way every surface turns a query and its settings into a SearchRequest.

The CLI (flags over environment over kenning.toml), the Python API (keywords), and the MCP and HTTP
surfaces all call it, so a search means the same thing whichever way it arrives. Settings are either
SearchRequest fields (limit, mode, syntax, strict, spell, relax, explain, detail, rerank, embedder) or
flat knobs: every BM25 knob (k1, b, k3, ...), every fusion knob and registered signal weight (depth,
feedback_k, w_dense, ...), and `fusion` for the fusion mode. None means "not set": the default holds.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from kenning import signals
from kenning.lexical.bm25 import Bm25Params
from kenning.query.filters import Filters
from kenning.query.parser import ParsedQuery
from kenning.search.fusion import FusionParams, fusion_knobs
from kenning.search.postprocess import PostprocessOptions
from kenning.search.request import SearchRequest

BM25_KNOBS = tuple(f.name for f in fields(Bm25Params))
REQUEST_FIELDS = tuple(
    f.name for f in fields(SearchRequest) if f.name not in ("query", "params", "fusion", "post", "filters")
)


_DEFAULT_BM25 = Bm25Params()
# derived from the registry, by its version
_DEFAULT_FUSION: dict[int, FusionParams] = {}
_FUSION_NAMES: dict[int, frozenset[str]] = {}


def default_fusion() -> FusionParams:
    """FusionParams() for the registry as it is (made once per registry change: a search asks often)."""
    key = signals.version()
    if key not in _DEFAULT_FUSION:
        _DEFAULT_FUSION[key] = FusionParams()
    return _DEFAULT_FUSION[key]


def _fusion_names() -> frozenset[str]:
    key = signals.version()
    if key not in _FUSION_NAMES:
        _FUSION_NAMES[key] = frozenset(fusion_knobs())
    return _FUSION_NAMES[key]


def knob_names() -> list[str]:
    """Every flat knob build_request reads (the registry's signals included)."""
    return [*BM25_KNOBS, "fusion", *fusion_knobs()]


def build_request(
    query: str | ParsedQuery,
    *,
    params: Bm25Params | None = None,
    fusion: FusionParams | str | None = None,
    post: PostprocessOptions | None = None,
    filters: Filters | None = None,
    **settings: Any,
) -> SearchRequest:
    """A SearchRequest from a query and settings; unknown settings are refused by name."""
    settings = {k: v for k, v in settings.items() if v is not None}
    bm25 = {k: settings.pop(k) for k in list(settings) if k in BM25_KNOBS}
    fusion_names = _fusion_names()
    fused = {k: settings.pop(k) for k in list(settings) if k in fusion_names}
    if "fusion" in settings:
        fused["mode"] = settings.pop("fusion")
    if isinstance(fusion, str):  # a fusion mode by name: fusion="blend"
        fused.setdefault("mode", fusion)
        fusion = None
    unknown = sorted(set(settings) - set(REQUEST_FIELDS))
    if unknown:
        raise ValueError(
            f"unknown search setting(s) {', '.join(unknown)}: use {', '.join(REQUEST_FIELDS)}, "
            f"or a knob ({', '.join(knob_names())})"
        )
    params = (
        replace(params, **bm25) if params is not None else (Bm25Params(**bm25) if bm25 else _DEFAULT_BM25)
    )
    if fusion is None:
        fusion = FusionParams(**fused) if fused else default_fusion()
    elif fused:
        fusion = FusionParams(**{**fusion.to_dict(), **fused})
    return SearchRequest(
        query,
        params=params,
        fusion=fusion,
        post=post if post is not None else PostprocessOptions(),
        filters=filters if filters is not None else Filters(),
        **settings,
    )
