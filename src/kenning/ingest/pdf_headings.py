"""Headings read from a PDF's text layer, for PDFs without an outline.

Many PDFs carry no bookmarks, but their authors' tools still set headings apart from the text: in a
larger font, in bold, or numbered ("2.1 Directory layout"). PDFium reports each letter's font size,
weight and place, so the lines that stand out can be found and turned into the same section starts
an outline gives (kenning.ingest.pdf.Bookmark), with heading paths nested by how far each heading
stands out.

The rules, in order:
- The body size is the font size that most of the document's letters are set in.
- A line is a heading when it is short (at most MAX_HEADING_WORDS words, with a letter in it) and
  either set at least LARGER times the body size, or all bold at the body size or above. A line of
  a table of contents (a dot leader or a trailing page number) is not one, nor a running header or
  footer (the same words, numbers aside, on RUNNING_PAGES pages or more).
- Headings set alike on consecutive lines are one heading that wrapped.
- Only when the fonts set nothing apart are numbered lines read as headings ("3. Utilities",
  "2.1. Naming"): at least MIN_NUMBERED of them, each short, capitalised, not ending a sentence.
- A heading's level is its font size's rank among the headings' sizes (bold above regular at one
  size), then the depth of its number: a heading nests under the nearest earlier one that ranks
  above it.

Reading samples a few letters of each line rather than every letter, so a long document costs a few
calls a line; MAX_LINES lines are read at most.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections import Counter
from dataclasses import dataclass

MAX_HEADING_WORDS = 16
MAX_HEADING_CHARS = 160
LARGER = 1.12  # a heading's font is at least this many times the body's
BOLD_WEIGHT = 600  # PDFium's font weight from which a letter is bold
_FORCE_BOLD = 1 << 18  # a font descriptor's ForceBold flag (PDF 32000-1, table 123: bit 19)
RUNNING_PAGES = 3  # a line repeated on this many pages is a running header or footer
MIN_NUMBERED = 3
SAMPLES_PER_LINE = 4
MAX_SIZE = 10_000.0  # points: a larger size is a crafted file's, not a heading's
MAX_LINES = 200_000  # a document's lines read for headings at most (about 4,000 dense pages)

# a table of contents' line: "Introduction ....... 3", or a numbered title and its page "2.1 Naming 7"
_LEADER = re.compile(r"(?:\.\s*){3,}\S*$|^\S*\d\S*\s.*\s\d+$")
_BREAK = re.compile(r"[\r\n]")
_NUMBERED = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?|[A-Z](?:\.\d+)+\.?|(?:Appendix|Chapter|Part)\s+\w+\.?)\s+(\S.*)$"
)


@dataclass(frozen=True)
class Line:
    """One line of a page: its text, page (0-based), top (PDF points from the bottom), the font
    size most of its sampled letters have, and whether they are all bold."""

    text: str
    page: int
    top: float
    size: float
    bold: bool


@dataclass(frozen=True)
class Heading:
    """A detected heading: its text, where it is, and its rank (smaller stands out more)."""

    text: str
    page: int
    top: float
    rank: tuple[int, int]


def detect_headings(document) -> list[Heading]:
    """The document's headings in reading order, [] when it has none that can be told apart."""
    lines = read_lines(document)
    if not lines:
        return []
    body = body_size(lines)
    running = _running_lines(lines)
    styled = [line for line in lines if _stands_out(line, body) and _key(line) not in running]
    headings = _by_style(_merge_wrapped(styled), body)
    if len(headings) >= 2:
        return headings
    numbered = [
        line
        for line in lines
        if _looks_numbered(line.text) and abs(line.size - body) < 0.6 and _key(line) not in running
    ]
    if len(numbered) >= MIN_NUMBERED:
        return [Heading(line.text, line.page, line.top, (0, _depth(line.text))) for line in numbered]
    return []


def read_lines(document) -> list[Line]:
    """The document's lines, page by page, from PDFium's text (lines end at its line breaks)."""
    import pypdfium2.raw as raw

    sampler = _Sampler(raw)
    out: list[Line] = []
    for index in range(len(document)):
        if len(out) >= MAX_LINES:
            break
        try:
            page = document[index]
            textpage = page.get_textpage()
        except Exception:  # an unreadable page: the page reader warns about it
            continue
        try:
            count = textpage.count_chars()
            text = textpage.get_text_range()
            if len(text) != count:  # letters beyond 16 bits: read the letters one by one
                text = "".join(chr(raw.FPDFText_GetUnicode(textpage.raw, i)) for i in range(count))
            start = 0
            for end in [m.start() for m in _BREAK.finditer(text)] + [count]:
                if len(out) >= MAX_LINES:
                    break
                line = sampler.line(textpage.raw, text, start, end, index) if end > start else None
                if line is not None:
                    out.append(line)
                start = end + 1
        finally:
            textpage.close()
            page.close()
    return out[:MAX_LINES]


def body_size(lines: list[Line]) -> float:
    """The font size most of the document's text is set in (by letters)."""
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0]


