"""The messages a chat hit shows: the ones that matched, each with its sender and time, among the
messages around them.

A chat log is indexed in windows of several messages (kenning.ingest.messages), one body line per
message ("sender: text") and, in the window's metadata, each line's id, sender and time. A reader
of a hit wants the message that matched, not a window flattened into one line, so a hit on a window
lists the MAX_MATCHED of its messages that hold the most of the query's terms, each with CONTEXT
messages before and after it, in order.

The metadata comes from the index, which is untrusted: lines whose metadata is missing or malformed
still show, without an id or a time; every text is bounded.
"""

from __future__ import annotations

import re

from kenning.analysis.analyzer import TOKEN_RE
from kenning.ingest.source import iso_utc

MAX_MATCHED = 3  # matched messages shown per hit
CONTEXT = 1  # messages shown before and after each matched one
MAX_TEXT = 400  # characters of a message shown
MAX_LINES = 200  # a window's lines read at most
_REPEATS = re.compile(r" \(×\d+\)$")


def is_message_window(meta: object) -> bool:
    """Whether a chunk is a window of a chat log (its metadata lists its messages' senders)."""
    return isinstance(meta, dict) and isinstance(meta.get("senders"), list) and "conversation" in meta


def message_lines(body: str, meta: dict, terms: set[str], analyzer) -> list[dict]:
    """The messages to show for a hit on a chat window: each matched one (it holds a query term)
    with its neighbours, as {"id", "sender", "time", "text", "matched"}; [] when none matched."""
    lines = body.split("\n")[:MAX_LINES]
    held = [_held(_text_of(line), terms, analyzer) for line in lines]
    best = sorted((i for i in range(len(lines)) if held[i]), key=lambda i: (-held[i], i))
    matched = sorted(best[:MAX_MATCHED])  # the messages holding most of the query's terms, in order
    shown = sorted({j for i in matched for j in range(i - CONTEXT, i + CONTEXT + 1) if 0 <= j < len(lines)})
    rows = meta.get("messages")
    senders = meta.get("senders")
    out = []
    for j in shown:
        sender, text = _split(lines[j])
        message_id, time = None, None
        row = rows[j] if isinstance(rows, list) and len(rows) == len(lines) and j < len(rows) else None
        if isinstance(row, list) and len(row) == 3:
            message_id = str(row[0])[:MAX_TEXT] if isinstance(row[0], str | int) else None
            if isinstance(row[2], int | float) and not isinstance(row[2], bool) and -6e10 < row[2] < 2.5e11:
                time = iso_utc(row[2])
            index = row[1]
            if isinstance(index, int) and isinstance(senders, list) and 0 <= index < len(senders):
                sender = str(senders[index])[:MAX_TEXT]
        said = {"id": message_id, "sender": sender, "time": time, "text": text[:MAX_TEXT]}
        out.append({**said, "matched": j in matched})
    return out


def _split(line: str) -> tuple[str, str]:
    """A body line's sender and text ("Bob: see you" -> ("Bob", "see you"))."""
    sender, sep, text = line.partition(": ")
    return (sender[:MAX_TEXT], text) if sep else ("", line)


def _text_of(line: str) -> str:
    return _REPEATS.sub("", _split(line)[1])


def _held(text: str, terms: set[str], analyzer) -> int:
    """How many of the query's terms a message holds (each counted once)."""
    raws = TOKEN_RE.findall(text[: 4 * MAX_TEXT])
    return len({t for raw in raws for t in analyzer.token_terms(raw) if t in terms})
