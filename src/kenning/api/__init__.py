"""The public face: Index (read side) and IndexWriter (write side), SearchRequest and build_request
(one request shape and one set of defaults for every surface), the result types, and settings
(kenning.toml, environment, flags)."""

from kenning.api.index import Index
from kenning.api.request import build_request
from kenning.indexing.writer import EmbedReport, IndexReport, IndexWriter
from kenning.search.request import SearchRequest
from kenning.search.results import Funnel, Hit, SearchResponse

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
