"""WhatsApp chat exports ("Export chat" on a phone): one conversation per text file.

A message starts on a line that opens with its date and time, in one of the forms the apps write:

    [31/12/2023, 21:41:05] Bob: text          (iPhone; seconds, brackets)
    31/12/2023, 21:41 - Bob: text             (Android)
    12/31/23, 9:41 PM - Bob: text             (US: month first, a 12-hour clock)

Lines without such a start continue the message above (a message's own line breaks). Real exports
carry invisible marks that must not break reading: a left-to-right mark (U+200E) before media and
notices, bidirectional embeddings around phone numbers, and a narrow no-break space (U+202F) before
AM/PM; they are dropped. Times have no zone (the phone's clock): they are read as UTC, as every naive
time in kenning is.

- Day or month first is decided per file, since the apps write what the phone's region uses: a
  first number over 12 anywhere in the file means day first, a second number over 12 month first.
  When no date tells (every day of the chat is at most the 12th), a 12-hour clock (AM/PM) means month
  first, the US form, and a 24-hour clock day first. A four-digit first number is a year (year,
  month, day). A date that does not exist in the order chosen is a warning, and its message is left
  out.
- Notices from WhatsApp itself are left out, not kept as messages without a sender: a line with no
  "Name: " ("Messages and calls are end-to-end encrypted...", "Bob added Alice"), and, on iPhone,
  a text the app marks with U+200E that is not media (the same notices, given the chat's name as
  sender).
- Media become short markers: `<Media omitted>` reads "[media]", `image omitted` "[image]" (and so
  for video, audio, sticker, GIF, document, contact card), `<attached: NAME>` and `NAME (file
  attached)` read "[file: NAME]". An edit marker `<This message was edited>` becomes " (edited)".
- The conversation is named by the file: "WhatsApp Chat with Bob.txt" and "WhatsApp Chat - Bob.txt"
  are "Bob"; the `_chat.txt` of an unzipped iPhone export takes its folder's name; else the stem.
- A message's id is its line number, where its first line is.

A .txt file is read this way when two of its first five non-empty lines start like a message, one
with a sender (`looks_like_whatsapp`); every other .txt stays plain text, and so does one that
holds no message after all.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from .chunk import ChunkOptions, ParsedSource
from .jsonl import LineWarnings
from .messages import Message, conversation_chunks
from .source import split_source_lines

# the date (three numbers), a comma, the time (seconds and AM/PM optional), then "] " after a
# bracketed start or " - " after a plain one, then the rest: "Name: text", or a notice
_START = re.compile(
    r"^[\u200e\u200f]*(?P<open>\[)?"
    r"(?P<a>\d{1,4})(?P<sep>[./-])(?P<b>\d{1,2})(?P=sep)(?P<c>\d{2,4}),[ \u00a0]"
    r"(?P<hour>\d{1,2})[:.](?P<minute>\d{2})(?:[:.](?P<second>\d{2}))?"
    r"(?:[ \u00a0\u202f]?(?P<half>[AaPp])\.?[ \u00a0\u202f]?[Mm]\.?)?"
    r"(?(open)\][ \u00a0]|[ \u00a0][-\u2013][ \u00a0])"
    r"(?P<rest>.*)$"
)
_INVISIBLE = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_EDITED = re.compile(r"\s*\u200e?<This message was edited>\s*$")
_OMITTED = re.compile(r"^(image|video|audio|sticker|GIF|document|Contact card) omitted$", re.IGNORECASE)
_ATTACHED = re.compile(r"<attached: ([^>]*)>")
_FILE_ATTACHED = re.compile(r"^(\S.*?) \(file attached\)$")
_CHAT_PREFIX = re.compile(r"^WhatsApp Chat(?: with | - )", re.IGNORECASE)
SNIFF_LINES = 5


def looks_like_whatsapp(head: str) -> bool:
    """True when two of the first five non-empty lines start like a message, one of them with a
    sender ("Name: "), or the file's only line does: a note that merely begins with a date and a
    dash is not a chat."""
    lines = [line for line in split_source_lines(head)[:50] if line.strip()][:SNIFF_LINES]
    starts = [m for line in lines if (m := _START.match(line))]
    said = any(_sender(m["rest"]) for m in starts)
    return said and (len(starts) >= 2 or len(lines) == 1)


def _sender(rest: str) -> str | None:
    """The sender a message's first line names ("Bob: see you" -> "Bob"), None for a notice."""
    sender, colon, _ = rest.partition(": ")
    return sender if colon and sender.strip() and len(sender) <= 80 else None


