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
from datetime import UTC, datetime

from kenning.analysis.analyzer import TOKEN_RE

MAX_MATCHED = 3  # matched messages shown per hit
CONTEXT = 1  # messages shown before and after each matched one
MAX_TEXT = 400  # characters of a message shown
MAX_LINES = 200  # a window's lines read at most
EARLIEST, LATEST = -6e10, 2.5e11  # epoch seconds a date can be shown for (years 68 to 9892)
_REPEATS = re.compile(r" \(×\d+\)$")


def iso_utc(epoch: float) -> str:
    """ISO 8601 in UTC, for showing times stored as epoch seconds."""
    return datetime.fromtimestamp(epoch, UTC).isoformat()


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
    said = line_records(meta, len(lines))
    out = []
    for j in shown:
        sender, text = _split(lines[j])
        message_id, named, epoch = said[j]
        time = iso_utc(epoch) if epoch is not None else None
        out.append(
            {
                "id": message_id,
                "sender": named or sender,
                "time": time,
                "text": text[:MAX_TEXT],
                "matched": j in matched,
            }
        )
    return out


def line_records(meta: dict, lines: int) -> list[tuple[str | None, str | None, float | None]]:
    """Each of a chat window's `lines` messages as (id, sender, time in epoch seconds) from its
    metadata, which comes from the index (untrusted): None for what is missing, malformed, or not
    line by line with the body."""
    rows = meta.get("messages")
    senders = meta.get("senders")
    if not isinstance(rows, list) or len(rows) != lines:
        return [(None, None, None)] * lines
    out: list[tuple[str | None, str | None, float | None]] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 3:
            out.append((None, None, None))
            continue
        message_id, index, time = row
        message_id = str(message_id)[:MAX_TEXT] if isinstance(message_id, str | int) else None
        named = None
        if isinstance(index, int) and isinstance(senders, list) and 0 <= index < len(senders):
            named = str(senders[index])[:MAX_TEXT]
        dated = isinstance(time, int | float) and not isinstance(time, bool) and EARLIEST < time < LATEST
        out.append((message_id, named, float(time) if dated else None))
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
