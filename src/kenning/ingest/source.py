"""Helpers shared by the text-based parsers: decoding bytes, splitting lines, windowing into chunks.

Kept in one place so every format numbers lines the same way; line numbers are what lets a result
point back into the file exactly.
"""

from __future__ import annotations

import codecs
import copy
from datetime import UTC, datetime

from .chunk import Chunk, ChunkOptions, split_lines_into_windows

UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def decode_text(data: bytes, display: str) -> tuple[str, list[str]]:
    """Decode as UTF-8 (BOM dropped), or as UTF-16 when a UTF-16 byte order mark says so; bad bytes
    are replaced and reported, never fatal.

    A stray Latin-1 byte should not keep a whole file out of the index, but the user should know
    where it is.
    """
    if data.startswith(UTF16_BOMS):
        try:
            return data.decode("utf-16"), []
        except UnicodeDecodeError as exc:
            warning = f"{display}: invalid UTF-16 at byte offset {exc.start}; replaced with U+FFFD"
            return data.decode("utf-16", errors="replace"), [warning]
    offset = 0
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
        offset = len(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        warning = (
            f"{display}: invalid UTF-8 at byte offset {exc.start + offset}; "
            "undecodable bytes were replaced with U+FFFD"
        )
        return data.decode("utf-8", errors="replace"), [warning]


def split_source_lines(text: str) -> list[str]:
    """Split on line endings the way editors number lines (\\n, \\r\\n or a lone \\r).

    str.splitlines() would also split on form feeds and Unicode separators, shifting line numbers.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def windowed_chunks(
    lines: list[str],
    first_line: int,
    options: ChunkOptions,
    *,
    title: str,
    doc_key: str,
    time: float | None = None,
    page: int | None = None,
    meta: dict | None = None,
    keep_lines: bool = True,
    lead: int = 0,
) -> list[Chunk]:
    """Chunks for a run of lines: one if short, overlapping windows with the same title if long.
    Each chunk's text is exactly its lines; whitespace-only windows are dropped. The first `lead`
    lines are headings: they open the first window without counting toward its size."""
    if not any(line.strip() for line in lines):
        return []
    chunks = []
    for s, e, text in split_lines_into_windows(lines, first_line, options, lead):
        if not text.strip():
            continue
        chunks.append(
            Chunk(
                title=title,
                body=text,
                doc_key=doc_key,
                start_line=s if keep_lines else None,
                end_line=e if keep_lines else None,
                page=page,
                time=time,
                meta=copy.deepcopy(meta) if meta else {},
            )
        )
    return chunks


def parse_timestamp(value: object) -> float | None:
    """Epoch seconds from an ISO 8601 string or an epoch number; None when not understood.

    Naive times are taken as UTC. Numbers too large to be seconds (beyond year 5000) are read as
    milliseconds, the other common export format.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits (a crafted export)
            return None
    elif isinstance(value, str):
        raw = value.strip()
        if not raw:
            return None
        try:
            number = float(raw)
        except ValueError:
            try:
                dt = datetime.fromisoformat(raw)
            except ValueError:
                return None
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            try:
                return dt.timestamp()
            except (OverflowError, OSError, ValueError):
                return None
    else:
        return None
    if number != number or number in (float("inf"), float("-inf")):
        return None
    if abs(number) >= 1e11:
        number /= 1000.0
    try:
        datetime.fromtimestamp(number, UTC)  # must be showable as a date later
    except (OverflowError, OSError, ValueError):
        return None
    return number
