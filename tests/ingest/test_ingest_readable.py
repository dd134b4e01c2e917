"""Every format read as text a person would read: each test builds a real file of its kind."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from test_ingest_formats import make_pdf

from kenning.ingest import IngestError, detect_kind, parse_file


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def titles(parsed) -> list[str]:
    return [c.title for c in parsed.chunks]


def test_markdown_setext_headings_tables_and_clean_titles(tmp_path):
    text = (
        "Guide\n=====\n\nIntro text.\n\nInstall\n-------\n\n"
        "| step | command |\n|------|---------|\n| 1 | pip install kenning |\n\n"
        "```bash\n# not a heading\necho hi\n```\n\n"
        "## \x1b[31mRed\x1b[0m \x07alert *title*\n\nbody\n"
    )
    parsed = parse_file(write(tmp_path, "guide.md", text))
    assert titles(parsed) == ["Guide", "Guide > Install", "Guide > Red alert title"]  # both level 2
    assert "pip install kenning" in parsed.chunks[1].body and "# not a heading" in parsed.chunks[1].body
    assert parsed.chunks[0].start_line == 1 and parsed.chunks[1].start_line == 6


def test_yaml_front_matter_becomes_fields_and_filters(tmp_path):
    text = (
        "---\ntitle: Release plan\ndate: 2026-02-03\ntags:\n  - launch\n  - q1\n"
        "owner: {name: Ana, team: core}\ndraft: true\n---\nWe ship in March.\n"
    )
    parsed = parse_file(write(tmp_path, "plan.md", text))
    chunk = parsed.chunks[0]
    assert chunk.title == "Release plan" and chunk.time is not None
    assert chunk.meta["front_matter"] == {
        "title": "Release plan",
        "date": "2026-02-03",
        "tags": ["launch", "q1"],
        "owner": {"name": "Ana", "team": "core"},
        "draft": "true",
    }
    bad = parse_file(write(tmp_path, "bad.md", "---\ntitle: [unclosed\n---\nbody\n"))
    assert bad.chunks[0].body == "body" and "not valid YAML" in bad.warnings[0]


def test_pdf_encrypted_and_broken_are_named(tmp_path):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(make_pdf([["secret plans"]]))))
    writer.encrypt("hunter2")
    buf = io.BytesIO()
    writer.write(buf)
    with pytest.raises(IngestError, match=r"^vault/locked\.pdf: encrypted PDF"):
        parse_file(write(tmp_path, "locked.pdf", buf.getvalue()), display_name="vault/locked.pdf")
    with pytest.raises(IngestError, match=r"^broken\.pdf: malformed PDF"):
        parse_file(write(tmp_path, "broken.pdf", b"%PDF-1.7\ngarbage"), display_name="broken.pdf")
    pages = parse_file(write(tmp_path, "ok.pdf", make_pdf([["first page"], ["second page"]])))
    assert [c.page for c in pages.chunks] == [1, 2] and pages.chunks[1].body == "second page"


def test_html_is_its_visible_text_under_its_headings(tmp_path):
    html = """<!doctype html>
