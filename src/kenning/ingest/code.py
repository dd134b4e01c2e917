"""Source code: one chunk per definition, titled by what it defines.

A query like "where is search defined" should land on `index.py > def search`, not on a window that
starts halfway through it; a method lands on `index.py > Index.add`. Definitions come from
tree-sitter parse trees (kenning.ingest.syntax) for Python, JavaScript/TypeScript, Go and Rust. A
class (or a Rust impl block) with methods becomes its header, titled `class Index`, then one chunk
per method, each running to the next one. Lines outside any definition (imports, constants,
top-level statements) become chunks titled by the file name, so every line of the file is covered.
"""

from __future__ import annotations

from pathlib import Path

from .chunk import Chunk, ChunkOptions, ParsedSource
from .source import split_source_lines, windowed_chunks
from .syntax import Span, spans

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".go": "go",
    ".rs": "rust",
}


def parse_code(text: str, path: Path, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Split a source file into definition chunks plus the code between them."""
    language = LANGUAGES[path.suffix.lower()]
    lines = split_source_lines(text)
    found = spans(language, "\n".join(lines))
    chunks = _assemble(lines, found, Path(display).name, language, doc_key, options)
    return ParsedSource(kind="code", chunks=chunks)


def _assemble(
    lines: list[str],
    spans: list[Span],
    basename: str,
    language: str,
    doc_key: str,
    options: ChunkOptions,
) -> list[Chunk]:
    """Definitions become titled chunks; the gaps between them become chunks titled by the file."""
    chunks: list[Chunk] = []
    cursor = 0

    def emit(start: int, end: int, title: str, symbol: str | None) -> None:
        chunks.extend(
            windowed_chunks(
                lines[start : end + 1],
                start + 1,
                options,
                title=title,
                doc_key=doc_key,
                meta={"language": language, "symbol": symbol},
            )
        )

    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor:
            continue  # overlapping detection; the earlier definition already covers it
        if span.start > cursor:
            emit(cursor, span.start - 1, basename, None)
        if "." in (span.symbol or ""):  # a method outside its type (Go): Type.method
            title = f"{basename} > {span.symbol}"
        else:
            title = f"{basename} > {span.kind} {span.name}" if span.name else f"{basename} > {span.kind}"
        members = [m for m in span.members if span.start < m.start <= span.end]
        if not members:
            emit(span.start, span.end, title, span.symbol)
        else:  # the header, then each method up to the next one (the last to the type's end)
            emit(span.start, members[0].start - 1, title, span.symbol)
            for k, member in enumerate(members):
                last = members[k + 1].start - 1 if k + 1 < len(members) else span.end
                emit(member.start, last, f"{basename} > {member.symbol}", member.symbol)
        cursor = span.end + 1
    if cursor < len(lines):
        emit(cursor, len(lines) - 1, basename, None)
    return chunks
