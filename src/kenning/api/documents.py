"""Reading indexed documents back: `kenning get`, the MCP `get`/`multi_get` tools and `/api/get`.

A document is shown once, in file order, with its line numbers, even though its chunks overlap
(long sections are cut into overlapping windows, chat logs into overlapping runs of messages). Only
what the index holds is shown, never the file on disk, so a reference can never reach outside the
indexed roots.

References:

    notes/auth.md               a whole document (a path, or a document id such as a BEIR _id)
    notes/auth.md:120-160       the lines 120 to 160 of it (`:120` for one line)
    manual.pdf#page=4           the chunks on page 4 of a paged document (`#page=4-6` for pages 4 to 6)
    chat.jsonl#msg=ID           a chat log at one message: the window that holds it, and the windows
                                of its conversation just before and after
    chunk:42  or  #42           one chunk
    kenning:///home/me/a.md     a document as an MCP resource names it (document_uri), with or
                                without a line range

A reader that must stay small (an agent's context, a page) asks for a window: the document's lines
from an offset while they fit in a number of characters (`window`). The window says what it left
out and the offset that reads on, so nothing is lost by bounding it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from kenning.query.filters import path_matches
from kenning.search.message_lines import is_message_window, line_records
from kenning.store import ChunkRow

URI_PREFIX = "kenning://"  # kenning://<the indexed path, percent-encoded>: /x/a.md is kenning:///x/a.md
NUMBER_WIDTH = 8  # a line number as text forms show it: right-aligned in six, two spaces
_RANGE = re.compile(r"^(?P<doc>.+?):(?P<start>[0-9]{1,18})(?:-(?P<end>[0-9]{1,18}))?$")
_PAGES = re.compile(r"^(?P<doc>.+?)#page=(?P<start>[0-9]{1,9})(?:-(?P<end>[0-9]{1,9}))?$")
_MESSAGE = re.compile(r"^(?P<doc>.+?)#msg=(?P<id>[^\x00-\x1f]{1,200})$")


@dataclass
class Section:
    """One titled part of a document: its lines as (line number or None, text)."""

    title: str
    lines: list[tuple[int | None, str]]
    page: int | None = None
    chunk_ids: list[int] = field(default_factory=list)
    message_ids: set[str] = field(default_factory=set, repr=False)  # chat lines already shown

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "page": self.page,
            "chunk_ids": self.chunk_ids,
            "lines": [{"n": n, "text": t} for n, t in self.lines],
        }


@dataclass
class Document:
    ref: str
    path: str
    sections: list[Section]
    line_range: tuple[int, int] | None = None
    time: float | None = None
    kind: str | None = None
    window: Window | None = None  # set when only part of the document was asked for
    # the first and last line numbers the whole document has (None without line numbers), so a
    # reader of one range knows how far it may read on either side
    span: tuple[int, int] | None = None

    @property
    def line_count(self) -> int:
        return sum(len(s.lines) for s in self.sections)

    @property
    def chars(self) -> int:
        return sum(len(t) + 1 for s in self.sections for _, t in s.lines)

    def text(self, numbered: bool = True) -> str:
        """The document as text: each section under its title, lines numbered."""
        out = []
        for section in self.sections:
            where = f" (p.{section.page})" if section.page else ""
            out.append(f"§ {section.title}{where}" if section.title else "§")
            for n, line in section.lines:
                out.append(f"{n:>6}  {line}" if numbered and n is not None else line)
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "path": self.path,
            "line_range": list(self.line_range) if self.line_range else None,
            "time": self.time,
            "window": self.window.to_dict() if self.window else None,
            "document_lines": list(self.span) if self.span else None,
            "sections": [s.to_dict() for s in self.sections],
        }


@dataclass(frozen=True)
class Window:
    """Which part of a document a windowed read returned: lines `offset` to `offset + shown - 1` of
    its `total` (counted in the document as it reads, each line once), what is left after them, and
    the offset of the next part (None when nothing is left)."""

    ref: str
    offset: int
    shown: int
    total: int
    chars_after: int
    cut: int = 0  # lines longer than the whole budget, shown cut at it

    @property
    def next_offset(self) -> int | None:
        end = self.offset + self.shown
        return end if end < self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "lines_shown": self.shown,
            "lines_total": self.total,
            "lines_after": self.total - self.offset - self.shown,
            "chars_after": self.chars_after,
            "lines_cut": self.cut,
            "next": {"path": self.ref, "offset": self.next_offset} if self.next_offset is not None else None,
        }


def document_uri(path: str) -> str:
    """The URI an indexed document goes by as an MCP resource (and that `get` accepts)."""
    return URI_PREFIX + quote(path, safe="/:@")


def ref_of(ref: str) -> str:
    """A reference with a kenning:// URI turned back into the path it names; others as given."""
    return unquote(ref.strip()[len(URI_PREFIX) :]) if ref.strip().startswith(URI_PREFIX) else ref


