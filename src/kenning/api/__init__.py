"""The public face: Index (read side) and IndexWriter (write side), SearchRequest and build_request
(one request shape and one set of defaults for every surface), the result types, and settings
(kenning.toml, environment, flags)."""

from typing import TYPE_CHECKING

from kenning.api.index import Index
from kenning.api.request import build_request
from kenning.search.request import SearchRequest
from kenning.search.results import Funnel, Hit, SearchResponse

_WRITE_SIDE = ("EmbedReport", "IndexReport", "IndexWriter")  # loaded on first use: searching never needs them

if TYPE_CHECKING:
    from kenning.indexing.reports import EmbedReport, IndexReport
    from kenning.indexing.writer import IndexWriter

__all__ = [
    "EmbedReport",
    "Funnel",
    "Hit",
    "Index",
    "IndexReport",
    "IndexWriter",
    "SearchRequest",
    "SearchResponse",
    "build_request",
]


def __getattr__(name: str) -> object:
    if name in _WRITE_SIDE:
        from kenning.indexing import writer

        return getattr(writer, name)
    raise AttributeError(f"module 'kenning.api' has no attribute {name!r}")
