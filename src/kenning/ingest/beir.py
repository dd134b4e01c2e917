"""BEIR corpus files (corpus.jsonl): each line is its own document, keyed by `_id`.

Used for evaluation, so document identity must be the corpus `_id` (that is what qrels refer to),
and each document stays one chunk when it fits the chunk cap: BEIR judges documents. A repeated `_id`
is reported by line, and only its first document is kept.
"""

from __future__ import annotations

import json

from .chunk import Chunk, ParsedSource
from .jsonl import LineWarnings


def parse_beir(lines: list[str], display: str) -> ParsedSource:
    """One chunk per line: title = `title`, body = `text`, doc_key = `_id`."""
    warnings = LineWarnings(display)
    chunks: list[Chunk] = []
    first_line: dict[str, int] = {}  # _id -> the line that holds it first
    loads = json.loads
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except ValueError:
            warnings.add(line_no, "invalid JSON")
            continue
        if not isinstance(obj, dict):
            warnings.add(line_no, "expected a JSON object")
            continue
        doc_id = obj.get("_id")
        text = obj.get("text")
        if doc_id is None or doc_id == "":
            warnings.add(line_no, "missing _id")
            continue
        if not isinstance(text, str):
            warnings.add(line_no, "missing text")
            continue
        if str(doc_id) in first_line:
            warnings.add(
                line_no, f"duplicate _id {doc_id!r} (first on line {first_line[str(doc_id)]}); kept the first"
            )
            continue
        first_line[str(doc_id)] = line_no
        title = obj.get("title")
        chunks.append(
            Chunk(
                title=title if isinstance(title, str) else "",
                body=text,
                doc_key=str(doc_id),
                start_line=line_no,
                end_line=line_no,
            )
        )
    return ParsedSource(kind="beir", chunks=chunks, warnings=warnings.as_list())
