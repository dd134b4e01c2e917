"""HTML: the visible text, one chunk per section under its heading path (h1-h6).

What a reader sees is what gets indexed: no tags, no scripts, styles or templates, entities decoded,
block elements as line breaks. The page's <title> names the text before the first heading. Each
section keeps the lines of the file it came from, read from the parser's positions.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from .chunk import Chunk, ChunkOptions, ParsedSource
from .markdown import clean_text
from .source import windowed_chunks

_HIDDEN = frozenset({"script", "style", "noscript", "template", "head", "svg", "iframe", "object"})
_BLOCKS = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
        "nav", "aside", "blockquote", "pre", "dd", "dt", "dl", "figcaption", "figure", "hr", "main",
        "h1", "h2", "h3", "h4", "h5", "h6", "td", "th",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _Sections(HTMLParser):
    """Collects (heading level, heading text, first line, text lines) per section."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.sections: list[list] = [[0, "", 1, []]]  # level, heading, start line, text parts
        self._hidden = 0
        self._in_title = False
        self._heading: list | None = None  # [level, parts, line] while inside <hN>

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _HEADINGS and not self._hidden:
            self._heading = [_HEADINGS[tag], [], self.getpos()[0]]
        elif tag in _BLOCKS:
            self._text("\n")

    def handle_startendtag(self, tag, attrs):
        if tag in ("br", "hr"):
            self._text("\n")

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _HEADINGS and self._heading is not None:
            level, parts, line = self._heading
            self.sections.append([level, clean_text("".join(parts)), line, []])
            self._heading = None
        elif tag in _BLOCKS:
            self._text("\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._hidden:
            return
        if self._heading is not None:
            self._heading[1].append(data)
        else:
            self._text(data)

    def _text(self, data: str) -> None:
        self.sections[-1][3].append(data)


def parse_html(text: str, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    parser = _Sections()
    parser.feed(text)
    parser.close()
    fallback = clean_text(parser.title) or Path(display).stem
    total_lines = text.count("\n") + 1
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    for i, (level, heading, start, parts) in enumerate(parser.sections):
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
        title = " > ".join(h for _, h in stack if h) or fallback
        end = parser.sections[i + 1][2] - 1 if i + 1 < len(parser.sections) else total_lines
        lines = [" ".join(line.split()) for line in "".join(parts).split("\n")]
        lines = [line for line in lines if line] or ([heading] if heading else [])  # a heading alone is text
        for chunk in windowed_chunks(lines, 1, options, title=title, doc_key=doc_key, keep_lines=False):
            chunk.start_line, chunk.end_line = start, max(start, end)
            chunks.append(chunk)
    return ParsedSource(kind="html", chunks=chunks)
