"""Slack workspace exports: a channel's day of messages per file.

An export (unzipped) holds `channels.json`, `users.json` (and `groups.json`, `dms.json`,
`mpims.json`, `integration_logs.json` as the plan gives them) at its root, and one folder per
channel with one file per day, `general/2023-12-31.json`: a JSON array of message objects
({"type": "message", "user": "U123", "text": "...", "ts": "1704059000.000200", ...}).

- A day file is read on its own, as the walk hands it over: its messages, in windows, make the
  conversation of its folder ("#general"; a direct message's folder, named in `dms.json` or
  `mpims.json`, is named by its members). Windows do not cross from one day into the next.
- Names: a user id becomes the person's display name, else real name, else user name, from the
  export root's `users.json` (the folder above the channel's; read within the same size bound, once
  per version of it); without it, from the profile Slack copies into each message, else the id.
  Mentions `<@U123>` read "@Name", channel links `<#C1|general>` "#general", links `<url|label>`
  "label (url)", `<!here>` "@here"; the HTML escapes Slack writes (&amp; &lt; &gt;) are undone.
- An edited message ends " (edited)"; each file shared adds "[file: NAME]"; reactions are kept
  after the text, " [reactions: :+1: ×2]", since who agreed with what is part of the exchange.
- Messages about the channel rather than in it (joins, leaves, topic and name changes, pins) are
  left out; a bot's message keeps its bot's name as sender.
- A message's id is its `ts` (Slack's own message id), its line its position in the day's array.
- The export's metadata files are not indexed: they are lists of ids and settings, read for names,
  and reported as skipped (`slack_file` tells them by name and content).
- A name added in `users.json` reaches a day file indexed before it when that file is read again
  (`kenning index --force`): an unchanged day file is not re-read.
"""

from __future__ import annotations

import functools
import json
import re
import stat
from pathlib import Path

from .chunk import ChunkOptions, IngestError, ParsedSource
from .jsonl import LineWarnings, load_export
from .limits import FileSkipped, read_bounded
from .messages import Message, conversation_chunks
from .source import decode_text

DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
METADATA_FILES = frozenset(
    {"channels.json", "users.json", "groups.json", "dms.json", "mpims.json", "integration_logs.json"}
)
_DAY_HEAD = re.compile(r"^\s*\[\s*\{")
_TS = re.compile(r'"ts"\s*:\s*"\d+(?:\.\d+)?"')
_TYPE_MESSAGE = re.compile(r'"type"\s*:\s*"message"')
_LIST_HEAD = re.compile(r'^\s*\[\s*(?:\]|\{\s*"[a-z_]+"\s*:)')  # an array: empty, or of objects
_METADATA_KEYS = re.compile(r'"(?:id|name)"\s*:')
_METADATA_OF = re.compile(r'"(?:profile|real_name|created|members|is_channel)"\s*:')
_LOGS_HEAD = re.compile(r'^\s*\{\s*"logs"\s*:\s*\[')
_MARKUP = re.compile(r"<([^<>\n]{1,2000})>")
# subtypes that are messages: the rest (channel_join, channel_topic, pinned_item...) are events
MESSAGE_SUBTYPES = frozenset(
    {None, "bot_message", "thread_broadcast", "file_share", "me_message", "file_comment", "reply_broadcast"}
)


def slack_file(path: Path, head: str) -> str | None:
    """Which file of a Slack export this is, told by its name and first bytes: "day" for a channel's
    day file, "metadata" for one of the export's lists (users, channels...), None for no such file."""
    name = path.name.lower()
    if DAY_FILE.match(name):
        if _DAY_HEAD.match(head) and _TS.search(head) and _TYPE_MESSAGE.search(head):
            return "day"
        return None
    if name in METADATA_FILES:
        if name == "integration_logs.json":
            return "metadata" if _LOGS_HEAD.match(head) else None
        if _LIST_HEAD.match(head) and (
            head.strip() == "[]" or (_METADATA_KEYS.search(head) and _METADATA_OF.search(head))
        ):
            return "metadata"
    return None


def skip_metadata(display: str) -> FileSkipped:
    return FileSkipped(f"{display}: a Slack export's list of ids and settings (read for names, not indexed)")


def parse_slack_day(
    text: str, path: Path, doc_key: str, display: str, options: ChunkOptions, max_bytes: int
) -> ParsedSource:
    """One day file of a channel: its messages, in windows."""
    rows = load_export(text, display)
    if not isinstance(rows, list):
        raise IngestError(f"{display}: a Slack day file holds a JSON array of messages")
    export = _export(path.parent.parent, max_bytes)
    folder = path.parent.name
    conversation = export.dm_names.get(folder) or f"#{folder}"
    warnings = LineWarnings(display, item="message")
    messages: list[Message] = []
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            warnings.add(n, f"expected an object, got {type(row).__name__}")
            continue
        subtype = row.get("subtype")
        if row.get("type") != "message" or not (subtype is None or isinstance(subtype, str)):
            continue
        if subtype not in MESSAGE_SUBTYPES:
            continue  # an event: someone joined, the topic changed
        ts = row.get("ts")
        try:
            time = float(ts)
        except (TypeError, ValueError, OverflowError):
            warnings.add(n, f"no readable ts ({str(ts)[:40]!r})")
            continue
        if not 0 <= time < 1e11:
            warnings.add(n, f"ts out of range ({str(ts)[:40]!r})")
            continue
        body = _text(row, export.names)
        if body:
            messages.append(Message(n, time, conversation, _sender(row, export.names), body, str(ts)))
    unread = [f"{display}: {why}; user ids shown instead of names" for why in export.unread]
    return ParsedSource(
        kind="messages",
        chunks=conversation_chunks({conversation: messages} if messages else {}, doc_key, options),
        warnings=[*unread, *warnings.as_list()],
    )


