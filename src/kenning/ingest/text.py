"""Plain text (.txt, .rst, .org, .log and any other text): windows of lines titled by the file name.

Without structure to cut at, line-aligned windows still give exact line ranges for every result.
"""

from __future__ import annotations

from pathlib import Path

from .chunk import ChunkOptions, ParsedSource
from .source import split_source_lines, windowed_chunks


def parse_text(text: str, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """One chunk per window of lines, all titled with the file's basename."""
    lines = split_source_lines(text)
    chunks = windowed_chunks(lines, 1, options, title=Path(display).name, doc_key=doc_key)
    return ParsedSource(kind="text", chunks=chunks)
