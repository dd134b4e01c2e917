"""Markdown sections: heading paths, fenced code, front matter and windowing."""

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from kenning.ingest import ChunkOptions, parse_file

BOOK = """\
Preface before any heading.

# The Count of Monte Cristo

## Chapter 25. The Unknown

Text of chapter 25.

```
# not a heading, a shell comment
## nor this
```

## Chapter 26. The Pont du Gard Inn ##

Caderousse keeps the inn.

~~~~
# still code
```
# still code: a shorter/different fence does not close
~~~~

### The Diamond

The abbé shows the diamond.

# Appendix

#### Skipped level
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_heading_paths_and_line_ranges(tmp_path: Path):
    path = write(tmp_path, "monte-cristo.md", BOOK)
    parsed = parse_file(path)
    assert parsed.kind == "markdown"
    assert parsed.warnings == []
    got = [(c.title, c.start_line, c.end_line) for c in parsed.chunks]
    assert got == [
        ("monte-cristo", 1, 2),
        ("The Count of Monte Cristo > Chapter 25. The Unknown", 3, 13),
        ("The Count of Monte Cristo > Chapter 26. The Pont du Gard Inn", 14, 23),
        ("The Count of Monte Cristo > Chapter 26. The Pont du Gard Inn > The Diamond", 24, 27),
        ("Appendix > Skipped level", 28, 30),
    ]
    # "# The Count..." and "# Appendix" have empty bodies but subsections, so their lines go to their
    # first subsection; "#### Skipped level" has neither body nor subsections: it is kept as its
    # heading lines. A chunk's text is every line it spans, heading included, and no line is lost.
    lines = BOOK.splitlines()
    assert parsed.chunks[-1].body == "\n".join(lines[27:30])
    for chunk in parsed.chunks:
        assert chunk.doc_key == str(path.resolve())
        assert chunk.body == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    held = {n for c in parsed.chunks for n in range(c.start_line, c.end_line + 1)}
    assert held == set(range(1, len(lines) + 1))
    ch25 = parsed.chunks[1]
    assert "# not a heading, a shell comment" in ch25.body
    assert "## nor this" in ch25.body
    assert "# still code: a shorter/different fence does not close" in parsed.chunks[2].body
    assert parsed.chunks[3].body.strip() == "### The Diamond\n\nThe abbé shows the diamond."


def test_deeper_heading_after_skipped_level(tmp_path: Path):
    path = write(tmp_path, "a.md", "# Top\n\n### Deep\n\nbody\n\n## Mid\n\nmid body\n\n# C#\n\nsharp\n")
    titles = [c.title for c in parse_file(path).chunks]
    assert titles == ["Top > Deep", "Top > Mid", "C#"]


def test_front_matter(tmp_path: Path):
    text = """\
---
title: "Trip notes"
date: 2024-03-01
tags: [travel, 'france']
people:
  - Edmond
  - "Mercédès"
draft: false
---
Intro paragraph.

# Day 1

