"""Chat apps' exports read in their real formats. Every fixture is built here in the app's own
layout (file names, fields, schema), with the marks and quirks real exports carry."""

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from kenning.ingest import ChunkOptions, IngestError, binary_reason, detect_kind, discover, parse_file
from kenning.ingest.chat_imessage import APPLE_EPOCH, attributed_text
from kenning.ingest.limits import FileSkipped
from kenning.query.filters import Filters

EIGHT = ChunkOptions(message_window=8, message_stride=4)  # a short export in one window

# 2023-12-31T21:41:05Z and its neighbours, as epoch seconds
T_2141_05 = 1704058865.0
T_2142_10 = 1704058930.0
T_2143 = 1704058980.0
T_NEW_YEAR_0800 = 1704096000.0


def lines_of(chunk) -> list[str]:
    return chunk.body.splitlines()


def message_rows(chunk) -> list[tuple[str, str, int]]:
    """meta["messages"] with each sender index resolved: (id, sender, time)."""
    return [(i, chunk.meta["senders"][s], t) for i, s, t in chunk.meta["messages"]]


# --- WhatsApp ----------------------------------------------------------------------------------

# an iPhone export: brackets, day first, seconds (one line without), U+200E before media and
# notices, a phone number wrapped in bidirectional marks, an edit marker
WHATSAPP_IPHONE = "\n".join(
    [
        "[31/12/2023, 21:40:00] Bob: \u200eMessages and calls are end-to-end encrypted. No one outside "
        "of this chat, not even WhatsApp, can read or listen to them.",
        "[31/12/2023, 21:41:05] Bob: Landing at the airport at ten",
        "can you pick me up?",
        "Terminal 2",
        "\u200e[31/12/2023, 21:42:10] Alice: \u200eimage omitted",
        "[31/12/2023, 21:43] Alice: On my way \u200e<This message was edited>",
        "\u200e[31/12/2023, 21:43:30] Alice: \u200e<attached: 00000012-PHOTO-2023-12-31-21-43-30.jpg>",
        "[01/01/2024, 08:00:00] \u202a+44 7700 900123\u202c: Happy new year",
    ]
)

