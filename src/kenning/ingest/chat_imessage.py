"""macOS Messages (iMessage and SMS): the `chat.db` SQLite database in ~/Library/Messages.

The database is never opened where it lies, so nothing kenning does can write to it or take its
locks from Messages: the bytes already read (within --max-file-bytes) are written to a private
temporary folder and opened there, then the folder is removed. Messages keeps its newest messages
in a write-ahead log beside the database (`chat.db-wal`) until it folds them in; that log is read
too (the database and the log together within the same size bound) and copied beside the copy, so
SQLite reads the database as Messages sees it. A log that does not fit the bound, or that SQLite
cannot read with the database (written between the two reads), is left out with a warning naming
what is lost: the messages not yet in chat.db. (Only a changed chat.db is read again: messages only
in the log are indexed when the database changes or the index is forced.)

What is read, from the tables `message`, `handle`, `chat` and `chat_message_join`:

- Text: `message.text`, else (newer macOS stores only this) the string inside `attributedBody`, an
  NSAttributedString archived as a "typedstream" (`attributed_text`). A message whose text cannot be
  read is left out and counted in a warning.
- Time: `message.date`, since 2001-01-01 UTC, in nanoseconds (macOS 10.13 and later; any value past
  1e12) or seconds (before).
- Sender: "me" for the account's own messages (`is_from_me`), else the handle's phone number or
  email. Conversation: the chat's `display_name` (a named group), else its `chat_identifier`, else
  the handle; two chats with one name are told apart by their ids.
- Reactions (tapbacks: `associated_message_type` 2000-3999, a reaction or its removal) are left out:
  they are not messages, and their text only repeats the message they react to. So are group events
  (a non-zero `item_type`: members added, the chat renamed).
- An attachment's place in the text (U+FFFC), or a message that is only an attachment, reads
  "[attachment]"; an edited message (`date_edited`) ends " (edited)".
- A message's id is its `guid`; its line is its place among the database's messages by ROWID, 1 to n.

Columns a macOS version lacks are read as empty. A crafted database is bounded like any file: its
size, plus a budget of SQLite steps proportional to it (a view or a join made to run forever stops).
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from .chunk import ChunkOptions, IngestError, ParsedSource
from .limits import FileSkipped, read_bounded
from .messages import Conversations, Message, conversation_chunks

SQLITE_HEADER = b"SQLite format 3\x00"
DATABASE_NAME = "chat.db"
REQUIRED_TABLES = ("message", "handle", "chat_message_join")
APPLE_EPOCH = 978_307_200  # 2001-01-01T00:00:00Z, where Apple's clocks count from
NANOSECOND_DATES = 1e12  # a date past this counts nanoseconds, not seconds
REACTIONS = range(2000, 4000)  # associated_message_type of a tapback (2xxx) or its removal (3xxx)
STEPS_PER_BYTE = 200  # SQLite steps a read may take per byte of the database (and log)
MAX_VALUE_BYTES = 8 << 20  # the largest text or blob SQLite may make while reading (a message is far smaller)
PROGRESS_EVERY = 10_000  # steps between checks of that budget
LOG_LOSS = "the newest messages, not yet moved into chat.db, are left out"
# the columns read, by table: name -> whether the reader needs it (a missing optional one reads NULL)
COLUMNS = {
    "message": {
        "guid": False,
        "text": True,
        "attributedBody": False,
        "handle_id": True,
        "date": True,
        "is_from_me": True,
        "associated_message_type": False,
        "date_edited": False,
        "cache_has_attachments": False,
        "item_type": False,
    },
    "handle": {"id": True},
    "chat": {"display_name": False, "chat_identifier": False},
}


def looks_like_messages_db(path: Path, head: bytes) -> bool:
    """An SQLite database named chat.db, or whose first page names the Messages tables."""
    if not head.startswith(SQLITE_HEADER):
        return False
    if Path(path).name.lower() == DATABASE_NAME:
        return True
    return all(f"TABLE {table}".encode() in head for table in REQUIRED_TABLES)


def parse_imessage(
    data: bytes, path: Path, doc_key: str, display: str, options: ChunkOptions, max_bytes: int
) -> ParsedSource:
    """The database's conversations in windows (its write-ahead log read with it)."""
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kenning-messages-") as folder:
        copy = Path(folder) / DATABASE_NAME
        try:
            copy.write_bytes(data)
            log = _copy_log(path, copy, max_bytes - len(data), display, warnings)
        except OSError as exc:
            raise IngestError(f"{display}: cannot copy it to a private temporary folder ({exc})") from None
        try:
            conversations, notes = _read(copy, display, len(data) + log)
        except sqlite3.DatabaseError as exc:
            if not log:
                raise IngestError(f"{display}: cannot read the database ({exc})") from None
            warnings.append(
                f"{display}: its write-ahead log does not fit the database as read ({exc}); {LOG_LOSS}"
            )
            for name in (copy.name + "-wal", copy.name + "-shm"):
                (copy.parent / name).unlink(missing_ok=True)
            copy.write_bytes(data)  # as it was before SQLite read the log into it
            try:
                conversations, notes = _read(copy, display, len(data))
            except sqlite3.DatabaseError as again:
                raise IngestError(f"{display}: cannot read the database ({again})") from None
    chunks = conversation_chunks(conversations.groups, doc_key, options)
    if not chunks:
        notes.append(f"{display}: no messages found to index")
    return ParsedSource(kind="messages", chunks=chunks, warnings=warnings + notes)


