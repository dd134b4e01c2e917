"""The unit every format parser produces: a Chunk, plus the shared windowing of long text.

A chunk is what kenning ranks. It keeps its raw text (so snippets and substring matches are exact)
and where it came from (heading path, file, line or page range, message ids and times).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from kenning.store.records import meta_json


class IngestError(Exception):
    """A file that cannot be read; the message names the file and the reason."""


@dataclass
class ChunkOptions:
    """How long text is cut into overlapping windows (counted in words), and the most characters any
    chunk of any format may hold (a 50 MB file with no newline must not become one chunk)."""

    window_words: int = 400
    overlap_words: int = 60
    # chat logs: windows of 4 messages, a new one every 2, so each message is in two windows and an
    # exchange cut at one window's edge is whole in the next (benchmarks/chat_units.py: the message
    # a reader looks for is shown in the first hit more often than with windows of 8 or 6)
    message_window: int = 4
    message_stride: int = 2
    max_chars: int = 8000


@dataclass
class Chunk:
    """One retrievable piece of a source.

    title: the heading path shown and indexed as the title field ("Book > Chapter 26. ...").
    body: the raw text of the piece, exactly as in the source.
    doc_key: the document this chunk belongs to (a source path, or a BEIR `_id`).
    start_line/end_line: 1-based inclusive line range in the source file, when it has lines.
    page: 1-based PDF page.
    time: document time as epoch seconds (message time for message logs), when known.
    meta: format-specific details (message ids, conversation, language, front matter, ...).
    """

    title: str
    body: str
    doc_key: str
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    time: float | None = None
    meta: dict = field(default_factory=dict)

    def content_hash(self) -> str:
        """Identity of what gets indexed: title, body and metadata, but not the position in the file.

        Leaving positions (and surrounding blank lines) out means a section that only moved keeps its
        identity, and so its chunk id.
        """
        h = hashlib.sha256()
        h.update(self.title.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(self.body.strip().encode("utf-8", "surrogatepass"))  # blank lines around it move with it
        h.update(b"\x00")
        h.update(meta_json(self.meta, sort_keys=True).encode())
        h.update(b"\x00")
        h.update(repr(self.time).encode())
        return h.hexdigest()[:32]


@dataclass
class ParsedSource:
    """What a parser returns for one file: its chunks, its kind, and any non-fatal warnings."""

    kind: str
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)


def bounded(chunks: list[Chunk], max_chars: int) -> list[Chunk]:
    """Every chunk at most `max_chars` long: a longer one is cut into pieces at a line break, else at
    a space, else where it must be, each keeping its title, metadata and the lines it covers."""
    out: list[Chunk] = []
    for chunk in chunks:
        if len(chunk.body) <= max_chars:
            out.append(chunk)
            continue
        text, start = chunk.body, 0
        lines_before = 0  # newlines in text[:start], counted piece by piece (not from 0 each time)
        while start < len(text):
            end = min(len(text), start + max_chars)
            if end < len(text):
                floor = start + max_chars // 2  # never cut a piece to less than half the cap
                cut = max(text.rfind("\n", floor, end), text.rfind(" ", floor, end))
                end = cut + 1 if cut > 0 else end
            piece = text[start:end]
            first = chunk.start_line + lines_before if chunk.start_line is not None else None
            last = first + piece.rstrip("\n").count("\n") if first is not None else None
            if piece.strip():
                out.append(
                    Chunk(
                        chunk.title,
                        piece,
                        chunk.doc_key,
                        first,
                        last,
                        chunk.page,
                        chunk.time,
                        dict(chunk.meta),
                    )
                )
            lines_before += piece.count("\n")
            start = end
    return out


_SPACE = re.compile(r"\s")
_WORD_SLICE = 1 << 16


def word_count(line: str) -> int:
    """len(line.split()), without holding a string per word: a 60 MB line with no newline would
    make ten million of them at once."""
    if len(line) <= _WORD_SLICE:
        return len(line.split())
    total = start = 0
    while start < len(line):
        space = _SPACE.search(line, start + _WORD_SLICE)  # cut where a word ends
        end = space.start() if space else len(line)
        total += len(line[start:end].split())
        start = end
    return total


def split_lines_into_windows(
    lines: list[str], first_line: int, options: ChunkOptions, lead: int = 0
) -> list[tuple[int, int, str]]:
    """Cut a run of lines into overlapping windows of about `window_words` words.

    Cuts fall on line boundaries so every window keeps an exact line range. Returns
    (start_line, end_line, text) triples, lines numbered from `first_line`. A single line longer
    than the window stays whole: splitting inside a line would lose the exact line range. The first
    `lead` lines (a section's headings, which its title already says) open the first window and
    count no words, so the windows cut where they would without them.
    """
    counts = [0 if i < lead else word_count(line) for i, line in enumerate(lines)]
    if sum(counts) <= options.window_words:
        return [(first_line, first_line + len(lines) - 1, "\n".join(lines))]
    windows = []
    start = 0
    n = len(lines)
    while start < n:
        words = 0
        end = start
        while end < n and (words == 0 or words + counts[end] <= options.window_words):
            words += counts[end]
            end += 1
        windows.append((first_line + start, first_line + end - 1, "\n".join(lines[start:end])))
        if end >= n:
            break
        # Step back over whole lines until about `overlap_words` words are repeated.
        back = end
        overlap = 0
        while back - 1 > start and overlap + counts[back - 1] <= options.overlap_words:
            back -= 1
            overlap += counts[back]
        start = back if back > start else end
    return windows
