"""kenning: local-first hybrid search that shows why it ranked each result.

The public names (Index, build_request, ...) load on first use (PEP 562), so `import kenning.x` for a
small stdlib-only module (the command line's client of a warm server) does not pay for numpy and
the models."""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

_PUBLIC = {
    "Funnel": "kenning.api",
    "Hit": "kenning.api",
    "Index": "kenning.api",
    "IndexReport": "kenning.api",
    "IndexWriter": "kenning.api",
    "SearchRequest": "kenning.api",
    "SearchResponse": "kenning.api",
    "build_request": "kenning.api",
    "FusionParams": "kenning.search.fusion",
    "Bm25Params": "kenning.lexical.bm25",
}
__all__ = [*sorted(_PUBLIC), "__version__", "signals"]

if TYPE_CHECKING:  # what a type checker sees (`X as X`: re-exported); at run time each loads on first use
    from kenning import signals as signals
    from kenning.api import Funnel as Funnel
    from kenning.api import Hit as Hit
    from kenning.api import Index as Index
    from kenning.api import IndexReport as IndexReport
    from kenning.api import IndexWriter as IndexWriter
    from kenning.api import SearchRequest as SearchRequest
    from kenning.api import SearchResponse as SearchResponse
    from kenning.api import build_request as build_request
    from kenning.lexical.bm25 import Bm25Params as Bm25Params
    from kenning.search.fusion import FusionParams as FusionParams


def __getattr__(name: str) -> object:
    import importlib

    if name == "signals":
        return importlib.import_module("kenning.signals")
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kenning' has no attribute {name!r}")
