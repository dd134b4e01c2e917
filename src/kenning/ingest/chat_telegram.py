"""Telegram Desktop exports (`result.json`, "Export chat history" or "Export Telegram data").

Two shapes: one chat ({"name", "type", "id", "messages": [...]}) or a whole account
({"chats": {"list": [chat, ...]}, "left_chats": {"list": [...]}, ...}). Each chat is a conversation
named by its `name` ("Saved Messages" for the chat with oneself; a chat named like another one is
also named by its id).

- A message's time is its `date_unixtime`; an export without it (older Telegram Desktop) gives
  `date`, a local time without a zone, read as UTC as every naive time in kenning is.
- Its text is `text`, a string or a list of strings and entity objects ({"type": "bold", "text":
  ...}) put back together. Media read as markers before the caption: "[photo]", "[file: NAME]",
  "[sticker 😀]", "[voice message]", "[poll: QUESTION]", "[location]", "[contact: NAME]". A
  forwarded message opens with "[forwarded from NAME]", an edited one ends " (edited)".
- Service messages (joins, calls, pins, title changes) are left out; so is a message with neither
  text nor media.
- Sender: `from`, else `from_id` (an account since deleted has no name). A message's id is its
  `id`; its line is its place among the file's messages, 1 to n, all chats counted in file order.

A .json file is read this way when its first bytes show one of the shapes (`looks_like_telegram`)
and the whole file confirms it; else it stays text. A file cut short is an error naming it.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from .chunk import ChunkOptions, ParsedSource
from .jsonl import LineWarnings, load_export
from .messages import Conversations, Message, conversation_chunks
from .source import parse_timestamp

_OBJECT_HEAD = re.compile(r"^\s*\{")
_ACCOUNT_KEYS = re.compile(r'"(?:chats|left_chats|personal_information)"\s*:\s*\{')
_CHAT_KEYS = (re.compile(r'"messages"\s*:\s*\['), re.compile(r'"type"\s*:\s*"'), re.compile(r'"id"\s*:'))
# media read by their kind alone (the file's name says nothing: "audio_2023-12-31.ogg")
MEDIA = {"voice_message": "voice message", "video_message": "video message", "animation": "GIF"}


def looks_like_telegram(head: str) -> bool:
    """True when the first bytes look like a whole-account export or a single chat's export."""
    if not _OBJECT_HEAD.match(head):
        return False
    return bool(_ACCOUNT_KEYS.search(head)) or all(key.search(head) for key in _CHAT_KEYS)


def parse_telegram(text: str, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource | None:
    """The export's chats in windows; None when the file is not a Telegram export after all."""
    data = load_export(text, display)
    chats = _chats(data)
    if chats is None:
        return None
    conversations = Conversations()
    warnings = LineWarnings(display, item="message")
    ordinal = 0
    for chat in chats:
        chat_id = chat.get("id")
        name = _label(chat.get("name")) or (
            "Saved Messages" if chat.get("type") == "saved_messages" else f"chat {chat_id}"
        )
        conversation = conversations.name(_label(chat_id) or name, name)
        for row in chat["messages"]:
            ordinal += 1
            if not isinstance(row, dict):
                warnings.add(ordinal, f"expected an object, got {type(row).__name__}")
                continue
            if row.get("type") != "message":
                continue  # a service message: someone joined, a call, a pin
            stamp = row.get("date_unixtime") or row.get("date")
            time = parse_timestamp(stamp)
            if time is None:
                warnings.add(ordinal, f"no readable date_unixtime or date ({str(stamp)[:40]!r})")
                continue
            body = _text(row)
            if body:
                sender = _label(row.get("from")) or _label(row.get("from_id"))
                message_id = _label(row.get("id")) or str(ordinal)
                conversations.add(Message(ordinal, time, conversation, sender, body, message_id))
    return ParsedSource(
        kind="messages",
        chunks=conversation_chunks(conversations.groups, doc_key, options),
        warnings=warnings.as_list(),
    )


def _chats(data) -> list[dict] | None:
    """The chats of either shape, each with a list of messages; None for another JSON file."""
    if not isinstance(data, dict):
        return None
    messages = data.get("messages")
    if isinstance(messages, list) and ("type" in data or "id" in data):
        kinds = [m.get("type") for m in messages[:10] if isinstance(m, dict)]
        return [data] if not messages or "message" in kinds or "service" in kinds else None
    sections = [data.get(key) for key in ("chats", "left_chats")]
    lists = [s["list"] for s in sections if isinstance(s, dict) and isinstance(s.get("list"), list)]
    if not lists:
        return None
    return [c for cs in lists for c in cs if isinstance(c, dict) and isinstance(c.get("messages"), list)]


def _label(value) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _text(row: dict) -> str:
    """Media marker, then the text (its pieces joined), with forwarding and editing noted."""
    parts = [_forwarded(row), _media(row), _flatten(row.get("text"))]
    if not (parts[1] or parts[2].strip()):
        return ""
    if row.get("edited") or row.get("edited_unixtime"):
        parts.append("(edited)")
    return " ".join(p.strip() for p in parts if p.strip())


def _flatten(text) -> str:
    """`text` as a string: a list's strings and its entities' `text`, in order."""
    if isinstance(text, str):
        return text
    if not isinstance(text, list):
        return ""
    pieces = []
    for piece in text:
        if isinstance(piece, str):
            pieces.append(piece)
        elif isinstance(piece, dict) and isinstance(piece.get("text"), str):
            pieces.append(piece["text"])
    return "".join(pieces)


def _forwarded(row: dict) -> str:
    source = _label(row.get("forwarded_from"))
    return f"[forwarded from {source}]" if source else ""


def _media(row: dict) -> str:
    """A marker for what the message carries besides text ("" for nothing)."""
    if "photo" in row:
        return "[photo]"
    kind = _label(row.get("media_type"))
    if kind == "sticker":
        emoji = _label(row.get("sticker_emoji"))
        return f"[sticker {emoji}]" if emoji else "[sticker]"
    if kind in MEDIA:
        return f"[{MEDIA[kind]}]"
    if "file" in row or kind:
        name = _label(row.get("file_name")) or _file_name(row.get("file"))
        return f"[file: {name}]" if name else f"[{kind.replace('_', ' ') or 'file'}]"
    if isinstance(row.get("poll"), dict):
        return f"[poll: {_label(row['poll'].get('question'))}]"
    if "location_information" in row:
        return "[location]"
    contact = row.get("contact_information")
    if isinstance(contact, dict):
        name = " ".join(_label(contact.get(k)) for k in ("first_name", "last_name")).strip()
        return f"[contact: {name}]" if name else "[contact]"
    return ""


def _file_name(path) -> str:
    """The name of an exported file's path; "" when the export left the file out ("(File not
    included. Change data exporting settings to download.)")."""
    if not isinstance(path, str) or not path.strip() or path.startswith("("):
        return ""
    return PurePath(path.replace("\\", "/")).name