def _read(copy: Path, display: str, size: int) -> tuple[Conversations, list[str]]:
    """The copy's messages and the warnings reading them gave, within STEPS_PER_BYTE * `size` steps;
    sqlite3.DatabaseError when SQLite cannot read it."""
    reader = _Reader(copy, display, STEPS_PER_BYTE * size)
    try:
        return reader.read(), reader.warnings()
    except sqlite3.DatabaseError:
        if reader.steps < 0:
            raise IngestError(f"{display}: reading it took more steps than its size allows") from None
        raise
    finally:
        reader.close()


def _copy_log(path: Path, copy: Path, budget: int, display: str, warnings: list[str]) -> int:
    """Copy the write-ahead log beside the database's copy, within `budget` bytes: its size (0:
    none copied)."""
    log = path.with_name(path.name + "-wal")
    if log.is_symlink():  # it may lead outside the folders being indexed: not followed
        warnings.append(
            f"{display}: its write-ahead log ({log.name}) is a symbolic link, not followed; {LOG_LOSS}"
        )
        return 0
    if not log.is_file():
        return 0
    try:
        data = read_bounded(log, max(0, budget), log.name)
    except FileSkipped:
        why = "does not fit the size limit with the database (--max-file-bytes)"
    except IngestError as exc:
        why = f"cannot be read ({str(exc).removeprefix(log.name + ': ')})"
    else:
        (copy.parent / (copy.name + "-wal")).write_bytes(data)
        return len(data)
    warnings.append(f"{display}: its write-ahead log ({log.name}) {why}; {LOG_LOSS}")
    return 0