<html><head><title>Ops &amp; runbooks</title>
<style>body { color: red }</style>
<script>var secret = "do not index";</script></head>
<body>
<p>Start here &mdash; read everything.</p>
<h1>Deploys</h1>
<p>Deploy with <b>make ship</b>.</p>
<h2>Rollback</h2>
<ul><li>Run <code>make undo</code></li><li>Tell the team</li></ul>
<noscript>enable scripts</noscript>
</body></html>
"""
    path = write(tmp_path, "ops.html", html)
    assert detect_kind(path, html.encode()) == "html"
    parsed = parse_file(path)
    assert titles(parsed) == ["Ops & runbooks", "Deploys", "Deploys > Rollback"]
    assert [c.body for c in parsed.chunks] == [
        "Start here — read everything.",
        "Deploy with make ship.",
        "Run make undo\nTell the team",
    ]
    assert [(c.start_line, c.end_line) for c in parsed.chunks] == [(1, 6), (7, 8), (9, 13)]
    everything = " ".join(c.body for c in parsed.chunks)
    assert "secret" not in everything and "color" not in everything and "<" not in everything


def test_notebooks_are_their_markdown_and_code_cells(tmp_path):
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Analysis\n", "\n", "Load the data."]},
            {
                "cell_type": "code",
                "source": "import pandas as pd\ndf = pd.read_csv('x.csv')",
                "outputs": [{"text": "HUGE OUTPUT"}],
            },  # fmt: skip
            {"cell_type": "markdown", "source": "## Results\nThe mean is 4."},
            {"cell_type": "code", "source": ["df.mean()"]},
        ],
        "metadata": {"language_info": {"name": "python"}},
    }
    parsed = parse_file(write(tmp_path, "study.ipynb", json.dumps(notebook)))
    assert parsed.kind == "notebook" and titles(parsed) == ["Analysis", "Analysis > Results"]
    assert "pd.read_csv" in parsed.chunks[0].body and "df.mean()" in parsed.chunks[1].body
    assert "HUGE OUTPUT" not in parsed.chunks[0].body and parsed.chunks[0].meta["language"] == "python"
    with pytest.raises(IngestError, match="not a notebook"):
        parse_file(write(tmp_path, "broken.ipynb", "{not json"))


def make_docx(
    paragraphs: list[tuple[str | None, str]], table: list[list[str]] | None = None, title: str = ""
) -> bytes:
    """A minimal .docx: (style or None, text) paragraphs, an optional table, a core title."""
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

    def para(style, text):
        ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        return f"<w:p>{ppr}<w:r><w:t>{text}</w:t></w:r></w:p>"

    body = "".join(para(s, t) for s, t in paragraphs)
    if table:
        rows = "".join(
            "<w:tr>" + "".join(f"<w:tc>{para(None, c)}</w:tc>" for c in row) + "</w:tr>" for row in table
        )
        body += f"<w:tbl>{rows}</w:tbl>"
    document = f'<?xml version="1.0"?><w:document xmlns:w="{w}"><w:body>{body}</w:body></w:document>'
    core = (
        '<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
        f'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title>'
        "</cp:coreProperties>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", document)
        z.writestr("docProps/core.xml", core)
    return buf.getvalue()


def test_docx_paragraphs_with_heading_styles_as_sections(tmp_path):
    data = make_docx(
        [
            (None, "Summary before any heading."),
            ("Heading1", "Budget"),
            (None, "We spend less."),
            ("Heading2", "Travel"),
            (None, "Trains, not planes."),
        ],  # fmt: skip
        table=[["item", "cost"], ["tickets", "120"]],
        title="Plan 2026",
    )
    path = write(tmp_path, "plan.docx", data)
    assert detect_kind(path, data[:8192]) == "docx"
    parsed = parse_file(path)
    assert titles(parsed) == ["Plan 2026", "Budget", "Budget > Travel"]
    assert parsed.chunks[2].body == "Trains, not planes.\nitem | cost\ntickets | 120"
    with pytest.raises(IngestError, match=r"not a readable \.docx"):
        parse_file(write(tmp_path, "fake.docx", b"PK\x03\x04 not really a zip"))


def make_epub(chapters: list[tuple[str, str]], toc: str, title: str = "The Voyage") -> bytes:
    """An EPUB: chapters as (file name, XHTML body); `toc` "nav" (EPUB 3) or "ncx" (EPUB 2), whose
    entries nest the second chapter under a part."""
    items = "".join(
        f'<item id="c{i}" href="text/{name}" media-type="application/xhtml+xml"/>'
        for i, (name, _) in enumerate(chapters)
    )
    spine_toc = ' toc="ncx"' if toc == "ncx" else ""
    items += (
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        if toc == "nav"
        else '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
        f"<manifest>{items}</manifest><spine{spine_toc}>{spine}</spine></package>"
    )
    (first, _), (second, _) = chapters[0], chapters[1]
    nav = (
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>'
        '<nav epub:type="toc"><ol>'
        f'<li><a href="text/{first}">Chapter 1. Marseilles</a></li>'
        f'<li><a href="text/{first}#part">Part Two</a><ol>'
        f'<li><a href="text/{second}">Chapter 2. The Father</a></li></ol></li></ol></nav></body></html>'
    )
    ncx = (
        '<?xml version="1.0"?><!DOCTYPE ncx PUBLIC "-//NISO//DTD ncx 2005-1//EN" '
        '"http://www.daisy.org/z3986/2005/ncx-2005-1.dtd"><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">'
        "<navMap><navPoint><navLabel><text>Chapter 1. Marseilles</text></navLabel>"
        f'<content src="text/{first}"/></navPoint>'
        "<navPoint><navLabel><text>Part Two</text></navLabel>"
        f'<content src="text/{first}#part"/><navPoint><navLabel><text>Chapter 2. The Father</text></navLabel>'
        f'<content src="text/{second}"/></navPoint></navPoint></navMap></ncx>'
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        z.writestr("OEBPS/content.opf", opf)
        z.writestr("OEBPS/nav.xhtml" if toc == "nav" else "OEBPS/toc.ncx", nav if toc == "nav" else ncx)
        for name, body in chapters:
            z.writestr(f"OEBPS/text/{name}", f"<!DOCTYPE html><html><body>{body}</body></html>")
    return buf.getvalue()


CHAPTERS = [
    ("ch1.xhtml", "<h1>Chapter 1. Marseilles</h1><p>The Pharaon sailed into the port.</p>"),
    (
        "ch2.xhtml",
        "<h1>Chapter 2. The Father</h1><p>The old man waited.</p><h2>Hunger</h2><p>He had no bread.</p>",
    ),
]


@pytest.mark.parametrize("toc", ["nav", "ncx"])
def test_an_epub_is_read_chapter_by_chapter_under_its_table_of_contents(tmp_path, toc):
    data = make_epub(CHAPTERS, toc)
    path = write(tmp_path, "voyage.epub", data)
    assert detect_kind(path, data[:8192]) == "epub"
    parsed = parse_file(path)
    assert parsed.kind == "epub" and parsed.warnings == []
    assert [(c.title, c.body) for c in parsed.chunks] == [
        ("The Voyage > Chapter 1. Marseilles", "The Pharaon sailed into the port."),
        ("The Voyage > Part Two > Chapter 2. The Father", "The old man waited."),
        ("The Voyage > Part Two > Chapter 2. The Father > Hunger", "He had no bread."),
    ]
    assert all(c.start_line is None and c.meta["part"].startswith("OEBPS/text/") for c in parsed.chunks)


def test_a_search_can_be_limited_to_books_or_to_notes(tmp_path):
    from kenning import Index
    from kenning.query.filters import Filters

    folder = tmp_path / "n"
    folder.mkdir()
    (folder / "voyage.epub").write_bytes(make_epub(CHAPTERS, "nav"))
    (folder / "port.md").write_text("# Port\n\nThe Pharaon sailed into the port of Marseilles.\n")
    with Index(tmp_path / "ix") as index:
        index.add([folder])
        found = {
            k: [h.title for h in index.search("Pharaon port", filters=Filters(kinds=(k,))).hits]
            for k in ("epub", "markdown")
        }
    assert found == {"epub": ["The Voyage > Chapter 1. Marseilles"], "markdown": ["Port"]}


def test_a_broken_or_hostile_epub_is_named(tmp_path):
    with pytest.raises(IngestError, match=r"not a readable \.epub"):
        parse_file(write(tmp_path, "fake.epub", b"PK\x03\x04 not really a zip"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # an entity in the package document (how XML bombs expand)
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><!DOCTYPE c [<!ENTITY a "aaaa">]><container>&a;</container>',
        )
    with pytest.raises(IngestError, match="document type"):
        parse_file(write(tmp_path, "bomb.epub", buf.getvalue()))


def test_utf16_text_with_a_bom_is_text(tmp_path):
    text = "Grüße aus Köln\nzweite Zeile\n"
    for name, data in [("le.txt", text.encode("utf-16")), ("be.txt", b"\xfe\xff" + text.encode("utf-16-be"))]:
        path = write(tmp_path, name, data)
        assert detect_kind(path, data[:8192]) == "text"
        parsed = parse_file(path)
        assert parsed.chunks[0].body == "Grüße aus Köln\nzweite Zeile" and parsed.warnings == []


def test_an_unsorted_chat_export_stays_many_hits(tmp_path):
    import random

    from kenning import Index

    rng = random.Random(7)
    lines = [
        {"id": f"m{i}", "from": "ana" if i % 2 else "bo", "channel": "ops",
         "ts": 1_700_000_000 + 60 * i, "content": f"deploy step {i} of the rollout"}
        for i in range(60)
    ]  # fmt: skip
    rng.shuffle(lines)  # an export in no particular order
    log = write(tmp_path, "export.jsonl", "\n".join(json.dumps(x) for x in lines))
    parsed = parse_file(log)
    assert parsed.kind == "messages" and len(parsed.chunks) == 29  # windows of 4, a new one every 2
    first = parsed.chunks[0]
    assert first.title == "ops" and first.body.startswith(
        "bo: deploy step 0 of the rollout\nana: deploy step 1"
    )
    assert first.start_line != 1 or first.end_line - first.start_line > 7  # lines are all over the file
    ix = Index(tmp_path / "ix")
    ix.add([log])
    hits = ix.search("deploy rollout", limit=10, mode="lexical").hits
    assert len(hits) >= 7  # windows overlap by half: dedup by message ids keeps every other one
    ix.close()


def test_repeated_identical_messages_read_as_one(tmp_path):
    rows = [
        {"text": "ok", "timestamp": f"2026-01-01T10:00:0{i}Z", "sender": "ana", "thread": "t"}
        for i in range(5)
    ]
    rows.append(
        {"text": "the server is back", "timestamp": "2026-01-01T10:01:00Z", "sender": "bo", "thread": "t"}
    )
    parsed = parse_file(write(tmp_path, "spam.jsonl", "\n".join(json.dumps(r) for r in rows)))
    assert parsed.chunks[0].body == "ana: ok (×5)\nbo: the server is back"
    assert parsed.chunks[0].meta["message_ids"] == ["1", "2", "3", "4", "5", "6"]


def test_a_folder_of_everything_indexes_with_a_clean_summary(tmp_path, capsys):
    from pypdf import PdfReader, PdfWriter

    from kenning.surfaces.cli import main

    root = tmp_path / "home"
    root.mkdir()
    write(root, "notes.md", "Notes\n=====\n\nThe launch is on Friday.\n")
    write(root, "page.html", "<h1>Runbook</h1><p>Restart the launch service.</p><script>x()</script>")
    write(root, "study.ipynb", json.dumps({"cells": [{"cell_type": "markdown", "source": "# Launch study"}]}))
    write(root, "plan.docx", make_docx([("Heading1", "Launch"), (None, "Budget approved.")]))
    write(root, "paper.pdf", make_pdf([["launch physics"]]))
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(make_pdf([["locked"]]))))
    writer.encrypt("pw")
    locked = io.BytesIO()
    writer.write(locked)
    write(root, "locked.pdf", locked.getvalue())
    write(root, "app.py", "class Launcher:\n    def launch(self):\n        return 'go'\n")
    write(
        root,
        "chat.jsonl",
        json.dumps({"text": "launch at noon", "timestamp": 1_700_000_000, "sender": "ana"}),
    )
    write(root, "legacy.txt", "launch checklist\n".encode("utf-16"))
    write(root, "photo.jpg", b"\xff\xd8\xff\xe0binary")
    write(root, ".env", "TOKEN=abc\n")
    write(root, ".gitignore", "scratch/\n")
    (root / "scratch").mkdir()
    write(root / "scratch", "tmp.md", "launch scratch\n")
    (root / "passwd").symlink_to(write(tmp_path, "passwd", "root:x:0:0\n"))
    code = main(["index", str(root), "--index", str(tmp_path / "ix"), "--no-embed", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in out + err
    assert out.startswith(
        "indexed 8 file(s), 0 unchanged, 1 skipped (1 link outside the indexed folders), 1 failed"
    )
    assert "locked.pdf: encrypted PDF" in err
    code = main(["search", "launch", "--index", str(tmp_path / "ix"), "--json", "-n", "20"])
    hits = json.loads(capsys.readouterr().out)["hits"]
    kinds = {Path(h["path"]).suffix for h in hits}
    assert kinds >= {".md", ".html", ".ipynb", ".docx", ".pdf", ".py", ".jsonl", ".txt"}


def test_a_heading_with_nothing_under_it_stays_findable(tmp_path):
    parsed = parse_file(write(tmp_path, "todo.md", "# Inbox\n## Call the plumber\n# Done\ntext\n# Someday\n"))
    assert [(c.title, c.body) for c in parsed.chunks] == [
        ("Inbox > Call the plumber", "# Inbox\n## Call the plumber"),
        ("Done", "# Done\ntext"),
        ("Someday", "# Someday"),
    ]