def parse_ref(ref: str) -> tuple[str, tuple[int, int] | None]:
    """(document or chunk reference, line range or None): `a.md:10-20` -> ("a.md", (10, 20))."""
    return _split_range(ref, _RANGE, "line")


def parse_page_ref(ref: str) -> tuple[str, tuple[int, int] | None]:
    """(document reference, page range or None): `a.pdf#page=4` -> ("a.pdf", (4, 4))."""
    return _split_range(ref, _PAGES, "page")


def parse_message_ref(ref: str) -> tuple[str, str | None]:
    """(document reference, message id or None): `chat.jsonl#msg=m42` -> ("chat.jsonl", "m42")."""
    match = _MESSAGE.match(ref.strip())
    return (match["doc"], match["id"]) if match else (ref.strip(), None)


def around_message(rows: list[ChunkRow], message_id: str) -> list[ChunkRow]:
    """A chat log's windows at one message: the first window holding it, with the windows of the
    same conversation just before and after it (in the order the log's windows come); [] when no
    window holds it."""

    def holds(row: ChunkRow) -> bool:
        ids = row.meta.get("message_ids") if isinstance(row.meta, dict) else None
        return isinstance(ids, list) and message_id in map(str, ids)

    at = next((i for i, row in enumerate(rows) if holds(row)), None)
    if at is None:
        return []
    same = [i for i, row in enumerate(rows) if row.title == rows[at].title]
    k = same.index(at)
    return [rows[i] for i in same[max(0, k - 1) : k + 2]]


def _split_range(ref: str, pattern: re.Pattern[str], unit: str) -> tuple[str, tuple[int, int] | None]:
    match = pattern.match(ref.strip())
    if not match:
        return ref.strip(), None
    start = int(match["start"])
    end = int(match["end"]) if match["end"] else start
    if end < start:
        raise ValueError(f"{ref!r}: the {unit} range ends before it starts")
    return match["doc"], (start, end)


def lines_on_pages(row: ChunkRow, pages: tuple[int, int]) -> set[int]:
    """The line numbers of a paged chunk that lie on those pages: its first page until the first of
    its `page_breaks` (kenning.ingest.pdf), the next page until the next, and so on."""
    if row.page is None or row.end_line is None:
        return set()
    breaks = row.meta.get("page_breaks") if isinstance(row.meta, dict) else None
    breaks = sorted(b for b in breaks if isinstance(b, int)) if isinstance(breaks, list) else []
    first = row.end_line - row.body.count("\n")
    out, page, cut = set(), row.page, 0
    for n in range(first, row.end_line + 1):
        while cut < len(breaks) and n >= breaks[cut]:
            page, cut = page + 1, cut + 1
        if pages[0] <= page <= pages[1]:
            out.add(n)
    return out


def on_pages(row: ChunkRow, pages: tuple[int, int]) -> bool:
    """Whether a chunk lies on any of the pages (its first page, to its `page_end` when it runs on)."""
    if row.page is None:
        return False
    last = row.meta.get("page_end") if isinstance(row.meta, dict) else None
    last = last if isinstance(last, int) and not isinstance(last, bool) and last >= row.page else row.page
    return row.page <= pages[1] and last >= pages[0]


def assemble(
    ref: str, rows: list[ChunkRow], line_range: tuple[int, int] | None = None, message: str | None = None
) -> Document:
    """One Document from a document's chunks (in order), each line once; in a chat log, the line of
    `message` (an id) marked `› `, the others indented to match."""
    sections: list[Section] = []
    for row in rows:
        lines = _numbered_lines(row, message)
        if line_range is not None:
            lines = [(n, t) for n, t in lines if n is not None and line_range[0] <= n <= line_range[1]]
            if not lines:
                continue
        current = sections[-1] if sections else None
        # windows of one section run on over pages; their line numbers say which lines are shared
        new_page = current is not None and current.page != row.page and row.end_line is None
        if current is None or current.title != row.title or new_page:
            current = Section(row.title, [], row.page)
            sections.append(current)
        current.chunk_ids.append(row.id)
        _merge(current, lines, row)
    path = rows[0].path or rows[0].doc_key if rows else ref
    times = [r.time for r in rows if r.time is not None]
    starts = [r.end_line - r.body.count("\n") for r in rows if r.end_line is not None]
    ends = [r.end_line for r in rows if r.end_line is not None]
    span = (min(starts), max(ends)) if ends else None
    return Document(ref, path, sections, line_range, max(times) if times else None, span=span)


