"""Markdown: one chunk per section, titled by its heading path.

The heading path ("Book > Chapter 26") is what makes a section findable and recognisable in results.
Sections are cut where a CommonMark parser (markdown-it-py, with tables) sees a heading: ATX (`#`)
and setext (a line underlined with `===` or `---`) alike, and never a `#` line inside fenced code.
Heading text is stored clean: inline markup, ANSI escapes and control characters are dropped, so a
title never paints the terminal. YAML front matter is read with PyYAML: its values become the
chunks' `front_matter` metadata (strings, for --meta filters), its `title` names the sections before
the first heading, and its `date` is the document time.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path

from .chunk import Chunk, ChunkOptions, ParsedSource
from .limits import MAX_FRONT_MATTER_BYTES, MAX_YAML_ALIASES, MAX_YAML_DEPTH, MAX_YAML_ITEMS, MAX_YAML_NODES
from .source import split_source_lines, windowed_chunks

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def parse_markdown(text: str, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Split a Markdown document into heading-path sections (long ones windowed)."""
    lines = split_source_lines(text)
    warnings: list[str] = []
    front_matter, body_start = _read_front_matter(lines, display, warnings)
    time = None
    if front_matter and front_matter.get("date"):
        time = _parse_date(front_matter["date"])
        if time is None:
            warnings.append(f"{display}: front matter date {front_matter['date']!r} is not an ISO date")
    meta = {"front_matter": front_matter} if front_matter is not None else {}
    fallback_title = clean_text(_scalar(front_matter.get("title"))) if front_matter else ""
    fallback_title = fallback_title or Path(display).stem

    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []  # (level, heading text) of the open headings
    section_title = fallback_title
    heading_line: int | None = None  # 0-based index of the current section's heading
    body_first = body_start  # 0-based index of the current section's first body line
    pending = body_start  # the first line no chunk holds yet: a chunk's text is every line it spans

    def close(end: int, next_level: int) -> None:
        nonlocal pending
        if any(line.strip() for line in lines[body_first:end]):
            # the section's own lines, its heading (and any empty parent heading before it) included,
            # so a chunk's lines are the file's lines and `get file:1-4` shows lines 1 to 4
            chunks.extend(
                windowed_chunks(
                    lines[pending:end],
                    pending + 1,
                    options,
                    title=section_title,
                    doc_key=doc_key,
                    time=time,
                    meta=meta,
                    lead=body_first - pending,
                )
            )
            pending = end
        elif heading_line is None:
            pending = end  # blank lines before the first heading belong to no chunk
        elif not stack or next_level <= stack[-1][0]:
            # A heading with nothing under it and no subsections ("# TODO") is still something the
            # author wrote: it stays findable as a chunk of its own heading lines. One with
            # subsections leaves its lines to the first of them.
            chunks.append(
                Chunk(
                    title=section_title,
                    body="\n".join(lines[pending:body_first]),
                    doc_key=doc_key,
                    start_line=pending + 1,
                    end_line=body_first,
                    time=time,
                    meta=copy.deepcopy(meta),
                )
            )
            pending = end

    for level, heading, start, end in _headings("\n".join(lines[body_start:]), body_start):
        close(start, level)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        section_title = " > ".join(h for _, h in stack if h) or fallback_title
        heading_line, body_first = start, end
    close(len(lines), 0)
    return ParsedSource(kind="markdown", chunks=chunks, warnings=warnings)


def _headings(text: str, offset: int):
    """(level, clean text, first line, line after it) of each heading, lines 0-based in the file."""
    tokens = _markdown_parser().parse(text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map is not None:
            inline = tokens[i + 1]
            words = [c.content for c in inline.children or [] if c.type in ("text", "code_inline")]
            yield int(token.tag[1]), clean_text("".join(words)), token.map[0] + offset, token.map[1] + offset


@cache
def _markdown_parser():
    """The CommonMark parser, made on first use: markdown-it-py and PyYAML are loaded only by a run
    that reads Markdown (together they are most of a re-index's import time)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def clean_text(text: str) -> str:
    """One line of text as a terminal should show it: no escape sequences, no control characters."""
    return " ".join(_CONTROL.sub(" ", _ANSI.sub("", text)).split())


def _read_front_matter(lines: list[str], display: str, warnings: list[str]) -> tuple[dict | None, int]:
    """Front matter between a leading '---' and the next '---' (or '...'); returns (data, body start).

    Bounded (kenning.ingest.limits): front matter past MAX_FRONT_MATTER_BYTES, or YAML with more
    nodes or aliases than a note's front matter ever has (a kilobyte of aliases can name a billion
    strings), is ignored with a warning; the body is still indexed."""
    if not lines or lines[0].strip() != "---":
        return None, 0
    size = 0
    for end in range(1, len(lines)):
        size += len(lines[end]) + 1
        if lines[end].strip() in ("---", "..."):
            if size > MAX_FRONT_MATTER_BYTES:
                warnings.append(
                    f"{display}: front matter is over {MAX_FRONT_MATTER_BYTES // 1024} KB; ignored"
                )
                return None, end + 1
            import yaml  # only for files with front matter

            try:
                data = yaml.load("\n".join(lines[1:end]), Loader=_bounded_loader())
            except _TooBig as exc:
                warnings.append(f"{display}: front matter {exc}; ignored")
                return None, end + 1
            except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 2})" if mark is not None else ""
                warnings.append(f"{display}: front matter is not valid YAML{where}; ignored")
                return None, end + 1
            if data is None:
                return {}, end + 1
            if not isinstance(data, dict):
                warnings.append(f"{display}: front matter is not a mapping of keys; ignored")
                return None, end + 1
            budget = [MAX_YAML_ITEMS]
            try:
                return {str(k): _plain(v, budget, 1) for k, v in data.items()}, end + 1
            except _TooBig as exc:
                warnings.append(f"{display}: front matter {exc}; ignored")
                return None, end + 1
    return None, 0  # no closing fence: it was a thematic break, not front matter


class _TooBig(Exception):
    """Front matter past one of the bounds of kenning.ingest.limits."""


@cache
def _bounded_loader():
    """PyYAML's safe loader, counting the nodes and aliases it composes (built on first use: PyYAML
    loads only for files with front matter)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            self._nodes = getattr(self, "_nodes", 0) + 1
            if self._nodes > MAX_YAML_NODES:
                raise _TooBig(f"has over {MAX_YAML_NODES} YAML nodes")
            if self.check_event(yaml.AliasEvent):
                self._aliases = getattr(self, "_aliases", 0) + 1
                if self._aliases > MAX_YAML_ALIASES:
                    raise _TooBig(f"has over {MAX_YAML_ALIASES} YAML aliases")
            return super().compose_node(parent, index)

    return BoundedLoader


def _plain(value, budget: list[int], depth: int):
    """YAML values as the strings (and lists and mappings of strings) that --meta filters compare.
    Aliases make YAML a graph: copying it out counts every item against `budget` and every level
    against MAX_YAML_DEPTH, so a shared list named a billion times is not copied a billion times."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig(f"holds over {MAX_YAML_ITEMS} values")
    if depth > MAX_YAML_DEPTH:
        raise _TooBig(f"nests deeper than {MAX_YAML_DEPTH} levels")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v, budget, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, budget, depth + 1) for k, v in value.items()}
    return "" if value is None else str(value)


def _scalar(value: object) -> str:
    return value if isinstance(value, str) else ""


def _parse_date(value: object) -> float | None:
    """Epoch seconds for an ISO date or datetime; naive values are UTC."""
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