# an Android export in the US form: month first, 12-hour clock with U+202F before PM, a dash
WHATSAPP_US = "\n".join(
    [
        "12/31/23, 9:40\u202fPM - Messages and calls are end-to-end encrypted. No one outside of this "
        "chat, not even WhatsApp, can read or listen to them. Tap to learn more.",
        "12/31/23, 9:41\u202fPM - Bob: Landing at the airport at ten",
        "can you pick me up?",
        "12/31/23, 9:42\u202fPM - Alice: <Media omitted>",
        "12/31/23, 9:43\u202fPM - Alice: On my way <This message was edited>",
        "12/31/23, 9:44\u202fPM - Bob added Carol",
        "1/1/24, 12:05\u202fAM - Carol: Happy new year",
        "",
    ]
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_whatsapp_iphone_export(tmp_path: Path):
    path = write(tmp_path / "WhatsApp Chat with Bob.txt", WHATSAPP_IPHONE)
    assert detect_kind(path, path.read_bytes()) == "messages"
    parsed = parse_file(path, EIGHT, display_name="chat.txt")
    assert parsed.kind == "messages" and parsed.warnings == []
    [chunk] = parsed.chunks
    assert chunk.title == chunk.meta["conversation"] == "Bob"
    assert lines_of(chunk) == [
        "Bob: Landing at the airport at ten can you pick me up? Terminal 2",
        "Alice: [image]",
        "Alice: On my way (edited)",
        "Alice: [file: 00000012-PHOTO-2023-12-31-21-43-30.jpg]",
        "+44 7700 900123: Happy new year",
    ]
    assert message_rows(chunk) == [
        ("2", "Bob", T_2141_05),
        ("5", "Alice", T_2142_10),
        ("6", "Alice", T_2143),
        ("7", "Alice", T_2143 + 30),
        ("8", "+44 7700 900123", T_NEW_YEAR_0800),
    ]
    assert (chunk.start_line, chunk.end_line) == (2, 8)
    assert chunk.time == T_NEW_YEAR_0800


def test_whatsapp_us_export_reads_month_first_and_skips_notices(tmp_path: Path):
    path = write(tmp_path / "WhatsApp Chat - Family.txt", WHATSAPP_US)
    [chunk] = parse_file(path).chunks
    assert chunk.title == "Family"
    assert lines_of(chunk) == [
        "Bob: Landing at the airport at ten can you pick me up?",
        "Alice: [media]",
        "Alice: On my way (edited)",
        "Carol: Happy new year",
    ]
    assert [t for _, _, t in chunk.meta["messages"]] == [1704058860, 1704058920, 1704058980, 1704067500]
    assert chunk.meta["senders"] == ["Bob", "Alice", "Carol"]


@pytest.mark.parametrize(
    "line, epoch",
    [
        ("03/04/2024, 10:00 - Bob: which day?", 1712138400.0),  # 24-hour clock: 3 April
        ("03/04/24, 10:00 AM - Bob: which day?", 1709546400.0),  # 12-hour clock: 4 March (US)
        ("31/12/2023, 21:41 - Bob: day first", 1704058860.0),  # 31 can only be a day
        ("[2024-03-04, 10:00:00] Bob: year first", 1709546400.0),
    ],
)
def test_whatsapp_date_order_is_decided_per_file(tmp_path: Path, line: str, epoch: float):
    [chunk] = parse_file(write(tmp_path / "chat.txt", line + "\n")).chunks
    assert chunk.meta["messages"][0][2] == epoch


def test_whatsapp_unzipped_iphone_export_is_named_by_its_folder(tmp_path: Path):
    path = write(tmp_path / "WhatsApp Chat - Trip" / "_chat.txt", WHATSAPP_IPHONE)
    assert parse_file(path).chunks[0].title == "Trip"


def test_whatsapp_bad_dates_are_warnings_naming_the_line(tmp_path: Path):
    text = "\n".join(
        [
            "[30/12/2023, 10:00:00] Bob: fine",
            "[31/02/2023, 10:00:00] Bob: no 31 February",
            "and its second line",
            "[31/12/2023, 25:00:00] Bob: no hour 25",
            "[31/12/2023, 11:00:00] Alice: fine too",
        ]
    )
    parsed = parse_file(write(tmp_path / "broken.txt", text), display_name="broken.txt")
    assert [w.split(" ")[0] for w in parsed.warnings] == ["broken.txt:2:", "broken.txt:4:"]
    assert "31/02/2023" in parsed.warnings[0]
    assert lines_of(parsed.chunks[0]) == ["Bob: fine", "Alice: fine too"]


def test_whatsapp_detection_leaves_other_text_alone():
    assert detect_kind(Path("notes.txt"), b"Shopping list\n31/12/2023, 21:41 - Bob: milk\n") == "text"
    assert detect_kind(Path("app.log"), b"31/12/2023, 21:41 - Bob: x\n31/12/2023, 21:42 - Bob: y\n") == "text"
    log = b"2023-12-31 21:41:05 - worker: started\n2023-12-31 21:41:06 - worker: done\n"
    assert detect_kind(Path("worker.txt"), log) == "text"  # a log's date and time have no comma
    head = b"Notes\n31/12/2023, 21:41 - Bob: a\n31/12/2023, 21:42 - Ann: b\n"
    assert detect_kind(Path("pasted.txt"), head) == "messages"  # two of the first five lines
    # a note whose first line merely starts with a date and a dash is not a chat
    note = b"12/03/2024, 10:00 - Meeting notes\nWe decided to ship.\nAlice owns the changelog.\n"
    assert detect_kind(Path("notes.txt"), note) == "text"


def test_a_text_that_begins_like_a_chat_but_holds_no_message_stays_text(tmp_path: Path):
    text = "31/02/2023, 10:00 - Bob: no such day\n30/02/2023, 10:00 - Bob: nor this\nWe decided to ship.\n"
    assert detect_kind(Path("notes.txt"), text.encode()) == "messages"
    parsed = parse_file(write(tmp_path / "notes.txt", text))
    assert parsed.kind == "text" and "We decided to ship." in parsed.chunks[0].body  # nothing lost


# --- Slack -------------------------------------------------------------------------------------

SLACK_USERS = [
    {
        "id": "U01",
        "team_id": "T01",
        "name": "bob",
        "deleted": False,
        "real_name": "Bob Builder",
        "profile": {"display_name": "Bob", "real_name": "Bob Builder", "title": ""},
    },
    {
        "id": "U02",
        "team_id": "T01",
        "name": "alice",
        "real_name": "Alice Archer",
        "profile": {"display_name": "", "real_name": "Alice Archer"},
    },
]
SLACK_CHANNELS = [
    {
        "id": "C01",
        "name": "general",
        "created": 1700000000,
        "creator": "U01",
        "is_archived": False,
        "is_general": True,
        "members": ["U01", "U02"],
        "topic": {"value": "", "creator": "", "last_set": 0},
        "purpose": {"value": "Company-wide", "creator": "U01", "last_set": 1700000000},
    }
]
SLACK_DAY_1 = [
    {"type": "message", "subtype": "channel_join", "user": "U02", "text": "<@U02> has joined the channel",
     "ts": "1704058800.000100"},
    {"client_msg_id": "a1", "type": "message", "user": "U01", "ts": "1704058865.000200",
     "text": "Landing at the airport at ten, <@U02> can you pick me up?", "team": "T01",
     "user_team": "T01", "blocks": []},
    {"type": "message", "user": "U02", "ts": "1704058930.000300", "text": "Sure &amp; coffee &lt;3",
     "edited": {"user": "U02", "ts": "1704058990.000000"},
     "reactions": [{"name": "+1", "users": ["U01", "U03"], "count": 2}]},
    {"type": "message", "user": "U01", "ts": "1704058980.000400", "text": "the itinerary", "upload": True,
     "files": [{"id": "F01", "name": "itinerary.pdf", "title": "Itinerary", "mimetype": "application/pdf"}]},
]  # fmt: skip
SLACK_DAY_2 = [
    {"type": "message", "user": "U03", "ts": "1704096000.000100", "text": "Happy new year <!channel>",
     "user_profile": {"display_name": "Carol", "real_name": "Carol Cook", "name": "carol"}},
    {"type": "message", "subtype": "bot_message", "bot_id": "B01", "username": "deploybot",
     "ts": "1704096060.000200", "text": "Deployed <https://example.com/r/1|release 1> to <#C01|general>"},
]  # fmt: skip


def slack_export(root: Path) -> Path:
    write(root / "users.json", json.dumps(SLACK_USERS, indent=4))
    write(root / "channels.json", json.dumps(SLACK_CHANNELS, indent=4))
    write(root / "dms.json", json.dumps([{"id": "D01", "created": 1700000000, "members": ["U01", "U02"]}]))
    write(root / "integration_logs.json", json.dumps({"logs": []}))
    write(root / "general" / "2023-12-31.json", json.dumps(SLACK_DAY_1, indent=4))
    write(root / "general" / "2024-01-01.json", json.dumps(SLACK_DAY_2, indent=4))
    dm = [{"type": "message", "user": "U02", "ts": "1704103200.000100", "text": "landed?"}]
    write(root / "D01" / "2024-01-01.json", json.dumps(dm))
    return root


def test_slack_day_files(tmp_path: Path):
    root = slack_export(tmp_path / "Acme Slack export Dec 31 2023 - Jan 1 2024")
    day = root / "general" / "2023-12-31.json"
    assert detect_kind(day, day.read_bytes()[:8192]) == "messages"
    parsed = parse_file(day)
    assert parsed.kind == "messages" and parsed.warnings == []
    [chunk] = parsed.chunks
    assert chunk.title == "#general"
    assert lines_of(chunk) == [
        "Bob: Landing at the airport at ten, @Alice Archer can you pick me up?",
        "Alice Archer: Sure & coffee <3 (edited) [reactions: :+1: ×2]",
        "Bob: the itinerary [file: itinerary.pdf]",
    ]
    assert message_rows(chunk) == [
        ("1704058865.000200", "Bob", 1704058865),
        ("1704058930.000300", "Alice Archer", 1704058930),
        ("1704058980.000400", "Bob", 1704058980),
    ]
    assert chunk.time == 1704058980.0004
    assert (chunk.start_line, chunk.end_line) == (2, 4)  # places in the day's array

    [next_day] = parse_file(root / "general" / "2024-01-01.json").chunks
    assert lines_of(next_day) == [
        "Carol: Happy new year @channel",  # not in users.json: the profile in the message
        "deploybot: Deployed release 1 (https://example.com/r/1) to #general",
    ]
    [dm] = parse_file(root / "D01" / "2024-01-01.json").chunks
    assert dm.title == "Bob, Alice Archer" and lines_of(dm) == ["Alice Archer: landed?"]


def test_slack_metadata_is_skipped_and_other_json_stays_text(tmp_path: Path):
    root = slack_export(tmp_path / "export")
    for name in ("users.json", "channels.json", "dms.json", "integration_logs.json"):
        with pytest.raises(FileSkipped, match=rf"^{name}: a Slack export's list"):
            parse_file(root / name, display_name=name)
    other = write(tmp_path / "app" / "users.json", json.dumps([{"email": "x@example.com"}]))
    assert detect_kind(other, other.read_bytes()) == "text"
    assert parse_file(other).kind == "text"
    dated = write(tmp_path / "app" / "2024-01-01.json", json.dumps([{"ts": "1", "value": 3}]))
    assert detect_kind(dated, dated.read_bytes()) == "text"


def test_slack_does_not_follow_a_linked_users_json_or_a_linked_log(tmp_path: Path):
    """The walk refuses a link that leads outside the indexed folders; a reader's sibling files are
    not followed either (a users.json linked to a secret would put the secret's names in the index)."""
    export = slack_export(tmp_path / "export")
    outside = write(tmp_path / "outside" / "secret.json", json.dumps([{"id": "U01", "name": "TOP-SECRET"}]))
    (export / "users.json").unlink()
    (export / "users.json").symlink_to(outside)
    parsed = parse_file(export / "general" / "2023-12-31.json", display_name="2023-12-31.json")
    assert "users.json is a symbolic link: not followed" in " ".join(parsed.warnings)
    assert not any("TOP-SECRET" in c.body or "TOP-SECRET" in str(c.meta) for c in parsed.chunks)
    db = tmp_path / "mac" / "chat.db"
    db.parent.mkdir()
    messages_db(db).close()
    (db.parent / "chat.db-wal").symlink_to(outside)
    parsed = parse_file(db, display_name="chat.db")
    assert any("is a symbolic link, not followed" in w for w in parsed.warnings) and parsed.chunks


def test_slack_without_users_json_shows_ids_and_a_damaged_one_warns(tmp_path: Path):
    root = slack_export(tmp_path / "export")
    (root / "users.json").unlink()
    [chunk] = parse_file(root / "general" / "2023-12-31.json").chunks
    assert chunk.meta["senders"] == ["U01", "U02"] and "@U02 can you" in chunk.body
    write(root / "users.json", '[{"id": "U01", "profile": ')
    parsed = parse_file(root / "general" / "2023-12-31.json", display_name="day.json")
    assert parsed.warnings == ["day.json: users.json is not valid JSON; user ids shown instead of names"]
    assert parsed.chunks[0].meta["senders"] == ["U01", "U02"]


def test_slack_truncated_day_file_is_an_error_naming_it(tmp_path: Path):
    root = slack_export(tmp_path / "export")
    whole = (root / "general" / "2023-12-31.json").read_text()
    cut = write(root / "general" / "2024-01-02.json", whole[: len(whole) // 2])
    with pytest.raises(IngestError, match=r"^2024-01-02\.json: not valid JSON"):
        parse_file(cut, display_name="2024-01-02.json")
    rows = [{"type": "message", "user": "U01", "ts": "soon", "text": "x"}, 7, *SLACK_DAY_1[1:2]]
    odd = write(root / "general" / "2024-01-03.json", json.dumps(rows))
    parsed = parse_file(odd, display_name="odd.json")
    assert parsed.warnings == [
        "odd.json: message 1: no readable ts ('soon')",
        "odd.json: message 2: expected an object, got int",
    ]
    assert len(parsed.chunks) == 1


# --- Telegram ----------------------------------------------------------------------------------


def telegram_chat(name: str | None, chat_id: int, messages: list[dict], kind: str = "personal_chat") -> dict:
    chat = {"name": name, "type": kind, "id": chat_id, "messages": messages}
    if name is None:
        del chat["name"]
    return chat


TELEGRAM_BOB = [
    {"id": 1, "type": "service", "date": "2023-12-31T22:40:00", "date_unixtime": "1704058800", "actor": "Bob",
     "actor_id": "user4242", "action": "phone_call", "duration_seconds": 60, "text": "", "text_entities": []},
    {"id": 2, "type": "message", "date": "2023-12-31T22:41:05", "date_unixtime": "1704058865", "from": "Bob",
     "from_id": "user4242",
     "text": ["Landing at the ", {"type": "bold", "text": "airport"}, " at ten: ",
              {"type": "link", "text": "https://example.com/flight"}],
     "text_entities": [{"type": "plain", "text": "Landing at the "}, {"type": "bold", "text": "airport"}]},
    {"id": 3, "type": "message", "date": "2023-12-31T22:42:10", "date_unixtime": "1704058930", "from": "Me",
     "from_id": "user1", "photo": "photos/photo_1@31-12-2023_22-42-10.jpg", "width": 1280, "height": 960,
     "text": "the gate", "text_entities": [{"type": "plain", "text": "the gate"}]},
    {"id": 4, "type": "message", "date": "2023-12-31T22:43:00", "date_unixtime": "1704058980",
     "edited": "2023-12-31T22:44:00", "edited_unixtime": "1704059040", "from": "Me", "from_id": "user1",
     "text": "On my way", "text_entities": [{"type": "plain", "text": "On my way"}]},
    {"id": 5, "type": "message", "date": "2023-12-31T22:44:00", "date_unixtime": "1704059040", "from": "Bob",
     "from_id": "user4242", "forwarded_from": "Airline", "file": "files/ticket.pdf",
     "mime_type": "application/pdf", "text": "", "text_entities": []},
    {"id": 6, "type": "message", "date": "2023-12-31T22:45:00", "date_unixtime": "1704059100", "from": "Bob",
     "from_id": "user4242", "file": "stickers/sticker.webp", "media_type": "sticker", "sticker_emoji": "👍",
     "text": "", "text_entities": []},
]  # fmt: skip


def test_telegram_single_chat_export(tmp_path: Path):
    path = write(tmp_path / "ChatExport_2024-01-01" / "result.json", json.dumps(
        telegram_chat("Bob", 4242, TELEGRAM_BOB), ensure_ascii=False, indent=1))  # fmt: skip
    assert detect_kind(path, path.read_bytes()[:8192]) == "messages"
    parsed = parse_file(path, EIGHT)
    assert parsed.kind == "messages" and parsed.warnings == []
    [chunk] = parsed.chunks
    assert chunk.title == "Bob"
    assert lines_of(chunk) == [
        "Bob: Landing at the airport at ten: https://example.com/flight",
        "Me: [photo] the gate",
        "Me: On my way (edited)",
        "Bob: [forwarded from Airline] [file: ticket.pdf]",
        "Bob: [sticker 👍]",
    ]
    # date_unixtime, not the local `date` an hour ahead; lines are places among the file's messages
    assert message_rows(chunk) == [
        ("2", "Bob", 1704058865),
        ("3", "Me", 1704058930),
        ("4", "Me", 1704058980),
        ("5", "Bob", 1704059040),
        ("6", "Bob", 1704059100),
    ]
    assert (chunk.start_line, chunk.end_line) == (2, 6)


def test_telegram_account_export(tmp_path: Path):
    old = {"id": 1, "type": "message", "date": "2023-06-01T12:00:00", "from": "Dan", "from_id": "user9",
           "text": "no unixtime here"}  # fmt: skip
    other_bob = {"id": 1, "type": "message", "date_unixtime": "1704060000", "from": "Bob",
                 "from_id": "user5050", "text": "another Bob"}  # fmt: skip
    saved = {"id": 7, "type": "message", "date_unixtime": "1704070000", "from": "Me", "from_id": "user1",
             "text": "note to self"}  # fmt: skip
    account = {
        "about": "Here is the data you requested. Remember: Telegram is ad free...",
        "personal_information": {"user_id": 1, "first_name": "Me", "phone_number": "+44 7700 900000"},
        "contacts": {"about": "This is your contact list.", "list": []},
        "chats": {
            "about": "This page lists all chats from this export.",
            "list": [
                telegram_chat("Bob", 4242, TELEGRAM_BOB),
                telegram_chat("Bob", 5050, [other_bob]),
                telegram_chat(None, 1, [saved], kind="saved_messages"),
            ],
        },
        "left_chats": {"about": "...", "list": [telegram_chat("Old group", 99, [old], kind="private_group")]},
    }
    path = write(tmp_path / "DataExport_2024-01-01" / "result.json", json.dumps(account, ensure_ascii=False))
    assert detect_kind(path, path.read_bytes()[:8192]) == "messages"
    chunks = {c.title: c for c in parse_file(path).chunks}
    assert sorted(chunks) == ["Bob", "Bob (5050)", "Old group", "Saved Messages"]
    assert lines_of(chunks["Bob (5050)"]) == ["Bob: another Bob"]
    assert chunks["Saved Messages"].meta["messages"] == [["7", 0, 1704070000]]
    assert chunks["Old group"].meta["messages"][0][2] == 1685620800  # `date` read as UTC
    assert chunks["Old group"].start_line == 9  # the file's ninth message: after 6, 1 and 1


def test_telegram_damaged_export_and_lookalike_json(tmp_path: Path):
    text = json.dumps(telegram_chat("Bob", 4242, TELEGRAM_BOB))
    cut = write(tmp_path / "result.json", text[: len(text) // 2])
    assert detect_kind(cut, cut.read_bytes()) == "messages"
    with pytest.raises(IngestError, match=r"^result\.json: not valid JSON"):
        parse_file(cut, display_name="result.json")
    bad = [7, {"id": 2, "type": "message", "date": "yesterday", "from": "Bob", "text": "x"}, TELEGRAM_BOB[1]]
    parsed = parse_file(
        write(tmp_path / "bad.json", json.dumps(telegram_chat("Bob", 1, bad))), display_name="b"
    )
    assert parsed.warnings == [
        "b: message 1: expected an object, got int",
        "b: message 2: no readable date_unixtime or date ('yesterday')",
    ]
    assert len(parsed.chunks) == 1
    lookalike = write(tmp_path / "inbox.json", json.dumps({"id": 1, "type": "inbox", "messages": [1, 2]}))
    assert parse_file(lookalike).kind == "text"  # the whole file is no Telegram export
    assert detect_kind(Path("package.json"), b'{"name": "x", "version": "1.0.0"}') == "text"


# --- macOS Messages (chat.db) ------------------------------------------------------------------

# the tables and columns kenning reads, as macOS 14 declares them (other columns left out)
MESSAGES_SCHEMA = """
CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT UNIQUE, id TEXT NOT NULL, country TEXT,
    service TEXT NOT NULL, uncanonicalized_id TEXT, person_centric_id TEXT, UNIQUE (id, service));
CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL, style INTEGER,
    state INTEGER, account_id TEXT, properties BLOB, chat_identifier TEXT, service_name TEXT,
    room_name TEXT, account_login TEXT, is_archived INTEGER DEFAULT 0, display_name TEXT,
    group_id TEXT);
CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL, text TEXT,
    replace INTEGER DEFAULT 0, service_center TEXT, handle_id INTEGER DEFAULT 0, subject TEXT,
    country TEXT, attributedBody BLOB, version INTEGER DEFAULT 0, type INTEGER DEFAULT 0,
    service TEXT, account TEXT, account_guid TEXT, error INTEGER DEFAULT 0, date INTEGER,
    date_read INTEGER, date_delivered INTEGER, is_delivered INTEGER DEFAULT 0,
    is_finished INTEGER DEFAULT 0, is_emote INTEGER DEFAULT 0, is_from_me INTEGER DEFAULT 0,
    is_read INTEGER DEFAULT 0, cache_has_attachments INTEGER DEFAULT 0, item_type INTEGER DEFAULT 0,
    group_title TEXT, associated_message_guid TEXT DEFAULT NULL,
    associated_message_type INTEGER DEFAULT 0, date_retracted INTEGER DEFAULT 0,
    date_edited INTEGER DEFAULT 0);
CREATE TABLE chat_message_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
    message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE, message_date INTEGER DEFAULT 0,
    PRIMARY KEY (chat_id, message_id));
CREATE TABLE chat_handle_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
    handle_id INTEGER REFERENCES handle (ROWID) ON DELETE CASCADE, UNIQUE(chat_id, handle_id));
CREATE INDEX chat_message_join_idx_message_id_only ON chat_message_join(message_id);
"""
BOB, ALICE = "+15551234567", "alice@example.com"


def typedstream(text: str, length: bytes | None = None) -> bytes:
    """An NSAttributedString archived the way Messages stores attributedBody."""
    data = text.encode()
    if length is None:
        length = bytes([len(data)]) if len(data) < 0x80 else b"\x81" + len(data).to_bytes(2, "little")
    return (
        b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\x84\x84\x84\x12NSAttributedString\x00\x84\x84"
        b"\x08NSObject\x00\x85\x92\x84\x84\x84\x08NSString\x01\x94\x84\x01+" + length + data
        + b"\x86\x84\x02iI\x01\x05\x92\x84\x84\x84\x0cNSDictionary\x00\x94\x84\x01i\x01\x92\x84\x96\x96"
        b"\x1d__kIMMessagePartAttributeName\x86\x92\x84\x84\x84\x08NSNumber\x00\x84\x84\x07NSValue"
        b"\x00\x94\x84\x01*\x84\x99\x99\x00\x86\x86\x86"
    )  # fmt: skip


def ns(epoch: float) -> int:
    """A Messages date: nanoseconds since 2001-01-01 UTC."""
    return int(epoch - APPLE_EPOCH) * 1_000_000_000


LONG_TEXT = "Long note about the airport pickup: " + "we meet at the arrivals hall by the cafe, " * 3
# (rowid, chat, handle, from me, text, attributedBody, date, extra columns)
MESSAGE_ROWS = [
    (1, 1, 1, 0, "Landing at the airport at ten", None, ns(T_2141_05), {}),
    (2, 1, 1, 1, None, typedstream("On my way"), ns(T_2142_10), {}),
    (3, 1, 1, 0, "Loved \u201cOn my way\u201d", None, ns(T_2142_10 + 5),
     {"associated_message_type": 2000, "associated_message_guid": "p:0/MSG-2"}),
    (4, 1, 1, 1, "Gate B12", None, ns(T_2143), {"date_edited": ns(T_2143 + 60)}),
    (5, 2, 2, 0, "\ufffc", None, ns(T_2143 + 10), {"cache_has_attachments": 1}),
    (6, 2, 0, 1, None, typedstream(LONG_TEXT), ns(T_2143 + 20), {}),
    (7, 2, 1, 0, "see you at the airport", None, ns(T_2143 + 30), {}),
    (8, 2, 1, 0, None, None, ns(T_2143 + 40), {"item_type": 1}),
    (9, 2, 2, 0, None, b"\x04\x0bstreamtyped NSString\x01\x94\x84\x01+\x7fshort", ns(T_2143 + 50), {}),
    (10, 2, 2, 0, "sent on an old Mac", None, int(T_NEW_YEAR_0800 - APPLE_EPOCH), {}),
]  # fmt: skip


def messages_db(path: Path, rows=MESSAGE_ROWS, journal: str = "DELETE") -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.executescript(MESSAGES_SCHEMA)
    conn.executemany(
        "INSERT INTO handle (ROWID, id, service, uncanonicalized_id) VALUES (?, ?, 'iMessage', ?)",
        [(1, BOB, "5551234567"), (2, ALICE, None)],
    )
    conn.executemany(
        "INSERT INTO chat (ROWID, guid, style, chat_identifier, service_name, display_name) "
        "VALUES (?, ?, ?, ?, 'iMessage', ?)",
        [(1, f"iMessage;-;{BOB}", 45, BOB, ""), (2, "iMessage;+;chat123", 43, "chat123", "Trip planning")],
    )
    conn.executemany("INSERT INTO chat_handle_join VALUES (?, ?)", [(1, 1), (2, 1), (2, 2)])
    add_messages(conn, rows)
    return conn


def add_messages(conn: sqlite3.Connection, rows) -> None:
    for rowid, chat, handle, from_me, text, body, date, extra in rows:
        columns = {"ROWID": rowid, "guid": f"MSG-{rowid}", "text": text, "attributedBody": body,
                   "handle_id": handle, "date": date, "is_from_me": from_me, **extra}  # fmt: skip
        names = ", ".join(columns)
        conn.execute(
            f"INSERT INTO message ({names}) VALUES ({', '.join('?' * len(columns))})", list(columns.values())
        )
        conn.execute("INSERT INTO chat_message_join VALUES (?, ?, ?)", (chat, rowid, date))
    conn.commit()


def test_attributed_body_lengths_and_bounds():
    assert attributed_text(typedstream("On my way")) == "On my way"
    assert attributed_text(typedstream(LONG_TEXT)) == LONG_TEXT  # 0x81 and two bytes of length
    assert len(LONG_TEXT.encode()) >= 0x80
    four = typedstream("hé", length=b"\x82" + (3).to_bytes(4, "little"))
    assert attributed_text(four) == "hé"
    assert attributed_text(typedstream("cut", length=b"\x81\xff\x7f")) is None  # runs past the end
    assert attributed_text(typedstream("x", length=b"\x81\x05")) is None  # length cut off
    assert attributed_text(b"no class name here") is None
    assert attributed_text(b"NSString\x01\x94\x84\x01+") is None  # ends where the length should be


def test_messages_chat_db(tmp_path: Path):
    db = tmp_path / "Library" / "Messages" / "chat.db"
    messages_db(db).close()
    head = db.read_bytes()[:8192]
    assert detect_kind(db, head) == "messages" and binary_reason(db, head) is None
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    parsed = parse_file(db, display_name="chat.db")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # never written
    assert parsed.kind == "messages"
    assert parsed.warnings == ["chat.db: 1 message(s) left out: text unreadable"]
    chunks = {c.title: c for c in parsed.chunks}
    assert sorted(chunks) == [BOB, "Trip planning"]
    assert lines_of(chunks[BOB]) == [
        f"{BOB}: Landing at the airport at ten",
        "me: On my way",
        "me: Gate B12 (edited)",
    ]
    assert message_rows(chunks[BOB]) == [
        ("MSG-1", BOB, T_2141_05),
        ("MSG-2", "me", T_2142_10),
        ("MSG-4", "me", T_2143),
    ]
    group = chunks["Trip planning"]
    assert lines_of(group) == [
        f"{ALICE}: [attachment]",
        "me: " + " ".join(LONG_TEXT.split()),
        f"{BOB}: see you at the airport",
        f"{ALICE}: sent on an old Mac",  # a date in seconds, as macOS wrote before 10.13
    ]
    assert [t for _, _, t in group.meta["messages"]] == [1704058990, 1704059000, 1704059010, 1704096000]
    assert (group.start_line, group.end_line) == (5, 10)  # places among the messages by ROWID
    assert group.meta["senders"] == [ALICE, "me", BOB]


def test_messages_chat_db_reads_its_write_ahead_log(tmp_path: Path):
    db = tmp_path / "chat.db"
    writer = messages_db(db, MESSAGE_ROWS[:1], journal="WAL")
    try:
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        writer.execute("PRAGMA wal_autocheckpoint = 0")  # as a running Messages leaves it: in the log
        add_messages(writer, [(11, 1, 1, 0, "only in the log so far", None, ns(T_2143), {})])
        assert (tmp_path / "chat.db-wal").stat().st_size > 0
        files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        [chunk] = parse_file(db).chunks
        assert lines_of(chunk)[-1] == f"{BOB}: only in the log so far"
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files  # nothing written
        # the database and its log past the size bound together: the log is left out, with a warning
        parsed = parse_file(db, display_name="chat.db", max_bytes=db.stat().st_size + 100)
        assert lines_of(parsed.chunks[0]) == [f"{BOB}: Landing at the airport at ten"]
        assert parsed.warnings == [
            "chat.db: its write-ahead log (chat.db-wal) does not fit the size limit with the database "
            "(--max-file-bytes); the newest messages, not yet moved into chat.db, are left out"
        ]
    finally:
        writer.close()


def test_messages_damaged_or_foreign_databases(tmp_path: Path):
    foreign = tmp_path / "other" / "chat.db"
    foreign.parent.mkdir()
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE message (id INTEGER, body TEXT)")
    conn.close()
    with pytest.raises(FileSkipped, match=r"^chat\.db: an SQLite database without the Messages tables"):
        parse_file(foreign, display_name="chat.db")
    db = tmp_path / "chat.db"
    messages_db(db).close()
    data = db.read_bytes()
    for damaged in (
        data[: len(data) // 2],
        data[:100] + b"\x00" * 4096 + data[4196:],
        data[:16] + b"\xff" * 84,
    ):
        db.write_bytes(damaged)
        with pytest.raises(
            IngestError, match=r"^chat\.db: cannot read the database \((database disk|file is)"
        ):
            parse_file(db, display_name="chat.db")
    # a copy under another name is known by its tables; any other SQLite database stays binary
    assert detect_kind(Path("messages-backup"), data[:8192]) == "messages"
    other = tmp_path / "notes.sqlite"
    other.write_bytes(foreign.read_bytes())
    assert detect_kind(other, other.read_bytes()[:8192]) == "binary"
    assert detect_kind(Path("chat.sqlite"), other.read_bytes()[:8192]) == "binary"
    with pytest.raises(IngestError, match=r"binary content"):
        parse_file(other)
    (tmp_path / "index.db").write_bytes(data)  # the walk leaves out .db files but chat.db
    db.write_bytes(data)
    assert sorted(f.path.name for f in discover([tmp_path])) == ["chat.db", "chat.db"]


def test_messages_log_that_does_not_fit_is_left_out(tmp_path: Path, monkeypatch):
    """A log written between the two reads may not fit the database as read (SQLite refuses the
    pair): the database is read alone, with a warning."""
    from kenning.ingest import chat_imessage

    db = tmp_path / "chat.db"
    writer = messages_db(db, MESSAGE_ROWS[:1], journal="WAL")
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    add_messages(writer, [(11, 1, 1, 0, "only in the log so far", None, ns(T_2143), {})])
    read = chat_imessage._read

    def refuse_the_log(copy: Path, display: str, size: int):
        if (copy.parent / "chat.db-wal").exists():
            raise sqlite3.DatabaseError("database disk image is malformed")
        return read(copy, display, size)

    monkeypatch.setattr(chat_imessage, "_read", refuse_the_log)
    try:
        parsed = parse_file(db, display_name="chat.db")
    finally:
        writer.close()
    assert lines_of(parsed.chunks[0]) == [f"{BOB}: Landing at the airport at ten"]
    assert parsed.warnings == [
        "chat.db: its write-ahead log does not fit the database as read (database disk image is "
        "malformed); the newest messages, not yet moved into chat.db, are left out"
    ]


def test_messages_reading_is_bounded_in_steps(tmp_path: Path, monkeypatch):
    from kenning.ingest import chat_imessage

    db = tmp_path / "chat.db"
    messages_db(db).close()
    monkeypatch.setattr(chat_imessage, "STEPS_PER_BYTE", 0)
    monkeypatch.setattr(chat_imessage, "PROGRESS_EVERY", 1)  # a budget of 10 steps
    with pytest.raises(IngestError, match=r"^chat\.db: reading it took more steps than its size allows$"):
        parse_file(db, display_name="chat.db")


def test_messages_database_that_computes_huge_values_is_refused(tmp_path: Path, monkeypatch):
    """A computed column could make SQLite build a gigabyte string from a 16 KB file in one step,
    which no step budget sees: such a table is refused, and no value read may pass 8 MB."""
    from kenning.ingest import chat_imessage

    db = tmp_path / "chat.db"
    conn = messages_db(db)
    conn.executescript(
        "DROP TABLE chat_message_join;"
        "CREATE TABLE chat_message_join (message_id INTEGER, chat_id AS (printf('%.*c', 100000000, 'x')));"
        "INSERT INTO chat_message_join(message_id) SELECT ROWID FROM message;"
    )
    conn.commit()
    conn.close()
    with pytest.raises(
        IngestError, match=r"^chat\.db: the chat_message_join table\(s\) have computed columns"
    ):
        parse_file(db, display_name="chat.db")
    # and a stored value past the limit is an error naming the file, not gigabytes of memory
    monkeypatch.setattr(chat_imessage, "MAX_VALUE_BYTES", 1000)
    conn = messages_db(tmp_path / "big" / "chat.db")
    conn.execute("UPDATE message SET text = ? WHERE ROWID = 1", ("x" * 5000,))
    conn.commit()
    conn.close()
    with pytest.raises(IngestError, match=r"^chat\.db: cannot read the database \(string or blob too big\)"):
        parse_file(tmp_path / "big" / "chat.db", display_name="chat.db")


# --- all four in one index ---------------------------------------------------------------------


def test_an_index_of_chat_exports_finds_messages_by_sender(tmp_path: Path):
    from kenning import Index

    folder = tmp_path / "chats"
    write(folder / "whatsapp" / "WhatsApp Chat with Bob.txt", WHATSAPP_IPHONE)
    slack_export(folder / "slack")
    write(folder / "telegram" / "result.json", json.dumps(telegram_chat("Bob", 4242, TELEGRAM_BOB)))
    messages_db(folder / "Messages" / "chat.db").close()
    whole = (folder / "slack" / "general" / "2023-12-31.json").read_text()
    write(folder / "slack" / "general" / "2024-01-02.json", whole[: len(whole) // 2])  # cut short
    with Index(tmp_path / "ix") as ix:
        report = ix.add([folder])
        by_bob = ix.search("airport", mode="lexical", filters=Filters(meta=(("sender", "Bob"),)))
        by_phone = ix.search("airport", mode="lexical", filters=Filters(meta=(("sender", BOB),)))
        by_me = ix.search("gate", mode="lexical", filters=Filters(meta=(("sender", "me"),)))
    assert [Path(p).name for p, _ in report.errors] == ["2024-01-02.json"]
    assert "not valid JSON" in report.errors[0][1]
    skipped = sorted(Path(p).name for p, _ in report.skipped)
    assert skipped == ["channels.json", "dms.json", "integration_logs.json", "users.json"]
    found = {Path(h.path).parent.name for h in by_bob.hits}
    assert found == {"whatsapp", "general", "telegram"}
    assert all("Bob" in h.meta["senders"] for h in by_bob.hits)
    assert [Path(h.path).name for h in by_phone.hits] == ["chat.db", "chat.db"]
    assert {Path(h.path).name for h in by_me.hits} == {"chat.db", "result.json"}  # "me" and Telegram's "Me"


def test_numbers_too_large_for_a_date_are_warnings_not_failures(tmp_path: Path):
    day = '[{"type":"message","user":"U1","text":"hi","ts":"1704059000.000200"},'
    big = write(
        tmp_path / "general" / "2024-01-01.json",
        day + '{"type":"message","user":"U1","text":"x","ts":' + "9" * 400 + "}]",
    )
    parsed = parse_file(big, display_name="2024-01-01.json")
    assert len(parsed.chunks) == 1 and parsed.warnings == [
        "2024-01-01.json: message 2: no readable ts ('" + "9" * 40 + "')"
    ]
    huge = write(
        tmp_path / "general" / "2024-01-02.json",
        day + '{"type":"message","user":"U1","text":"x","ts":' + "9" * 5000 + "}]",
    )
    with pytest.raises(
        IngestError,
        match=r"^2024-01-02\.json: not valid JSON \(Exceeds the limit \(4300 digits\) for integer string",
    ):
        parse_file(huge, display_name="2024-01-02.json")
    chat = {"name": "Bob", "type": "personal_chat", "id": 1, "messages": [
        {"id": 1, "type": "message", "date_unixtime": int("9" * 400), "text": "lost"},
        {"id": 2, "type": "message", "date_unixtime": "1704059000", "text": "kept"},
    ]}  # fmt: skip
    parsed = parse_file(write(tmp_path / "tg" / "result.json", json.dumps(chat)))
    assert [lines_of(c) for c in parsed.chunks] == [["unknown: kept"]] and "message 1" in parsed.warnings[0]
