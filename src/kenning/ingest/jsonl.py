"""Shared reading of JSON-lines files: which kind they are, and per-line warnings; and of the whole
JSON files chat apps export (`load_export`).

A .jsonl can be a message log or a BEIR corpus; the first valid object tells which, so a few bad
lines at the top do not change how the whole file is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from .chunk import IngestError

JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})

# The field names a message log may use, first match wins (exports from chat tools differ).
MESSAGE_FIELDS = {
    "text": ("text", "content", "message", "body"),
    "timestamp": ("timestamp", "time", "ts", "date", "created_at", "sent_at"),
    "sender": ("sender", "from", "author", "user", "role", "name"),
    "conversation": ("conversation", "thread", "channel", "chat", "room"),
    "id": ("id", "message_id", "msg_id", "uuid"),
}


def first_field(obj: dict, names: tuple[str, ...]) -> str | None:
    """The first of `names` that the object has (with a value that is not null)."""
    return next((n for n in names if obj.get(n) is not None), None)


MAX_LINE_WARNINGS = 20  # beyond this a broken file would drown the user; the rest are counted


def sniff_jsonl(lines: Iterable[str]) -> str | None:
    """'messages' or 'beir' from the first line holding a JSON object; None if neither."""
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "_id" in obj and "text" in obj:
            return "beir"
        if first_field(obj, MESSAGE_FIELDS["text"]) and first_field(obj, MESSAGE_FIELDS["timestamp"]):
            return "messages"
        return None
    return None


class LineWarnings:
    """Collects `{display}:{line}: reason` warnings, keeping the first few and counting the rest.
    With `item` (a source without lines, as a JSON export), they read `{display}: {item} {n}: reason`."""

    def __init__(self, display: str, item: str | None = None):
        self.display = display
        self.item = item
        self.kept: list[str] = []
        self.dropped = 0

    def add(self, line_no: int, reason: str) -> None:
        if len(self.kept) < MAX_LINE_WARNINGS:
            where = f"{self.display}: {self.item} {line_no}" if self.item else f"{self.display}:{line_no}"
            self.kept.append(f"{where}: {reason}")
        else:
            self.dropped += 1

    def as_list(self) -> list[str]:
        if self.dropped:
            return [*self.kept, f"{self.display}: {self.dropped} more bad {self.item or 'line'}s skipped"]
        return list(self.kept)


def load_export(text: str, display: str):
    """A whole JSON file's value; IngestError naming the file when it is not JSON (an export cut
    short, as a download that stopped) or nests too deeply."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(f"{display}: not valid JSON ({exc.msg} at line {exc.lineno}); cut short?") from None
    except RecursionError:
        raise IngestError(f"{display}: JSON nested too deeply") from None
    except ValueError as exc:  # a number of more digits than Python converts (4,300)
        raise IngestError(f"{display}: not valid JSON ({str(exc).split(':')[0]})") from None


def load_object(line: str) -> tuple[dict | None, str | None]:
    """(object, None) for a JSON object line, else (None, reason)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg})"
    except (ValueError, RecursionError):
        return None, "invalid JSON"
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    return obj, None
