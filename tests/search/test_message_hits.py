"""Chat logs searched by who said it and when: --meta on a window's senders and conversation, hits
that list the messages that matched with sender and time, and `get FILE#msg=ID`."""

import io
import json

import pytest

from kenning import Index
from kenning.query.filters import Filters

MESSAGES = [
    ("family", "Alice", "Are you coming on Friday?", 1_700_000_000, "f1"),
    ("family", "Bob", "I'll pick you up at the airport", 1_700_000_060, "f2"),
    ("family", "Alice", "Great, thanks", 1_700_000_120, "f3"),
    ("work", "Carol", "The airport shuttle is late again", 1_700_100_000, "w1"),
    ("work", "Dave", "ok", 1_700_100_100, "w2"),
]
MESSAGES += [("family", "Alice", f"later note {i}", 1_700_200_000 + i, f"f{4 + i}") for i in range(12)]


@pytest.fixture
def chat(tmp_path):
    folder = tmp_path / "chat"
    folder.mkdir()
    with open(folder / "log.jsonl", "w") as out:
        for conversation, sender, text, ts, mid in MESSAGES:
            row = {"conversation": conversation, "sender": sender, "text": text, "timestamp": ts, "id": mid}
            out.write(json.dumps(row) + "\n")
    ix = Index(tmp_path / "ix")
    ix.add([folder])
    yield ix, folder / "log.jsonl"
    ix.close()


def search(ix, query, **meta):
    return ix.search(query, mode="lexical", filters=Filters(meta=tuple(meta.items())))


def test_meta_filters_read_senders_and_conversations(chat):
    ix, _ = chat
    assert [h.title for h in search(ix, "airport").hits] == ["work", "family"]
    assert [h.title for h in search(ix, "airport", sender="Bob").hits] == ["family"]
    assert [h.title for h in search(ix, "airport", participant="carol").hits] == ["work"]
    assert [h.title for h in search(ix, "airport", conversation="FAMILY").hits] == ["family"]
    assert search(ix, "airport", sender="Bob", conversation="work").hits == []
    dated = ix.search(
        "airport", mode="lexical", filters=Filters.parse(since="2023-11-15", meta={"sender": "Carol"})
    )
    assert [h.title for h in dated.hits] == ["work"]


def test_a_hit_lists_the_matched_message_with_its_sender_time_and_neighbours(chat):
    ix, _ = chat
    hit = search(ix, "airport", sender="Bob").hits[0]
    assert hit.messages == [
        {
            "id": "f1",
            "sender": "Alice",
            "time": "2023-11-14T22:13:20+00:00",
            "text": "Are you coming on Friday?",
            "matched": False,
        },
        {
            "id": "f2",
            "sender": "Bob",
            "time": "2023-11-14T22:14:20+00:00",
            "text": "I'll pick you up at the airport",
            "matched": True,
        },
        {
            "id": "f3",
            "sender": "Alice",
            "time": "2023-11-14T22:15:20+00:00",
            "text": "Great, thanks",
            "matched": False,
        },
    ]
    assert hit.to_dict()["messages"] == hit.messages
    later = search(ix, "note").hits[0]
    assert sum(m["matched"] for m in later.messages) == 3  # at most three matched messages are shown
    assert len(later.messages) <= 3 * 3


def test_the_surfaces_print_the_messages(chat):
    from kenning.surfaces.render import Style, render_search
    from kenning.surfaces.service import hits_text

    ix, _ = chat
    response = search(ix, "airport", sender="Bob")
    text = render_search(response, "text", Style(io.StringIO()))
    assert "› " in text and "Bob: I'll pick you up at the airport" in text
    assert "Alice: Great, thanks" in text
    agent = hits_text(response.to_dict())
    assert any(
        line.strip().startswith("›") and "Bob: I'll pick you up" in line for line in agent.splitlines()
    )


