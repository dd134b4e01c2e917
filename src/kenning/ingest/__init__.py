"""Turning files into chunks: find files (`discover`), recognise their kind, parse them.

`parse_file` (kenning.ingest.dispatch) is the single entry point the indexer uses; it reads the
bytes once, decides the kind from the extension and the first bytes, and hands off to one parser per
format.

The names below load their modules when first asked for: a search reads no file, and importing
every format's parser (PDF, chat exports, zip) cost a `kenning search` command about 12 ms.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .chunk import Chunk, ChunkOptions, IngestError, ParsedSource
    from .dispatch import binary_reason, detect_kind, parse_file
    from .walk import discover

__all__ = [
    "Chunk",
    "ChunkOptions",
    "ParsedSource",
    "IngestError",
    "discover",
    "parse_file",
    "detect_kind",
    "binary_reason",
]

_HOMES = {
    "Chunk": ".chunk",
    "ChunkOptions": ".chunk",
    "ParsedSource": ".chunk",
    "IngestError": ".chunk",
    "discover": ".walk",
    "parse_file": ".dispatch",
    "detect_kind": ".dispatch",
    "binary_reason": ".dispatch",
}


def __getattr__(name: str) -> object:
    """A name of `__all__`, from the module that defines it, imported now."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value
