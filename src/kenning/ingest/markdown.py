"""Markdown: one chunk per section, titled by its heading path.

The heading path ("Book > Chapter 26") is what makes a section findable and recognisable in results,
so sections are cut at ATX headings, skipping '#' lines inside fenced code where they are comments.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from .chunk import Chunk, ChunkOptions, ParsedSource
from .source import split_source_lines, windowed_chunks

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_KEY_VALUE = re.compile(r"^([A-Za-z0-9_][\w .-]*?)\s*:(?:\s+(.*))?$")


def parse_markdown(text: str, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Split a Markdown document into heading-path sections (long ones windowed)."""
    lines = split_source_lines(text)
    warnings: list[str] = []
    front_matter, body_start = _read_front_matter(lines)
    time = None
    if front_matter and front_matter.get("date"):
        time = _parse_date(front_matter["date"])
        if time is None:
            warnings.append(f"{display}: front matter date {front_matter['date']!r} is not an ISO date")
    meta = {"front_matter": front_matter} if front_matter is not None else {}

    fallback_title = _scalar(front_matter.get("title")) if front_matter else ""
    fallback_title = fallback_title or Path(display).stem

    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []  # (level, heading text) of the open headings
    section_title = fallback_title
    heading_line: int | None = None  # 0-based index of the current section's heading
    body_first = body_start  # 0-based index of the current section's first body line

    def close(end: int) -> None:
        chunks.extend(
            windowed_chunks(
                lines[body_first:end],
                body_first + 1,
                options,
                title=section_title,
                doc_key=doc_key,
                start_line=heading_line + 1 if heading_line is not None else None,
                time=time,
                meta=meta,
            )
        )

    fence: str | None = None
    for i in range(body_start, len(lines)):
        line = lines[i]
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and _closes(fence_match.group(1), fence, line):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        m = _HEADING.match(line)
        if not m:
            continue
        close(i)
        level = len(m.group(1))
        heading = _CLOSING_HASHES.sub("", (m.group(2) or "").strip()).strip()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        section_title = " > ".join(h for _, h in stack if h) or fallback_title
        heading_line = i
        body_first = i + 1
    close(len(lines))
    return ParsedSource(kind="markdown", chunks=chunks, warnings=warnings)


def _closes(marker: str, fence: str, line: str) -> bool:
    """A closing fence uses the opening character, is at least as long, and has nothing after it."""
    return marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip(marker[0] + " \t")


def _read_front_matter(lines: list[str]) -> tuple[dict | None, int]:
    """Front matter between a leading '---' and the next '---' (or '...'); returns (data, body start)."""
    if not lines or lines[0].strip() != "---":
        return None, 0
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return _parse_simple_yaml(lines[1:end]), end + 1
    return None, 0  # no closing fence: it was a thematic break, not front matter


def _parse_simple_yaml(lines: list[str]) -> dict:
    """The subset of YAML front matter actually used in notes: scalars, [a, b] and '- item' lists.

    Nested mappings and multi-line strings are ignored rather than misread.
    """
    data: dict = {}
    list_key: str | None = None  # the last `key:` written without a value; `- item` lines belong to it
    for raw in lines:
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped == "-" or stripped.startswith("- "):
            if list_key is not None:
                if not isinstance(data[list_key], list):
                    data[list_key] = []
                data[list_key].append(_unquote(_strip_comment(stripped[1:].strip())))
            continue
        if raw[0] in " \t":
            continue  # nested content we do not interpret
        m = _KEY_VALUE.match(stripped)
        list_key = None
        if not m:
            continue
        key, value = m.group(1).strip(), _strip_comment((m.group(2) or "").strip())
        if not value or value.startswith("#"):
            data[key] = ""
            list_key = key
        elif value.startswith("[") and value.endswith("]"):
            inner = value[1:-1].strip()
            data[key] = [_unquote(v.strip()) for v in inner.split(",") if v.strip()] if inner else []
        else:
            data[key] = _unquote(value)
    return data


def _strip_comment(value: str) -> str:
    if value[:1] in "\"'":
        return value
    return re.sub(r"\s+#.*$", "", value)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


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
