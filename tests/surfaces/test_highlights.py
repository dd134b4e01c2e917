"""Matched words come as character spans beside the document's own text, never as markup inside it:
a note's `**bold**`, `__dunder__`, `<mark>`, backticks and escape sequences stay what they are, and
each surface draws the spans its own way (ANSI on a terminal, `**` around escaped text in Markdown,
`<mark>` nodes on the web page: tests/surfaces/test_web_page.py)."""

import json

import pytest

from kenning import Index
from kenning.search.snippets import Snippet
from kenning.surfaces.cli import main
from kenning.surfaces.render import Style, markdown_marks, render_search
from kenning.surfaces.terminal import visible

TRICKY = (
    "# Plan\n\n"
    "The **Plan** keeps `rollout` in __init__ and marks <mark>rollout</mark> with \\*care\\*; "
    "a stray \x1b[31mred\x1b[0m code and a 1. list\n"
)


@pytest.fixture
def index_dir(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text(TRICKY)
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
    return tmp_path / "ix"


def _hit(index_dir, query="plan rollout"):
    with Index(index_dir, create=False) as ix:
        response = ix.search(query, mode="lexical")
    return response, response.hits[0]


def test_the_snippet_is_the_documents_own_text_and_the_spans_mark_the_matches(index_dir):
    _, hit = _hit(index_dir)
    assert "The **Plan** keeps `rollout` in __init__ and marks <mark>rollout</mark>" in hit.snippet
    marked = [hit.snippet[s:e] for s, e in hit.highlights]
    assert marked == ["Plan", "rollout", "rollout"]  # the words, never the asterisks or the tag
    assert all(e > s for s, e in hit.highlights)
    assert all(a[1] <= b[0] for a, b in zip(hit.highlights, hit.highlights[1:], strict=False))


def test_json_keeps_the_text_untouched_and_gives_the_spans(index_dir, capsys):
    code = main(["search", "plan rollout", "--index", str(index_dir), "--mode", "lexical", "--json"])
    assert code == 0
    hit = json.loads(capsys.readouterr().out)["hits"][0]
    assert "**Plan**" in hit["snippet"] and "****" not in hit["snippet"]
    assert "\x1b[31mred" in hit["snippet"]  # the data is intact (JSON escapes it)
    assert [hit["snippet"][s:e] for s, e in hit["highlights"]] == ["Plan", "rollout", "rollout"]


def _first_hit(tmp_path, text: str, query: str):
    """The best hit for `query` in an index of one note holding `text`."""
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "note.md").write_text(text)
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
        return ix.search(query, mode="lexical").hits[0]


def test_code_point_spans_hold_past_characters_outside_the_basic_plane(tmp_path):
    hit = _first_hit(tmp_path, "# Log\n\n🎉🎉 launch day 🚀 then the launch review\n", "launch")
    assert [hit.snippet[s:e] for s, e in hit.highlights] == ["launch", "launch"]


def test_a_terminal_draws_the_spans_and_shows_the_sources_escapes(index_dir):
    response, hit = _hit(index_dir)

    class Tty:
        def isatty(self):
            return True

    rich = Style(Tty())
    rich.rich = True
    shown = rich.marks(hit)
    assert shown.count("[1;33m") == 3  # one style per matched word, from the spans
    assert "**Plan**".replace("Plan", rich.sgr("Plan", "1;33")) in shown  # the source's ** kept
    plain = render_search(response, "text", Style(None))
    assert "The **Plan** keeps `rollout`" in plain  # no terminal: the text as the note has it


def test_markdown_escapes_the_sources_markup_and_bolds_only_the_matches(index_dir, capsys):
    _, hit = _hit(index_dir)
    md = markdown_marks(hit)
    assert "\\*\\***Plan**\\*\\*" in md  # the note's own asterisks escaped, the match bold
    assert "\\`**rollout**\\`" in md
    assert "\\_\\_init\\_\\_" in md
    assert "\\<mark\\>**rollout**\\</mark\\>" in md
    assert "\\\\\\*care\\\\\\*" in md  # a backslash the note wrote stays a backslash
    code = main(["search", "plan rollout", "--index", str(index_dir), "--mode", "lexical", "--format", "md"])
    out = capsys.readouterr().out
    assert code == 0 and visible(md) in out and "\x1b" not in out  # escapes shown, never obeyed


def test_a_snippet_starting_like_a_list_or_heading_is_not_read_as_one():
    class Hit:
        snippet = "1. step and # not a heading"
        highlights = [(3, 7)]

    assert markdown_marks(Hit()) == "1\\. **step** and # not a heading"
    hit = Hit()
    hit.snippet, hit.highlights = "# heading-like start", []
    assert markdown_marks(hit) == "\\# heading-like start"


def test_pieces_walk_the_spans_in_order():
    snippet = Snippet("alpha beta gamma", [(0, 5), (11, 16)])
    assert list(snippet.pieces()) == [("alpha", True), (" beta ", False), ("gamma", True)]


def test_snippets_are_made_only_for_the_hits_that_are_read(tmp_path, monkeypatch):
    """A caller asking for many hits to rerank them does not pay for snippets it never reads."""
    import kenning.search.present as present

    notes = tmp_path / "n"
    notes.mkdir()
    for i in range(12):
        (notes / f"note{i}.md").write_text(f"# Launch {i}\n\nThe launch review {i} went well.\n")
    made = []
    real = present.make_snippet
    monkeypatch.setattr(present, "make_snippet", lambda *a, **k: made.append(1) or real(*a, **k))
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
        response = ix.search("launch review", mode="lexical", limit=10)
    assert len(response.hits) == 10 and made == []
    first = response.hits[0]
    assert "launch" in first.snippet.lower() and first.highlights
    assert first.snippet == first.snippet and len(made) == 1  # made once, on the first read
    hits = response.to_dict()["hits"]  # what the surfaces print: every hit's snippet, made now
    assert len(made) == 10 and all(h["snippet"] and h["highlights"] for h in hits)
    assert hits[0]["snippet"] == first.snippet and "_snippet" not in hits[0]


def test_a_hit_is_still_a_plain_record_to_build_copy_and_pickle(tmp_path):
    """Deferring the snippet changes nothing a caller does with a hit: construct it with a snippet,
    set one, copy it, pickle it, turn it into a dict (each makes a deferred snippet first)."""
    import copy
    import dataclasses
    import pickle

    from kenning.search.results import Hit

    built = Hit(1, 0.5, snippet="alpha beta", highlights=[(0, 5)])
    assert (built.snippet, list(built.highlights)) == ("alpha beta", [(0, 5)])
    built.snippet, built.highlights = "gamma", []
    assert dataclasses.asdict(built)["snippet"] == "gamma" and Hit(2, 0.1).snippet == ""
    hit = _first_hit(tmp_path, "# Launch\n\nThe launch review went well.\n", "launch review")
    for copied in (copy.deepcopy(hit), pickle.loads(pickle.dumps(hit)), dataclasses.replace(hit)):
        assert copied.snippet == hit.snippet and list(copied.highlights) == list(hit.highlights)
    assert "launch" in dataclasses.asdict(hit)["snippet"].lower() and copied == hit