def test_get_shows_the_conversation_at_a_message(chat):
    ix, path = chat
    document = ix.read(f"{path}#msg=f2")
    lines = [text for section in document.sections for _, text in section.lines]
    # each message after its time, the one asked for marked
    assert "› 2023-11-14 22:14  Bob: I'll pick you up at the airport" in lines
    assert "  2023-11-14 22:13  Alice: Are you coming on Friday?" in lines
    whole = ix.read(str(path))
    assert "2023-11-14 22:14  Bob: I'll pick you up at the airport" in [
        t for s in whole.sections for _, t in s.lines
    ]
    assert all("Carol" not in line for line in lines)  # only its own conversation
    late = ix.read(f"{path}#msg=f15")  # in the last window: that window and the one before it
    late_lines = [text for section in late.sections for _, text in section.lines]
    assert any(line.endswith("Alice: later note 11") for line in late_lines)
    assert not any(line.endswith("Alice: later note 0") for line in late_lines)
    with pytest.raises(ValueError, match="no message 'nope' in it"):
        ix.read(f"{path}#msg=nope")
    assert ix.read("nothing.jsonl#msg=f2") is None


def test_damaged_message_metadata_still_shows_the_lines():
    from kenning.analysis.analyzer import Analyzer
    from kenning.search.message_lines import message_lines

    body = "Alice: hello there\nBob: the airport at noon\nAlice: fine"
    analyzer = Analyzer()
    terms = set(analyzer.token_terms("airport"))
    crafted = [
        {"senders": ["Alice"], "conversation": "x", "messages": [[1, 99, "soon"], None, "x"]},
        {"senders": "Alice", "conversation": "x", "messages": [[1, 0, 1e300]] * 3},
        {"senders": ["A"], "conversation": "x", "messages": [["id", 0, 1.0]] * 2},  # not line by line
    ]
    for meta in crafted:
        shown = message_lines(body, meta, terms, analyzer)
        assert [m["matched"] for m in shown] == [False, True, False]
        assert shown[1]["text"] == "the airport at noon" and shown[1]["time"] is None
        assert shown[1]["sender"] == "Bob"


def test_the_messages_shown_are_those_holding_most_of_the_query():
    from kenning.analysis.analyzer import Analyzer
    from kenning.search.message_lines import MAX_MATCHED, message_lines

    analyzer = Analyzer()
    lines = [f"A: a word about trains {i}" for i in range(6)] + ["B: the trains leave the harbour at dawn"]
    meta = {"senders": ["A", "B"], "conversation": "x", "messages": [[str(i), 0, 1.0] for i in range(7)]}
    terms = {t for w in ("trains", "harbour", "dawn") for t in analyzer.token_terms(w)}
    shown = message_lines("\n".join(lines), meta, terms, analyzer)
    matched = [m["text"] for m in shown if m["matched"]]
    assert len(matched) == MAX_MATCHED and matched[-1] == "the trains leave the harbour at dawn"
    assert matched[:2] == ["a word about trains 0", "a word about trains 1"]  # then the earliest, in order


def test_get_shows_each_message_once_around_a_run_of_repeats(tmp_path):
    rows = [("ana", f"note {i}", 60 * i) for i in range(10)] + [("bo", "ok", 1000 + j) for j in range(3)]
    rows += [("ana", f"later {i}", 2000 + 60 * i) for i in range(6)]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "log.jsonl").write_text(
        "".join(
            json.dumps({"sender": s, "text": t, "timestamp": 1_700_000_000 + ts, "conversation": "c"}) + "\n"
            for s, t, ts in rows
        )
    )
    with Index(tmp_path / "ix") as ix:
        ix.add([tmp_path / "c"])
        lines = [
            t for section in ix.read(str(tmp_path / "c" / "log.jsonl")).sections for _, t in section.lines
        ]
    assert len(lines) == len(set(lines)) == 10 + 1 + 6  # three "ok" read as one line, every line once
    assert any(line.endswith("bo: ok (×3)") for line in lines)