class _Export:
    """What a day file needs from its export's root: names of users, and of direct messages."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.dm_names: dict[str, str] = {}  # a direct message's folder -> its members' names
        self.unread: list[str] = []  # why users.json, present, could not be read


def _export(root: Path, max_bytes: int) -> _Export:
    files = ("users.json", "dms.json", "mpims.json")
    return _read_export(*(_version(root / name) for name in files), max_bytes)


LINKED = -2  # _version's size for a symbolic link: not followed


def _version(path: Path) -> tuple[str, int, int]:
    """A file's path with its size and modification time (-1: absent; LINKED: a symbolic link, which
    is not followed, since it may lead outside the folders being indexed): a changed file is read
    again."""
    try:
        info = path.lstat()
    except OSError:
        return str(path), -1, -1
    if stat.S_ISLNK(info.st_mode):
        return str(path), LINKED, LINKED
    return str(path), info.st_size, info.st_mtime_ns


@functools.lru_cache(maxsize=2)  # the day files of one export, read one after another, share it
def _read_export(users: tuple, dms: tuple, mpims: tuple, max_bytes: int) -> _Export:
    export = _Export()
    rows, why = _read_list(users[0], users[1], max_bytes)
    if why:
        export.unread.append(why)
    for user in rows:
        if isinstance(user, dict) and isinstance(user.get("id"), str):
            profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}
            name = _first(profile.get("display_name"), profile.get("real_name"), user.get("real_name"))
            export.names[user["id"]] = name or _first(user.get("name")) or user["id"]
    for (path, size, _), key in ((dms, "id"), (mpims, "name")):
        for dm in _read_list(path, size, max_bytes)[0]:
            if isinstance(dm, dict) and isinstance(dm.get(key), str) and isinstance(dm.get("members"), list):
                members = [export.names.get(m, m) for m in dm["members"][:50] if isinstance(m, str)]
                export.dm_names[dm[key]] = ", ".join(members) or dm[key]
    return export


def _read_list(path: str, size: int, max_bytes: int) -> tuple[list, str | None]:
    """A metadata file's list ([] when absent) and why it could not be read, when it could not."""
    name = Path(path).name
    if size == LINKED:
        return [], f"{name} is a symbolic link: not followed"
    if size < 0:
        return [], None  # names come from the profiles in the messages, else ids
    try:
        text, _ = decode_text(read_bounded(Path(path), max_bytes, name), name)
        rows = json.loads(text)
    except IngestError as exc:
        return [], str(exc)
    except (ValueError, RecursionError):
        return [], f"{name} is not valid JSON"
    if not isinstance(rows, list):
        return [], f"{name} is not a JSON array"
    return rows, None


def _first(*values) -> str:
    return next((v.strip() for v in values if isinstance(v, str) and v.strip()), "")


def _sender(row: dict, names: dict[str, str]) -> str:
    user = row.get("user") if isinstance(row.get("user"), str) else ""
    if user in names:
        return names[user]
    profile = row.get("user_profile") if isinstance(row.get("user_profile"), dict) else {}
    bot = row.get("bot_profile") if isinstance(row.get("bot_profile"), dict) else {}
    return (
        _first(profile.get("display_name"), profile.get("real_name"), profile.get("name"))
        or _first(row.get("username"), bot.get("name"))
        or user
    )


def _text(row: dict, names: dict[str, str]) -> str:
    """The message as read: markup resolved, files as markers, then (edited) and the reactions;
    empty when it has neither text nor files."""
    text = row.get("text") if isinstance(row.get("text"), str) else ""
    text = _MARKUP.sub(lambda m: _markup(m[1], names), text)
    parts = [text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()]
    files = row.get("files") if isinstance(row.get("files"), list) else []
    for file in files[:100]:
        if isinstance(file, dict):
            parts.append(f"[file: {_first(file.get('name'), file.get('title')) or 'hidden'}]")
    if not any(parts):
        return ""
    if isinstance(row.get("edited"), dict):
        parts.append("(edited)")
    reactions = row.get("reactions") if isinstance(row.get("reactions"), list) else []
    counts = [_reaction(r) for r in reactions[:100] if isinstance(r, dict) and isinstance(r.get("name"), str)]
    if counts:
        parts.append(f"[reactions: {', '.join(counts)}]")
    return " ".join(p for p in parts if p)


def _reaction(reaction: dict) -> str:
    """ ":+1: ×2": the emoji and how many reacted with it."""
    count, users = reaction.get("count"), reaction.get("users")
    if not isinstance(count, int) or isinstance(count, bool):
        count = len(users) if isinstance(users, list) else 1
    return f":{reaction['name']}: ×{count}"


def _markup(inner: str, names: dict[str, str]) -> str:
    """One `<...>` of Slack's markup as a reader sees it."""
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return "@" + (names.get(target[1:]) or label.lstrip("@") or target[1:])
    if target.startswith("#"):
        return "#" + (label or target[1:])
    if target.startswith("!"):
        special = target[1:].split("^", 1)[0]
        return label or (f"@{special}" if special in ("here", "channel", "everyone") else inner)
    if label and label != target:
        return f"{label} ({target})"
    return target