class _Reader:
    """One open copy of the database, read once."""

    def __init__(self, copy: Path, display: str, steps: int):
        self.display = display
        self.unreadable = self.undated = 0
        self.steps = max(steps, 10 * PROGRESS_EVERY) // PROGRESS_EVERY
        self.conn = sqlite3.connect(copy, isolation_level=None)  # (opened at the first statement)
        # no value SQLite makes while reading may be larger than this (a crafted schema's expression
        # could build a gigabyte string in one step, which the step budget cannot see)
        self.conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)

    def close(self) -> None:
        self.conn.close()

    def _progress(self) -> int:
        self.steps -= 1
        return 1 if self.steps < 0 else 0  # non-zero interrupts the statement

    def read(self) -> Conversations:
        """Every message, grouped by conversation."""
        self.conn.set_progress_handler(self._progress, PROGRESS_EVERY)
        for pragma in ("query_only = ON", "trusted_schema = OFF", "cell_size_check = ON"):
            self.conn.execute(f"PRAGMA {pragma}")
        conversations = Conversations()
        last_row, ordinal = None, 0
        for row in self.conn.execute(self._query()):
            if row[0] == last_row:
                continue  # one message in two chats: read once, in the first
            last_row, ordinal = row[0], ordinal + 1
            message = self._message(row, ordinal, conversations)
            if message is not None:
                conversations.add(message)
        return conversations

    def _query(self) -> str:
        """The SELECT of every message with its handle and chat, from the columns this database has."""
        listed = self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {name for (name,) in listed}
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise FileSkipped(
                f"{self.display}: an SQLite database without the Messages tables ({', '.join(missing)}); "
                "not a macOS Messages chat.db"
            )
        computed = [t for t in (*REQUIRED_TABLES, "chat") if t in tables and self._computed_columns(t)]
        if computed:
            raise IngestError(
                f"{self.display}: the {', '.join(computed)} table(s) have computed columns, which a Messages "
                "database never has; not read"
            )
        selected = {}
        for table, columns in COLUMNS.items():
            have = self._columns(table) if table in tables else set()
            lacking = [c for c, needed in columns.items() if needed and c not in have]
            if lacking:
                raise IngestError(f"{self.display}: the {table} table has no {', '.join(lacking)} column")
            alias = table[0]
            selected.update({f"{table}.{c}": f"{alias}.{c}" if c in have else "NULL" for c in columns})
        chat = "LEFT JOIN chat AS c ON c.ROWID = j.chat_id" if "chat" in tables else ""
        return (
            f"SELECT m.ROWID, {', '.join(selected.values())}, j.chat_id FROM message AS m "
            "LEFT JOIN handle AS h ON h.ROWID = m.handle_id "
            f"LEFT JOIN chat_message_join AS j ON j.message_id = m.ROWID {chat} "
            "ORDER BY m.ROWID, j.chat_id"
        )

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}

    def _computed_columns(self, table: str) -> list[str]:
        """A table's generated (computed) columns: table_xinfo marks them hidden (2 or 3)."""
        return [row[1] for row in self.conn.execute(f"PRAGMA table_xinfo({table})") if row[6]]

    def _message(self, row: tuple, ordinal: int, conversations: Conversations) -> Message | None:
        rowid, guid, text, body, _, date, from_me, associated, edited, attached, item, handle = row[:12]
        chat_name, chat_identifier, chat_id = row[12:]
        if _number(associated) in REACTIONS or _number(item):
            return None  # a tapback, or a group event
        time = _time(date)
        if time is None:
            self.undated += 1
            return None
        text = _string(text)
        if not text.strip() and isinstance(body, bytes):
            text = attributed_text(body)
            if text is None:
                self.unreadable += 1
                return None
        text = text.replace("\ufffc", " [attachment] ").strip()
        if not text and _number(attached):
            text = "[attachment]"
        if not text:
            return None
        handle = _string(handle).strip()
        name = _string(chat_name).strip() or _string(chat_identifier).strip() or handle or "Messages"
        key = chat_id if chat_id is not None else f"handle {handle}"
        return Message(
            line_no=ordinal,
            time=time,
            conversation=conversations.name(key, name),
            sender="me" if _number(from_me) else handle,
            text=" ".join(text.split()) + (" (edited)" if _number(edited) > 0 else ""),
            id=_string(guid) or str(rowid),
        )

    def warnings(self) -> list[str]:
        out = []
        if self.unreadable:
            out.append(f"{self.display}: {self.unreadable} message(s) left out: text unreadable")
        if self.undated:
            out.append(f"{self.display}: {self.undated} message(s) left out: no readable date")
        return out


def attributed_text(blob: bytes) -> str | None:
    """The string of an archived NSAttributedString (typedstream): after the class name NSString (or
    NSMutableString), a few bytes ending in "+" (b"\\x01\\x94\\x84\\x01+"), then the length in
    bytes (one byte below 0x80; 0x81 and two bytes, or 0x82 and four, little-endian), then UTF-8.
    None when the blob does not hold that, or its length runs past its end."""
    at = next((i for name in (b"NSString", b"NSMutableString") if (i := blob.find(name)) >= 0), -1)
    if at < 0:
        return None
    start = blob.index(b"String", at) + len(b"String")
    plus = blob.find(b"+", start, start + 6)
    if plus < 0 or plus + 1 >= len(blob):
        return None
    pos, tag = plus + 2, blob[plus + 1]
    if tag < 0x80:
        size = tag
    elif tag in (0x81, 0x82):
        width = 2 if tag == 0x81 else 4
        size, pos = int.from_bytes(blob[pos : pos + width], "little"), pos + width
    else:
        return None
    if pos > len(blob) or size > len(blob) - pos:
        return None
    try:
        return blob[pos : pos + size].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _time(date) -> float | None:
    """Epoch seconds of a Messages date (nanoseconds or seconds since 2001), None if unreadable."""
    if isinstance(date, bool) or not isinstance(date, int | float) or date <= 0:
        return None
    seconds = date / 1_000_000_000 if date > NANOSECOND_DATES else date
    try:
        datetime.fromtimestamp(APPLE_EPOCH + seconds, UTC)  # must be a date to show
    except (OverflowError, OSError, ValueError):
        return None
    return APPLE_EPOCH + seconds


def _number(value) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _string(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)
