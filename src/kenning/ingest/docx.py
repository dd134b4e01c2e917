"""Word documents (.docx): paragraphs as text, headings (by paragraph style) as sections.

A .docx file is a zip of XML parts; the text is in word/document.xml. Paragraphs whose style is a
heading (Heading1..Heading9, or Title) open a section at their level; table rows become lines with
their cells joined by " | ". The document title (docProps/core.xml) names the text before the first
heading. Only the standard library is needed.
"""

from __future__ import annotations

from pathlib import Path

from .chunk import Chunk, ChunkOptions, IngestError, ParsedSource
from .markdown import clean_text
from .source import windowed_chunks
from .zipped import READ_ERRORS, Container

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DC = "{http://purl.org/dc/elements/1.1/}"


def parse_docx(data: bytes, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """A .docx as sections; a zip past the bounds of kenning.ingest.limits (too many members, a part
    that inflates too far, XML with a document type) is skipped by name, never inflated whole."""
    try:
        with Container(data, display) as archive:
            body = archive.xml("word/document.xml")
            title = ""
            if "docProps/core.xml" in archive.names:
                core = archive.xml("docProps/core.xml")
                title = clean_text(core.findtext(f"{_DC}title") or "")
    except READ_ERRORS as exc:
        raise IngestError(f"{display}: not a readable .docx ({exc})") from exc
    fallback = title or Path(display).stem
    sections: list[tuple[int, str, list[str]]] = [(0, "", [])]
    for block in _blocks(body.find(f"{_W}body")):
        if block.tag == f"{_W}p":
            text = _paragraph_text(block)
            level = _heading_level(block)
            if level:
                sections.append((level, clean_text(text), []))
            elif text.strip():
                sections[-1][2].append(text)
        else:  # a table: one line per row, cells joined
            for row in block.iter(f"{_W}tr"):
                cells = [
                    " ".join(_paragraph_text(p) for p in c.iter(f"{_W}p")).strip()
                    for c in row.iter(f"{_W}tc")
                ]
                if any(cells):
                    sections[-1][2].append(" | ".join(cells))
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    for level, heading, lines in sections:
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
        section_title = " > ".join(h for _, h in stack if h) or fallback
        chunks.extend(
            windowed_chunks(lines, 1, options, title=section_title, doc_key=doc_key, keep_lines=False)
        )
    return ParsedSource(kind="docx", chunks=chunks)


def _blocks(body):
    """The body's paragraphs and tables in document order (content controls opened up)."""
    for child in list(body) if body is not None else []:
        if child.tag in (f"{_W}p", f"{_W}tbl"):
            yield child
        elif child.tag == f"{_W}sdt":
            yield from _blocks(child.find(f"{_W}sdtContent"))


def _paragraph_text(paragraph) -> str:
    out = []
    for node in paragraph.iter():
        if node.tag == f"{_W}t" and node.text:
            out.append(node.text)
        elif node.tag == f"{_W}tab":
            out.append("\t")
        elif node.tag in (f"{_W}br", f"{_W}cr"):
            out.append("\n")
    return "".join(out)


def _heading_level(paragraph) -> int:
    style = paragraph.find(f"{_W}pPr/{_W}pStyle")
    name = (style.get(f"{_W}val") or "") if style is not None else ""
    if name.lower() == "title":
        return 1
    if name.lower().startswith("heading") and name[7:].isdigit():
        return max(1, min(9, int(name[7:])))
    return 0
