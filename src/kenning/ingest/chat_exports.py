"""Which chat app exported a file, told from its name and first bytes (parse_file then hands it to
that app's reader).

Chat exports come as ordinary-looking files (a .txt, a .json, an SQLite database), so the name alone
cannot say; each reader's own check looks at the first block, the way `detect_kind` does for every
kind. A file that matches none stays what its extension says. The readers (one module each) turn
their format into the shared message windows of kenning.ingest.messages:

- WhatsApp "Export chat" text (kenning.ingest.chat_whatsapp): a .txt whose first lines start like
  messages ("[31/12/2023, 21:41:05] Bob: ..." or "12/31/23, 9:41 PM - Bob: ...").
- Slack export (kenning.ingest.chat_slack): a channel's day file, `YYYY-MM-DD.json` holding an array
  of message objects; the export's own lists (`users.json`, `channels.json`...) are skipped.
- Telegram Desktop `result.json` (kenning.ingest.chat_telegram): a .json object with a chat's
  `messages` or an account's `chats`.
- macOS Messages `chat.db` (kenning.ingest.chat_imessage): an SQLite database so named, or whose first
  page names the Messages tables; every other SQLite file stays binary.
"""

from __future__ import annotations

from pathlib import Path

from .chat_imessage import looks_like_messages_db
from .chat_slack import slack_file
from .chat_telegram import looks_like_telegram
from .chat_whatsapp import looks_like_whatsapp

WHATSAPP, SLACK_DAY, SLACK_METADATA, TELEGRAM, IMESSAGE = (
    "whatsapp",
    "slack day",
    "slack metadata",
    "telegram",
    "imessage",
)


def chat_export(path: Path | str, head: bytes) -> str | None:
    """Which export a file is (WHATSAPP, SLACK_DAY, SLACK_METADATA, TELEGRAM, IMESSAGE), from its name
    and first bytes; None for any other file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if looks_like_messages_db(path, head):
        return IMESSAGE
    if suffix not in (".txt", ".json"):
        return None
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")  # (the head may end mid-character)
    if suffix == ".txt":
        return WHATSAPP if looks_like_whatsapp(text) else None
    slack = slack_file(path, text)
    if slack is not None:
        return SLACK_DAY if slack == "day" else SLACK_METADATA
    return TELEGRAM if looks_like_telegram(text) else None