def parse_whatsapp(text: str, path: Path, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """The file's messages, in windows of its one conversation."""
    lines = split_source_lines(text)
    starts = [(n, m) for n, line in enumerate(lines, start=1) if (m := _START.match(line))]
    day_first = _day_first([m for _, m in starts])
    conversation = conversation_name(path)
    warnings = LineWarnings(display)
    messages: list[Message] = []
    starts.append((len(lines) + 1, None))
    if starts[0][0] > 1 and any(line.strip() for line in lines[: starts[0][0] - 1]):
        warnings.add(1, "lines before the first message left out")
    for (line_no, match), (next_no, _) in zip(starts, starts[1:], strict=False):
        time = _time(match, day_first)
        if time is None:
            date = match["sep"].join((match["a"], match["b"], match["c"]))
            order = "day" if day_first else "month"
            warnings.add(line_no, f"no such date or time {date} (read {order} first); message left out")
            continue
        sender, colon, first = match["rest"].partition(": ")
        if not colon:
            continue  # a notice from WhatsApp ("Messages and calls are end-to-end encrypted")
        continued = lines[line_no : next_no - 1]  # the lines up to the next message's start
        body = _text("\n".join([first, *continued]))
        if body is None:
            continue  # an iPhone notice, marked as such
        sender = _INVISIBLE.sub("", sender).strip()
        messages.append(Message(line_no, time, conversation, sender, body, str(line_no)))
    return ParsedSource(
        kind="messages",
        chunks=conversation_chunks({conversation: messages} if messages else {}, doc_key, options),
        warnings=warnings.as_list(),
    )


def conversation_name(path: Path) -> str:
    """The chat's name as the export's file (or, for `_chat.txt`, its folder) gives it."""
    stem = path.stem
    if stem.lower() == "_chat" and path.parent.name:
        stem = path.parent.name
    return _CHAT_PREFIX.sub("", stem).strip() or stem


def _day_first(matches: list[re.Match]) -> bool:
    """The file's date order (the module docstring)."""
    dated = [m for m in matches if len(m["a"]) <= 2]
    day_first = any(int(m["a"]) > 12 for m in dated)
    month_first = any(int(m["b"]) > 12 for m in dated)
    if day_first != month_first:
        return day_first
    if day_first:  # both: no order reads every line; the more common one reads most
        return True
    return not any(m["half"] for m in dated)


def _time(m: re.Match, day_first: bool) -> float | None:
    """Epoch seconds of a message start (UTC), None for a date or time that does not exist."""
    a, b, c = int(m["a"]), int(m["b"]), int(m["c"])
    if len(m["a"]) == 4:
        year, month, day = a, b, c
    else:
        day, month = (a, b) if day_first else (b, a)
        year = c + 2000 if len(m["c"]) <= 2 else c
    hour = int(m["hour"])
    if m["half"]:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if m["half"] in "Pp" else 0)
    try:
        when = datetime(year, month, day, hour, int(m["minute"]), int(m["second"] or 0), tzinfo=UTC)
    except ValueError:
        return None
    return when.timestamp()


def _text(raw: str) -> str | None:
    """A message's text with media as markers and the edit marker as " (edited)"; None for an
    iPhone notice (its text opens with U+200E and is no media)."""
    edited = _EDITED.search(raw)
    if edited:
        raw = raw[: edited.start()]
    notice = raw.startswith("\u200e")
    raw = _ATTACHED.sub(lambda m: f"[file: {_INVISIBLE.sub('', m[1]).strip()}]", raw)
    text = _INVISIBLE.sub("", raw).replace("\u202f", " ").strip()
    if text == "<Media omitted>":
        text = "[media]"
    elif omitted := _OMITTED.match(text):
        text = f"[{omitted[1] if omitted[1].isupper() else omitted[1].lower()}]"  # GIF, image
    elif attached := _FILE_ATTACHED.match(text.split("\n", 1)[0]):
        text = f"[file: {attached[1]}]" + text[len(attached[0]) :]
    elif notice and not text.startswith("[file: "):
        return None
    return text + (" (edited)" if edited else "")
