"""Jupyter notebooks: their markdown and code cells, read as the Markdown document they amount to.

Markdown cells keep their headings, so sections follow the notebook's own outline; code cells become
fenced code under the section they sit in (titled by it), in the notebook's language. Outputs are
left out: they are what the code printed, often large, rarely what a person searches for.
"""

from __future__ import annotations

import json

from .chunk import ChunkOptions, IngestError, ParsedSource
from .markdown import parse_markdown


def parse_notebook(text: str, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    try:
        notebook = json.loads(text)
    except ValueError as exc:
        raise IngestError(f"{display}: not a notebook (invalid JSON: {exc})") from exc
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise IngestError(f"{display}: not a notebook (no list of cells)")
    language = (
        (notebook.get("metadata") or {}).get("language_info", {}).get("name")
        or (notebook.get("metadata") or {}).get("kernelspec", {}).get("language")
        or ""
    )
    parts = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if not source.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(source.strip("\n"))
        elif cell.get("cell_type") == "code":
            parts.append(f"```{language}\n{source.strip(chr(10))}\n```")
        else:
            parts.append(source.strip("\n"))
    parsed = parse_markdown("\n\n".join(parts) + "\n", doc_key, display, options)
    for chunk in parsed.chunks:  # lines of the synthetic Markdown are not lines of the .ipynb file
        chunk.start_line = chunk.end_line = None
        chunk.meta["language"] = language
    return ParsedSource(kind="notebook", chunks=parsed.chunks, warnings=parsed.warnings)
