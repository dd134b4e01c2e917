"""Collections, filters (path, type, dates, front matter) inside the funnel, and spelling."""

import json
import os

import pytest

from kenning import Index
from kenning.query.filters import FilterError, Filters, parse_meta, parse_time
from kenning.surfaces.cli import main


def write(path, text, mtime=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


JAN = parse_time("2026-01-15", "--since")
JUN = parse_time("2026-06-15", "--since")


@pytest.fixture
def index(tmp_path):
    notes, code = tmp_path / "notes", tmp_path / "code"
    write(
        notes / "draft.md",
        "---\nstatus: draft\ntags: [auth, tokens]\ndate: 2026-01-15\n---\n# Draft\n\nToken rotation plan.\n",
    )
    write(notes / "final.md", "---\nstatus: final\ndate: 2026-06-15\n---\n# Final\n\nToken rotation done.\n")
    write(
        code / "tokens.py",
        "def rotate_token(key):\n    '''Token rotation helper.'''\n    return key\n",
        mtime=JUN,
    )
    write(
        tmp_path / "chat.jsonl",
        json.dumps(
            {
                "timestamp": "2026-03-01T10:00:00Z",
                "conversation": "ops",
                "sender": "ana",
                "text": "token rotation tonight?",
            }
        )
        + "\n",
    )
    ix = Index(tmp_path / "ix")
    ix.add([notes], collection="notes")
    ix.add([code], collection="code")
    ix.add([tmp_path / "chat.jsonl"], collection="chat")
    yield ix
    ix.close()


def titles(ix, query="token rotation", **filters):
    response = ix.search(query, limit=20, filters=Filters(**filters))
    return sorted(h.title for h in response.hits), response


def test_collections_scope_results(index):
    assert titles(index, collections=("notes",))[0] == ["Draft", "Final"]
    assert titles(index, collections=("code",))[0] == ["tokens.py > def rotate_token"]
    assert len(titles(index, collections=("notes", "chat"))[0]) == 3
    assert {k: v["files"] for k, v in index.status()["collections"].items()} == {
        "notes": 2,
        "code": 1,
        "chat": 1,
    }


def test_filters_are_counted_in_the_funnel(index):
    found, response = titles(index, collections=("notes",))
    step = response.funnel.constraints[0]
    assert step["kind"] == "filter" and step["remaining"] == 2
    assert response.funnel.gathered == 4 and response.funnel.filtered == 2


def test_path_and_type(index):
    assert titles(index, paths=("*.py",))[0] == ["tokens.py > def rotate_token"]
    assert titles(index, paths=("*/notes/*",))[0] == ["Draft", "Final"]
    assert titles(index, kinds=("messages",))[0] == ["ops"]


def test_dates_use_front_matter_message_time_and_mtime(index):
    assert titles(index, since=parse_time("2026-02-01", "--since"))[0] == [
        "Final",
        "ops",
        "tokens.py > def rotate_token",
    ]
    assert titles(index, before=parse_time("2026-02-01", "--before"))[0] == ["Draft"]
    assert titles(
        index, since=parse_time("2026-02-01", "--since"), before=parse_time("2026-04-01", "--before")
    )[0] == ["ops"]


def test_front_matter_metadata(index):
    assert titles(index, meta=(("status", "draft"),))[0] == ["Draft"]
    assert titles(index, meta=(("tags", "tokens"),))[0] == ["Draft"]  # list values match any element
    assert titles(index, meta=(("status", "missing"),))[0] == []


def test_empty_result_names_the_filter(index):
    _, response = titles(index, "+kubernetes", collections=("notes",))
    assert "+kubernetes has no postings" in response.empty_reason
    _, response = titles(index, "+plan rotation", collections=("code",))
    assert response.hits and all(h.relaxed == ["+plan"] for h in response.hits)  # filters are never relaxed
    assert any("no chunk holds +plan (in scope)" in n.text for n in response.notices)
    response = index.search("+plan rotation", filters=Filters(collections=("code",)), relax=False)
    assert response.empty_reason == "+plan has no postings in collection code"
    _, response = titles(index, "rotation", collections=("code",), meta=(("status", "draft"),))
    assert response.empty_reason.startswith("rotation has no postings in collection code; status=draft")


def test_bad_filter_values_are_named():
    with pytest.raises(FilterError, match="--since 'yesterdayish'"):
        parse_time("yesterdayish", "--since")
    with pytest.raises(FilterError, match="KEY=VALUE"):
        parse_meta(["status"])
    with pytest.raises(FilterError, match="type 'pptx'"):
        Filters(kinds=("pptx",))
    assert parse_time("7d", "--since") < parse_time("1d", "--since")


def test_cli_filters_and_collection(tmp_path, capsys):
    write(tmp_path / "a" / "one.md", "# One\n\nalpha bravo\n")
    write(tmp_path / "b" / "two.md", "# Two\n\nalpha charlie\n")
    ix = str(tmp_path / "ix")
    assert main(["index", str(tmp_path / "a"), "-c", "first", "--index", ix, "-q"]) == 0
    assert main(["index", str(tmp_path / "b"), "-c", "second", "--index", ix, "-q"]) == 0
    capsys.readouterr()
    main(["search", "alpha", "-c", "second", "--index", ix, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [h["title"] for h in data["hits"]] == ["Two"] and data["filters"]["collections"] == ["second"]
    assert main(["search", "alpha", "--since", "someday", "--index", ix]) == 2
    assert "--since 'someday'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ spelling


@pytest.fixture
def books(tmp_path):
    write(
        tmp_path / "b.md",
        "# Count\n\nThe count of Monte Cristo met Mercédès. Dantès escaped.\n\n"
        "## Prison\n\nDantès and the abbé planned the escape from the prison.\n",
    )
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path / "b.md"])
    yield ix
    ix.close()


def test_did_you_mean_without_flag(books):
    response = books.search("prisonn escape")
    assert response.suggestions == [{"word": "prisonn", "did_you_mean": "prison"}]
    assert response.hits  # "escape" still matches


def test_spell_corrects_and_says_so(books):
    response = books.search("+dantez", spell=True)
    assert response.plan.corrections == [{"from": "dantez", "to": "dantes"}]
    assert "searched for 'dantes' instead of 'dantez'" in [n.text for n in response.notices]
    assert len(response.hits) == 2


def test_vocabulary_follows_deletions(tmp_path):
    write(tmp_path / "x.md", "# X\n\nzeppelin hangar\n")
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path])
    assert ix.store.vocabulary()["zeppelin"] == 1
    (tmp_path / "x.md").unlink()
    ix.add([tmp_path])
    assert "zeppelin" not in ix.store.vocabulary()
    assert ix.search("zepelin").suggestions == []


def test_vocabulary_after_changes_is_the_vocabulary_of_a_fresh_build(tmp_path):
    """A run counts changed files' old words while its workers finish, and removed files' at its end:
    either way the counts are those a fresh build of what is there now makes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    write(docs / "a.md", "# A\n\nzeppelin hangar Zeppelin\n")
    write(docs / "b.md", "# B\n\nhangar doors open\n")
    write(docs / "c.md", "# C\n\nclosed doors\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([docs])
        write(docs / "a.md", "# A\n\nairship hangar\n")  # changed
        (docs / "c.md").unlink()  # removed
        write(docs / "d.md", "# D\n\nzeppelin museum\n")  # added
        ix.add([docs])
        with Index(tmp_path / "fresh") as fresh:
            fresh.add([docs])
            assert ix.store.vocabulary() == fresh.store.vocabulary()
            assert ix.store.vocabulary()["zeppelin"] == 1 and "closed" not in ix.store.vocabulary()