def window(document: Document, max_chars: int, offset: int = 0) -> Document:
    """The document's lines from line `offset` on (0: the first) while they fit in `max_chars` as
    shown (each with its line number), always at least one line (cut at `max_chars` when it alone
    is longer), with a Window saying what was left out. Raises ValueError for an offset past the
    document's end."""
    total = document.line_count
    if offset < 0 or (offset and offset >= total):
        raise ValueError(f"offset {offset} is outside {document.ref!r}, which has {total} lines")
    sections: list[Section] = []
    used = shown = cut = chars_after = 0
    position = -1
    for section in document.sections:
        kept: list[tuple[int | None, str]] = []
        for n, text in section.lines:
            position += 1
            if position < offset:
                continue
            margin = NUMBER_WIDTH + 1 if n is not None else 1  # as shown: numbered, one line each
            if chars_after or (shown and used + len(text) + margin > max_chars):
                chars_after += len(text) + 1  # from the first line that does not fit, all are left
                continue
            if len(text) + margin > max_chars:
                text, cut = text[: max(0, max_chars - margin - 1)] + "…", cut + 1
            kept.append((n, text))
            used += len(text) + margin
            shown += 1
        if kept:
            sections.append(Section(section.title, kept, section.page, section.chunk_ids))
    part = Document(
        document.ref,
        document.path,
        sections,
        document.line_range,
        document.time,
        document.kind,
        span=document.span,
    )
    part.window = Window(document.ref, offset, shown, total, chars_after, cut)
    return part


def _numbered_lines(row: ChunkRow, message: str | None = None) -> list[tuple[int | None, str]]:
    """A chunk's body with the file's line numbers: the body is exact lines ending at end_line. A
    chat window's lines are messages, not the file's lines: unnumbered, each after its time (and,
    when a `message` id is asked for, after a mark that is `› ` on that message's line)."""
    body = row.body.split("\n")
    if is_message_window(row.meta):
        out: list[tuple[int | None, str]] = []
        for (message_id, _, time), line in zip(line_records(row.meta, len(body)), body, strict=True):
            mark = "" if message is None else "› " if message_id == message else "  "
            when = "" if time is None else datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d %H:%M  ")
            out.append((None, f"{mark}{when}{line}"))
        return out
    if row.end_line is None:
        return [(None, line) for line in body]
    first = row.end_line - len(body) + 1
    return list(zip(range(first, row.end_line + 1), body, strict=True))


def _merge(section: Section, lines: list[tuple[int | None, str]], row: ChunkRow) -> None:
    """Add a chunk's lines to its section, skipping lines an overlapping chunk already gave: by line
    number, or for chat logs (no line numbers) by message id: each line's own (`meta.messages`; a
    run of repeats collapsed into one line lists every id in `message_ids`, so only an index built
    before `messages` existed, without such runs, is read by those)."""
    if lines and lines[0][0] is None:
        ids: list[Any] | None = None
        if is_message_window(row.meta):
            ids = [message_id for message_id, _, _ in line_records(row.meta, len(lines))]
        if ids is None or None in ids:
            ids = row.meta.get("message_ids") if isinstance(row.meta, dict) else None
        if ids and len(ids) == len(lines):
            for message_id, line in zip(ids, lines, strict=True):
                if message_id not in section.message_ids:
                    section.message_ids.add(message_id)
                    section.lines.append(line)
            return
        section.lines.extend(lines)
        return
    have = {n: i for i, (n, _) in enumerate(section.lines)}
    for n, text in lines:
        if n not in have:
            have[n] = len(section.lines)
            section.lines.append((n, text))
        elif text and text not in section.lines[have[n]][1]:  # a very long line cut into pieces
            section.lines[have[n]] = (n, section.lines[have[n]][1] + text)
    section.lines.sort(key=lambda pair: pair[0] or 0)  # numbered lines here (from 1)


def matching_paths(paths: list[str], pattern: str) -> list[str]:
    """Indexed paths matched by a glob, by the rule every surface shares
    (kenning.query.filters.path_matches)."""
    return [p for p in paths if path_matches(p, pattern)]