Arrived.
"""
    parsed = parse_file(write(tmp_path, "trip.md", text))
    fm = {
        "title": "Trip notes",
        "date": "2024-03-01",
        "tags": ["travel", "france"],
        "people": ["Edmond", "Mercédès"],
        "draft": "false",
    }
    expected_time = datetime(2024, 3, 1, tzinfo=UTC).timestamp()
    assert [(c.title, c.start_line, c.end_line) for c in parsed.chunks] == [
        ("Trip notes", 10, 11),
        ("Day 1", 12, 14),
    ]
    for chunk in parsed.chunks:
        assert chunk.meta["front_matter"] == fm
        assert chunk.time == expected_time
        assert "---" not in chunk.body and "tags" not in chunk.body


def test_front_matter_datetime_with_zone_and_no_date(tmp_path: Path):
    parsed = parse_file(write(tmp_path, "a.md", "---\ndate: 2024-03-01T10:30:00+02:00\n---\nhello\n"))
    assert parsed.chunks[0].time == datetime(2024, 3, 1, 8, 30, tzinfo=UTC).timestamp()
    assert parsed.chunks[0].title == "a"  # no title in front matter: the file stem

    parsed = parse_file(write(tmp_path, "b.md", "---\nauthor: me\n---\nhello\n"))
    assert parsed.chunks[0].time is None
    assert parsed.chunks[0].meta == {"front_matter": {"author": "me"}}

    # A leading '---' without a closing one is a thematic break, not front matter.
    parsed = parse_file(write(tmp_path, "c.md", "---\nhello\n"))
    assert parsed.chunks[0].body == "---\nhello"
    assert parsed.chunks[0].meta == {}


def test_bad_front_matter_date_warns(tmp_path: Path):
    parsed = parse_file(write(tmp_path, "d.md", "---\ndate: last tuesday\n---\nhello\n"))
    assert parsed.chunks[0].time is None
    assert len(parsed.warnings) == 1 and "d.md" in parsed.warnings[0]


def test_long_section_windows_keep_title_and_exact_lines(tmp_path: Path):
    body_lines = [f"line {i} " + "word " * 8 for i in range(1, 61)]  # 10 words per line
    text = "# Book\n\n## Long chapter\n" + "\n".join(body_lines) + "\n## Next\nshort\n"
    path = write(tmp_path, "long.md", text)
    parsed = parse_file(path, ChunkOptions(window_words=100, overlap_words=20))
    file_lines = text.splitlines()
    long_chunks = [c for c in parsed.chunks if c.title == "Book > Long chapter"]
    assert len(long_chunks) > 3
    assert long_chunks[0].start_line == 1  # the heading lines: its own and its empty parent's
    assert long_chunks[-1].end_line == 63
    for prev, cur in zip(long_chunks, long_chunks[1:], strict=False):
        assert cur.start_line <= prev.end_line  # windows overlap
        assert cur.body == "\n".join(file_lines[cur.start_line - 1 : cur.end_line])
        assert len(cur.body.split()) <= 100
    assert [c.title for c in parsed.chunks][-1] == "Book > Next"


def test_display_name_used_for_fallback_title(tmp_path: Path):
    path = write(tmp_path, "x.md", "no headings here\n")
    parsed = parse_file(path, display_name="docs/readme.md")
    assert parsed.chunks[0].title == "readme"
    assert parsed.chunks[0].doc_key == str(path.resolve())


def test_markdown_libraries_load_only_for_a_run_that_reads_markdown(tmp_path: Path):
    """markdown-it-py and PyYAML cost ~50 ms to import: a run over other files (a JSON lines corpus,
    code) does not load them; one that meets Markdown with front matter does, and parses it."""
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "plain words"}\n')
    (tmp_path / "note.md").write_text("---\ntitle: Keys\n---\n# Rotate\n\nRotate the keys.\n")
    script = (
        "import sys; from kenning import Index\n"
        "ix = Index(sys.argv[1])\n"
        "ix.add([sys.argv[2]], progress=False)\n"
        "print('markdown_it' in sys.modules, 'yaml' in sys.modules)\n"
        "ix.add([sys.argv[3]], progress=False)\n"
        "print('markdown_it' in sys.modules, 'yaml' in sys.modules)\n"
        "hit = ix.search('rotate', mode='lexical').hits[0]\n"
        "print(hit.title, hit.meta['front_matter']['title'])\n"
    )
    paths = [str(tmp_path / "ix"), str(tmp_path / "corpus.jsonl"), str(tmp_path / "note.md")]
    run = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[:3] == ["False False", "True True", "Rotate Keys"]


def test_heading_lines_are_stored_but_ranked_once_in_the_title(tmp_path: Path):
    """A section's stored text holds its heading lines (get shows the file's lines), while what is
    analysed as the body, embedded and quoted is the text after them, as before: the heading counts
    once, in the title field, for every window of the section alike."""
    from kenning import Index
    from kenning.store.records import embedding_text, own_text

    text = "# Tides\n\n## Neap tide\n\nThe moon pulls the sea.\n\nSetext\n======\n\nA second part.\n"
    path = write(tmp_path, "a.md", text)
    chunks = parse_file(path).chunks
    assert chunks[0].body.startswith("# Tides\n\n## Neap tide\n")
    assert own_text(chunks[0].title, chunks[0].body) == "\nThe moon pulls the sea.\n"
    assert embedding_text(chunks[0].title, chunks[0].body) == "Tides > Neap tide\n\nThe moon pulls the sea.\n"
    assert own_text(chunks[1].title, chunks[1].body) == "\nA second part."  # a setext heading too
    assert own_text("f.py > def g", "# a comment\ndef g(): pass") == "# a comment\ndef g(): pass"
    assert own_text("Todo", "# Todo") == "# Todo"  # a heading alone stays its own text
    with Index(tmp_path / "ix") as ix:
        ix.add([path])
        hit = ix.search("neap", mode="lexical", explain=True).hits[0]
        term = hit.explain["lexical"]["terms"][0]
        assert term["title"]["tf"] == 1 and term["body"]["tf"] == 0  # counted once, in the title
        assert ix.search('"pulls the sea"', mode="lexical").hits  # phrases still match, by position
        assert "#" not in hit.snippet and hit.snippet.startswith("The moon")
