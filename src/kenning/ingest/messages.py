"""Message logs (.jsonl/.ndjson with `text` and `timestamp`): overlapping windows of a conversation.

A single chat message is usually too short to rank well and loses its context; a window of
consecutive messages from one conversation reads like a passage. Windows overlap (stride < window)
so an exchange cut at a window edge is still whole in the neighbouring window.
"""

from __future__ import annotations

from dataclasses import dataclass

from .chunk import Chunk, ChunkOptions, ParsedSource
from .jsonl import LineWarnings, load_object
from .source import iso_utc, parse_timestamp


@dataclass
class Message:
    line_no: int
    time: float
    conversation: str
    sender: str
    text: str
    id: str


def parse_messages(lines: list[str], doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Group by conversation, order by time, and emit windows of `message_window` messages."""
    warnings = LineWarnings(display)
    conversations: dict[str, list[Message]] = {}  # in order of first appearance in the file
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj, reason = load_object(line)
        if obj is None:
            warnings.add(line_no, reason or "invalid line")
            continue
        message, reason = _message(obj, line_no)
        if message is None:
            warnings.add(line_no, reason or "invalid message")
            continue
        conversations.setdefault(message.conversation, []).append(message)

    size = max(1, options.message_window)
    stride = max(1, min(options.message_stride, size))  # a stride above the window would skip messages
    chunks: list[Chunk] = []
    for name, messages in conversations.items():
        messages.sort(key=lambda m: (m.time, m.line_no))
        for start in range(0, len(messages), stride):
            window = messages[start : start + size]
            chunks.append(_window_chunk(name, window, doc_key))
            if start + size >= len(messages):
                break  # later windows would lie inside this one
    return ParsedSource(kind="messages", chunks=chunks, warnings=warnings.as_list())


def _message(obj: dict, line_no: int) -> tuple[Message | None, str | None]:
    text = obj.get("text")
    if text is None:
        return None, "missing text"
    if "timestamp" not in obj:
        return None, "missing timestamp"
    time = parse_timestamp(obj["timestamp"])
    if time is None:
        return None, f"unparseable timestamp {obj['timestamp']!r}"
    sender = _label(obj.get("sender"))
    conversation = _label(obj.get("conversation")) or sender or "messages"
    raw_id = obj.get("id")
    message_id = str(raw_id) if raw_id is not None and raw_id != "" else str(line_no)
    return Message(line_no, time, conversation, sender, _label(text), message_id), None


def _label(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _window_chunk(conversation: str, window: list[Message], doc_key: str) -> Chunk:
    senders: list[str] = []
    for m in window:
        if (m.sender or "unknown") not in senders:
            senders.append(m.sender or "unknown")
    return Chunk(
        title=conversation,
        body="\n".join(f"{m.sender or 'unknown'}: {m.text}" for m in window),
        doc_key=doc_key,
        start_line=min(m.line_no for m in window),
        end_line=max(m.line_no for m in window),
        time=window[-1].time,
        meta={
            "conversation": conversation,
            "message_ids": [m.id for m in window],
            "senders": senders,
            "time_start": iso_utc(window[0].time),
            "time_end": iso_utc(window[-1].time),
        },
    )
