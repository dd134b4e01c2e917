"""Message logs: overlapping windows of a conversation, for every chat format kenning reads.

A single chat message is usually too short to rank well and loses its context; a window of
consecutive messages from one conversation reads like a passage. Windows overlap (stride < window)
so an exchange cut at a window edge is still whole in the neighbouring window. Messages are ordered
by time whatever the file's order, and a run of identical messages from one sender ("ok", "ok",
"ok") reads as one, marked with how many it stands for.

Every chat reader (this module's JSON lines, and WhatsApp, Slack, Telegram and iMessage exports)
turns its format into `Message`s grouped by conversation and hands them to `conversation_chunks`.
A window's body has one line per message, "sender: text" (a message's own line breaks become
spaces), and its metadata says, line by line, each message's id, sender and time (`messages`), so a
hit can show the message that matched, and who wrote it when, among its neighbours.

The JSON lines shape (.jsonl/.ndjson, one message per line):

Accepted fields (kenning.ingest.jsonl.MESSAGE_FIELDS; the first present wins): the text (`text`,
`content`, `message`, `body`) and the time (`timestamp`, `time`, `ts`, `date`, `created_at`,
`sent_at`: ISO 8601, or epoch seconds or milliseconds) are required; the sender (`sender`, `from`,
`author`, `user`, `role`, `name`), the conversation (`conversation`, `thread`, `channel`, `chat`,
`room`) and an id (`id`, `message_id`, `msg_id`, `uuid`; else the line number) are optional.
"""

from __future__ import annotations

from dataclasses import dataclass

from .chunk import Chunk, ChunkOptions, ParsedSource
from .jsonl import MESSAGE_FIELDS, LineWarnings, load_object
from .source import parse_timestamp


@dataclass
class Message:
    line_no: int
    time: float
    conversation: str
    sender: str
    text: str
    id: str
    ids: list[str] | None = None  # every message a collapsed run stands for
    repeats: int = 1


class Conversations:
    """Messages grouped by conversation, ready for `conversation_chunks`. Two conversations with one
    name (two chats called "Family") stay apart: the later one is also named by its own key."""

    def __init__(self) -> None:
        self.groups: dict[str, list[Message]] = {}  # in order of first appearance
        self._names: dict[object, str] = {}  # a conversation's key -> the name it is shown by
        self._taken: set[str] = set()

    def name(self, key: object, name: str) -> str:
        """The name conversation `key` goes by: `name`, unless another conversation has it."""
        if key not in self._names:
            unique, n = name, 1
            while unique in self._taken:
                n += 1
                unique = f"{name} ({key})" if n == 2 else f"{name} ({key}, {n})"
            self._names[key] = unique
            self._taken.add(unique)
        return self._names[key]

    def add(self, message: Message) -> None:
        self.groups.setdefault(message.conversation, []).append(message)


def parse_messages(lines: list[str], doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """A JSON lines message log: grouped by conversation, ordered by time, in windows."""
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
    return ParsedSource(
        kind="messages",
        chunks=conversation_chunks(conversations, doc_key, options),
        warnings=warnings.as_list(),
    )


def conversation_chunks(
    conversations: dict[str, list[Message]], doc_key: str, options: ChunkOptions
) -> list[Chunk]:
    """Each conversation's messages ordered by time (then by `line_no`, their order in the source),
    repeats collapsed, in overlapping windows of `message_window` messages."""
    size = max(1, options.message_window)
    stride = max(1, min(options.message_stride, size))  # a stride above the window would skip messages
    chunks: list[Chunk] = []
    for name, messages in conversations.items():
        messages = _collapse_repeats(sorted(messages, key=lambda m: (m.time, m.line_no)))
        lines = [_line(m) for m in messages]  # each message's line made once, for every window it is in
        for start in range(0, len(messages), stride):
            window = messages[start : start + size]
            chunks.append(_window_chunk(name, window, lines[start : start + size], doc_key))
            if start + size >= len(messages):
                break  # later windows would lie inside this one
    return chunks


def _collapse_repeats(messages: list[Message]) -> list[Message]:
    """Consecutive identical messages from one sender read as one."""
    out: list[Message] = []
    for m in messages:
        last = out[-1] if out else None
        if last is not None and last.sender == m.sender and last.text == m.text:
            last.repeats += 1
            last.ids = [*(last.ids or [last.id]), m.id]
            continue
        out.append(m)
    return out


def _field(obj: dict, name: str):
    """The value of the first of the field's names the object has (not null), or None."""
    for key in MESSAGE_FIELDS[name]:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def _message(obj: dict, line_no: int) -> tuple[Message | None, str | None]:
    text = _field(obj, "text")
    if text is None:
        return None, "missing text (" + ", ".join(MESSAGE_FIELDS["text"]) + ")"
    stamp = _field(obj, "timestamp")
    if stamp is None:
        return None, "missing timestamp (" + ", ".join(MESSAGE_FIELDS["timestamp"]) + ")"
    time = parse_timestamp(stamp)
    if time is None:
        return None, f"unparseable timestamp {stamp!r}"
    sender = _label(_field(obj, "sender"))
    conversation = _label(_field(obj, "conversation")) or sender or "messages"
    raw_id = _field(obj, "id")
    message_id = str(raw_id) if raw_id is not None and raw_id != "" else str(line_no)
    return Message(line_no, time, conversation, sender, _label(text), message_id), None


def _label(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _line(m: Message) -> str:
    """A message's line in a window's body: "sender: text", its own line breaks made spaces."""
    return f"{m.sender or 'unknown'}: {' '.join(m.text.split())}" + (
        f" (×{m.repeats})" if m.repeats > 1 else ""
    )


def _window_chunk(conversation: str, window: list[Message], lines: list[str], doc_key: str) -> Chunk:
    senders: list[str] = []
    for m in window:
        if (m.sender or "unknown") not in senders:
            senders.append(m.sender or "unknown")
    return Chunk(
        title=conversation,
        body="\n".join(lines),
        doc_key=doc_key,
        start_line=min(m.line_no for m in window),
        end_line=max(m.line_no for m in window),
        time=window[-1].time,
        meta={
            "conversation": conversation,
            "message_ids": [i for m in window for i in (m.ids or [m.id])],
            "senders": senders,
            # line by line: each message's id, sender index (in `senders`) and time (epoch seconds)
            "messages": [[m.id, senders.index(m.sender or "unknown"), round(m.time)] for m in window],
        },
    )