class _Sampler:
    """Reads a line's font size, boldness and top from SAMPLES_PER_LINE of its letters, spread
    along it: the letters of one line share their font but for a word or two."""

    def __init__(self, raw):
        self.raw = raw
        self.box = [ctypes.c_double() for _ in range(4)]  # left, right, bottom, top
        self.name, self.flags = ctypes.create_string_buffer(64), ctypes.c_int()
        self.matrix = raw.FS_MATRIX()

    def line(self, textpage, text: str, start: int, end: int, page: int) -> Line | None:
        words = " ".join(text[start:end].split())
        if not words:
            return None
        picks = set()
        for k in range(SAMPLES_PER_LINE):
            i = start + k * (end - start) // SAMPLES_PER_LINE
            while i < end and text[i].isspace():
                i += 1
            if i < end:
                picks.add(i)
        sizes: Counter[float] = Counter()
        bold, top = True, float("-inf")
        for i in sorted(picks):
            size = self._size(textpage, i)
            if size is not None:
                sizes[round(size * 2) / 2] += 1
            bold = bold and self._bold(textpage, i)
            if self.raw.FPDFText_GetCharBox(textpage, i, *self.box):
                top = max(top, self.box[3].value)
        if top == float("-inf") or not sizes:
            return None
        return Line(words, page, top, sizes.most_common(1)[0][0], bold)

    def _size(self, textpage, i: int) -> float | None:
        """A letter's size as printed: the font size the text operator set, scaled by the letter's
        matrix (a PDF may set text at size 1 and scale it to 24 with the text matrix, and a mirrored
        one sets a negative size); None when it is not a positive finite number."""
        size = abs(self.raw.FPDFText_GetFontSize(textpage, i))
        if self.raw.FPDFText_GetMatrix(textpage, i, ctypes.byref(self.matrix)):
            m = self.matrix
            size *= math.sqrt(abs(m.a * m.d - m.b * m.c))
        return size if math.isfinite(size) and 0 < size < MAX_SIZE else None

    def _bold(self, textpage, i: int) -> bool:
        """By the font's weight, else (the standard fonts report none) by a bold font's name
        ("Helvetica-Bold") or its ForceBold flag."""
        if self.raw.FPDFText_GetFontWeight(textpage, i) >= BOLD_WEIGHT:
            return True
        self.raw.FPDFText_GetFontInfo(textpage, i, self.name, len(self.name), self.flags)
        font = self.name.value.lower()
        return b"bold" in font or b"black" in font or b"heavy" in font or bool(self.flags.value & _FORCE_BOLD)


def _stands_out(line: Line, body: float) -> bool:
    if not _heading_shaped(line.text):
        return False
    return line.size >= body * LARGER or (line.bold and line.size >= body - 0.5)


def _heading_shaped(text: str) -> bool:
    return (
        len(text) <= MAX_HEADING_CHARS
        and len(text.split()) <= MAX_HEADING_WORDS
        and any(ch.isalpha() for ch in text)
        and not _LEADER.search(text)
    )


def _looks_numbered(text: str) -> bool:
    match = _NUMBERED.match(text)
    if not match or not _heading_shaped(text) or len(text.split()) > 10:
        return False
    rest = match.group(1)
    return rest[:1].isupper() and rest[-1:] not in ".,;:"


def _depth(text: str) -> int:
    number = text.split(maxsplit=1)[0].rstrip(".")
    return number.count(".") + 1


def _key(line: Line) -> tuple[str, float, int]:
    """A line's words without their numbers, its size and its height rounded: a running head's page
    number changes from page to page, its words and its place do not."""
    return " ".join(re.sub(r"\d+", "", line.text).lower().split()), line.size, round(line.top / 12)


def _running_lines(lines: list[Line]) -> set[tuple[str, float, int]]:
    pages_of: dict[tuple[str, float, int], set[int]] = {}
    for line in lines:
        if len(line.text) <= MAX_HEADING_CHARS:
            pages_of.setdefault(_key(line), set()).add(line.page)
    return {key for key, pages in pages_of.items() if len(pages) >= RUNNING_PAGES}


def _merge_wrapped(lines: list[Line]) -> list[Line]:
    """Consecutive heading lines set alike and close together are one heading that wrapped."""
    out: list[Line] = []
    for line in lines:
        last = out[-1] if out else None
        if (
            last is not None
            and last.page == line.page
            and (last.size, last.bold) == (line.size, line.bold)
            and 0 < last.top - line.top <= 1.6 * line.size
            and not _NUMBERED.match(line.text)
        ):
            out[-1] = Line(f"{last.text} {line.text}", last.page, last.top, last.size, last.bold)
        else:
            out.append(line)
    return out


def _by_style(lines: list[Line], body: float) -> list[Heading]:
    styles = sorted({(line.size, line.bold) for line in lines}, reverse=True)
    rank = {style: n for n, style in enumerate(styles)}
    return [
        Heading(
            line.text,
            line.page,
            line.top,
            (rank[(line.size, line.bold)], _depth(line.text) if _NUMBERED.match(line.text) else 1),
        )
        for line in lines
    ]


def heading_paths(headings: list[Heading]) -> list[tuple[str, ...]]:
    """Each heading's path: the texts of the earlier headings it nests under, then its own."""
    stack: list[Heading] = []
    out = []
    for heading in headings:
        while stack and stack[-1].rank >= heading.rank:
            stack.pop()
        stack.append(heading)
        out.append(tuple(h.text for h in stack))
    return out
