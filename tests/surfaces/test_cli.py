"""The CLI end to end: index, search (--explain, --json), get, status, eval, and error messages."""

import json
import re

import pytest
from locations import BOOKS

from kenning.surfaces.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def notes(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "auth.md").write_text("# Auth\n\n## Tokens\n\nWe rotate JWT signing keys every month.\n")
    (root / "code.py").write_text(
        "def parseQueryString(raw):\n    return dict(x.split('=') for x in raw.split('&'))\n"
    )
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    return root


def test_index_search_get_status(tmp_path, notes, capsys):
    ix = str(tmp_path / "ix")
    code, out, err = run(capsys, "index", str(notes), "--index", ix, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["files_indexed"] == 2 and report["chunks_added"] == 2
    assert report["errors"] and "broken.pdf" in report["errors"][0]["path"]

    code, out, _ = run(capsys, "search", "rotate signing keys", "--index", ix, "--json")
    data = json.loads(out)
    hit = data["hits"][0]
    assert hit["title"] == "Auth > Tokens" and hit["start_line"] == 1  # the empty "# Auth" line too
    assert [hit["snippet"][s:e] for s, e in hit["highlights"]][:1] == ["rotate"]

    code, out, _ = run(capsys, "search", "parse query string", "--index", ix, "--json", "-n", "1")
    assert json.loads(out)["hits"][0]["title"] == "code.py > def parseQueryString"

    code, out, _ = run(capsys, "get", str(hit["id"]), "--index", ix)
    assert code == 0 and "We rotate JWT signing keys" in out

    code, out, _ = run(capsys, "status", "--index", ix, "--json")
    status = json.loads(out)
    assert (
        status["chunks"] == 2 and status["sources"] == 2 and status["terms"] > 5 and status["size_bytes"] > 0
    )


def test_embed_later_in_slices(tmp_path, notes, capsys):
    ix = str(tmp_path / "ix")
    run(capsys, "index", str(notes), "--index", ix, "--no-embed", "-q")
    code, out, _ = run(capsys, "embed", "--index", ix, "--limit", "1", "-q")
    assert code == 0 and "embedded 1 of 2 chunk(s)" in out and "1 chunk(s) still need vectors" in out
    code, out, _ = run(capsys, "embed", "--index", ix, "--json")
    report = json.loads(out)
    assert (report["embedded"], report["remaining"], report["model"]) == (1, 0, "all-MiniLM-L6-v2")
    code, _, err = run(capsys, "embed", "--index", ix, "--limit", "-1")
    assert code == 2 and "limit must be 0 or more" in err
    code, out, _ = run(capsys, "search", "rotate keys zeppelin", "--index", ix)
    assert "note: no chunk contains 'zeppelin'" in out
    assert re.search(r"conf [01]\.\d\d  2/3 words  Auth > Tokens  \[#1\]", out), out


def test_search_knobs_and_explain_text(tmp_path, notes, capsys):
    ix = str(tmp_path / "ix")
    run(capsys, "index", str(notes), "--index", ix, "-q")
    code, out, _ = run(
        capsys,
        "search",
        "signing keys",
        "--index",
        ix,
        "--explain",
        "--variant",
        "plus",
        "--k1",
        "1.5",
        "--title-weight",
        "3",
    )
    assert code == 0
    assert "funnel: corpus 2 → gathered 1" in out
    assert "title tf" in out and "coordination" in out


def test_errors_are_clear(tmp_path, capsys):
    code, _, err = run(capsys, "search", "x", "--index", str(tmp_path / "none"))
    assert code == 2 and "no kenning index" in err
    code, _, err = run(capsys, "search", "x", "--index", str(tmp_path / "none"), "--b", "3")
    assert code == 2 and "b must be a number in [0, 1], got 3.0" in err
    code, _, err = run(capsys, "eval", str(tmp_path))
    assert code == 2 and "corpus.jsonl" in err


def test_no_results_says_why(tmp_path, notes, capsys):
    ix = str(tmp_path / "ix")
    run(capsys, "index", str(notes), "--index", ix, "-q")
    code, out, _ = run(capsys, "search", "kubernetes", "--index", ix)
    assert code == 0 and "no results" in out and "kubernetes" in out


@pytest.mark.skipif(not BOOKS.is_dir(), reason="needs ../shared/data/books")
def test_books_sections_and_explained_search(tmp_path, capsys):
    ix = str(tmp_path / "ix")
    code, out, _ = run(
        capsys,
        "index",
        str(BOOKS / "monte-cristo.md"),
        str(BOOKS / "dracula.md"),
        "--index",
        ix,
        "--json",
        "--no-embed",
    )
    assert code == 0 and json.loads(out)["errors"] == []
    from kenning import Index

    with Index(ix) as index:
        rows = index.store.conn.execute(
            "SELECT DISTINCT title FROM chunks WHERE title LIKE '% > %'"
        ).fetchall()
        titles = [r[0] for r in rows]
    assert sum(t.startswith("The Count of Monte Cristo > Chapter ") for t in titles) == 117
    assert sum(t.startswith("Dracula > CHAPTER ") for t in titles) == 27
    assert len(titles) == 144

    code, out, _ = run(capsys, "search", "Dantès father", "--index", ix, "--explain", "--json")
    data = json.loads(out)
    funnel = data["funnel"]
    assert funnel["corpus"] > funnel["gathered"] >= funnel["returned"] == 10
    top = data["hits"][0]
    terms = {row["term"]: row for row in top["explain"]["lexical"]["terms"]}
    assert set(terms) == {"dant", "father"}
    assert all(row["body"]["tf"] > 0 for row in terms.values())
    assert "Monte Cristo" in top["title"]


def test_index_dir_from_environment_and_get_by_path(tmp_path, notes, capsys, monkeypatch):
    monkeypatch.setenv("KENNING_INDEX", str(tmp_path / "env-ix"))
    code, _, _ = run(capsys, "index", str(notes), "-q")
    assert code == 0 and (tmp_path / "env-ix" / "index.db").is_file()
    code, out, _ = run(capsys, "get", str(notes / "auth.md"), "--json")
    document = json.loads(out)
    assert code == 0 and [s["title"] for s in document["sections"]] == ["Auth > Tokens"]
    code, _, err = run(capsys, "get", "no-such-thing")
    assert code == 2 and "nothing indexed under 'no-such-thing'" in err


def test_a_leading_dash_word_is_query_text_not_an_option(tmp_path, notes, capsys):
    ix = str(tmp_path / "ix")
    run(capsys, "index", str(notes), "--index", ix, "-q", "--no-embed")
    code, out, err = run(capsys, "search", "-rotate", "keys", "query", "--index", ix, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["query"] == "-rotate keys query" and data["plan"]["exclusions"][0]["match"] == "rotate"
    assert [h["title"] for h in data["hits"]] == ["code.py > def parseQueryString"]
    code, out, _ = run(capsys, "search", "--index", ix, "-n1", "--json", "rotate", "-cat")
    assert code == 0 and json.loads(out)["query"] == "rotate -cat" and len(json.loads(out)["hits"]) == 1
    code, out, _ = run(capsys, "search", "--index", ix, "--json", "--", "-n", "keys")
    assert code == 0 and json.loads(out)["query"] == "-n keys"


def test_query_text_never_errors(tmp_path, notes, capsys):
    ix = str(tmp_path / "ix")
    run(capsys, "index", str(notes), "--index", ix, "-q", "--no-embed")
    for text in ["TSS (Time Sharing System)", '"unbalanced quote', "+", "a OR", '(x OR y) -"z', "title:"]:
        code, out, err = run(capsys, "search", text, "--index", ix)
        assert code == 0 and "Traceback" not in err, (text, err)
    code, out, _ = run(capsys, "search", '"rotation policy" keys', "--index", ix)
    assert "relaxed" in out and 'no chunk holds "rotation policy"' in out


def test_known_item_eval(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(12):
        (docs / f"note{n}.md").write_text(
            f"# Note {n}\n\nThis is note number {n} about topic {n * 7}. "
            f"It records that the gauge number {n} was checked on day {n + 3} by the night shift.\n"
        )
    code, out, err = run(
        capsys, "eval", str(docs), "--known-item", "8", "--index", str(tmp_path / "ix"), "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["queries"] == 8 and report["hit_at_1"] == 1.0 and report["mode"] == "hybrid"


def test_get_by_path_shows_every_record_of_a_corpus_file(tmp_path, capsys):
    """A JSONL corpus file keys its chunks by each record's id, not by its path: asked for by path, it
    is shown whole, record after record (before, 'nothing indexed under' a file the index holds)."""
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {"_id": "d1", "title": "Kilns", "text": "The kiln fires pots."},
        {"_id": "d2", "title": "Looms"},
    ]
    records[1]["text"] = "The loom weaves cloth."
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    ix = str(tmp_path / "ix")
    assert run(capsys, "index", str(corpus), "--index", ix, "-q")[0] == 0
    code, out, _ = run(capsys, "get", str(corpus), "--json", "--index", ix)
    assert code == 0 and [s["title"] for s in json.loads(out)["sections"]] == ["Kilns", "Looms"]
    code, out, _ = run(capsys, "get", "d2", "--json", "--index", ix)  # one record by its id, as before
    assert code == 0 and [s["title"] for s in json.loads(out)["sections"]] == ["Looms"]
