"""Code a user of kenning writes, for mypy only (never run; tests/package/test_types.py checks it with
the public modules): each public name has its own type where a program imports it, not Any, and the
records' fields have the types their documentation gives."""

from __future__ import annotations

from pathlib import Path
from typing import assert_type

import kenning
from kenning import (
    Bm25Params,
    Funnel,
    FusionParams,
    Hit,
    Index,
    IndexReport,
    IndexWriter,
    SearchRequest,
    SearchResponse,
    build_request,
)
from kenning.signals import Knob, Signal, SignalQuery


def search_and_read(folder: Path) -> list[str]:
    with Index(folder) as index:
        report = index.add([folder / "notes"], collection="notes")
        assert_type(report, IndexReport)
        assert_type(report.errors, list[tuple[str, str]])
        assert_type(index.writer(), IndexWriter)

        request = build_request("sqlite wal", limit=5, params=Bm25Params(k1=1.2), fusion="rrf")
        assert_type(request, SearchRequest)
        assert_type(request.fusion, FusionParams)
        response = index.search(request)
        assert_type(response, SearchResponse)
        assert_type(index.search("sqlite", w_dense=2.0), SearchResponse)
        assert_type(response.funnel, Funnel)
        assert_type(response.funnel.timings_ms, dict[str, float])
        lines = []
        for hit in response.hits:
            assert_type(hit, Hit)
            assert_type(hit.score, float)
            assert_type(hit.snippet, str)
            assert_type(hit.highlights, list[tuple[int, int]])
            assert_type(hit.confidence, float | None)
            lines.append(f"{hit.location()} {hit.score:.2f} {hit.snippet}")
        return lines


class Recency:
    """A ranking signal of the user's own: the plugin API's Signal protocol."""

    name = "recency"
    weight = 0.0
    knobs = (Knob("recency_half_life", 30.0, "days until a chunk's recency halves"),)
    help = "newer chunks first"

    def channel(self, ctx: object, query: SignalQuery) -> None:
        return None


def register_mine() -> Signal:
    assert_type(kenning.signals.registered(), dict[str, Signal])
    assert_type(FusionParams(w_recency=1.0).weight("recency"), float)
    return kenning.signals.register(Recency())
