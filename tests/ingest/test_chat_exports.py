"""Chat apps' exports read in their real formats. Every fixture is built here in the app's own
layout (file names, fields, schema), with the marks and quirks real exports carry."""

from pathlib import Path

import pytest

from kenning.ingest import detect_kind, parse_file

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
    parsed = parse_file(path, display_name="chat.txt")
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
