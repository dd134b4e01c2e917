"""Text, PDF, message logs, BEIR corpora, and the failure modes of parse_file."""

import io
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kenning.ingest import ChunkOptions, IngestError, detect_kind, discover, parse_file
from kenning.ingest.walk import Found


def write_bytes(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- plain text ------------------------------------------------------------------------------


def test_text_windows(tmp_path: Path):
    lines = [f"sentence {i} about the harbour at Marseille" for i in range(1, 41)]  # 7 words each
    path = write_bytes(tmp_path, "log.txt", ("\n".join(lines) + "\n").encode())
    parsed = parse_file(path, ChunkOptions(window_words=70, overlap_words=14))
    assert parsed.kind == "text"
    assert [(c.start_line, c.end_line) for c in parsed.chunks] == [
        (1, 10),
        (9, 18),
        (17, 26),
        (25, 34),
        (33, 40),
    ]
    assert {c.title for c in parsed.chunks} == {"log.txt"}
    assert parsed.chunks[1].body == "\n".join(lines[8:18])


def test_text_small_file_one_chunk_and_crlf(tmp_path: Path):
    path = write_bytes(tmp_path, "notes.rst", b"first line\r\nsecond line\r\n")
    parsed = parse_file(path, display_name="docs/notes.rst")
    assert [(c.title, c.body, c.start_line, c.end_line) for c in parsed.chunks] == [
        ("notes.rst", "first line\nsecond line", 1, 2)
    ]


# --- PDF -------------------------------------------------------------------------------------


def make_pdf(pages: list[list], title: str | None = None) -> bytes:
    """A minimal valid PDF: one Helvetica text line per entry, with a correct xref table. An entry is
    a line's text (12 points, lines 14 points apart from 720 down) or (text, font size, bold)."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    bold_font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>")
    kids = []
    for lines in pages:
        ops = [b"BT"]
        y = 720.0
        for line in lines:
            text, size, bold, *scaled = (line, 12.0, False) if isinstance(line, str) else line
            escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            if scaled:  # the size set by the text matrix on a 1-point font, as cairo writes it
                ops.append(b"/F%d 1 Tf %g 0 0 %g 72 %g Tm (" % (2 if bold else 1, size, size, y))
            else:
                ops.append(b"/F%d %g Tf 1 0 0 1 72 %g Tm (" % (2 if bold else 1, size, y))
            ops[-1] += escaped.encode("latin-1") + b") Tj"
            y -= max(14.0, size * 1.25)
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >> /Contents %d 0 R >>"
                % (pages_obj, font, bold_font, content)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    kid_refs = b" ".join(b"%d 0 R" % k for k in kids)
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kid_refs, len(kids))
    info = add(b"<< /Title (" + title.encode("latin-1") + b") >>") if title else None

    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


def test_pdf_pages(tmp_path: Path):
    data = make_pdf([["Edmond Dantes arrives", "at the Chateau of If"], [], ["The treasure (of Spada)"]])
    path = write_bytes(tmp_path, "dantes.pdf", data)
    assert detect_kind(path, data[:8192]) == "pdf"
    parsed = parse_file(path)
    assert parsed.kind == "pdf"
    # The blank second page is skipped; page numbers stay those of the document.
    assert [(c.page, c.title) for c in parsed.chunks] == [
        (1, "dantes.pdf > page 1"),
        (3, "dantes.pdf > page 3"),
    ]
    assert "Edmond Dantes arrives" in parsed.chunks[0].body
    assert "at the Chateau of If" in parsed.chunks[0].body
    assert "The treasure (of Spada)" in parsed.chunks[1].body
    assert "treasure" not in parsed.chunks[0].body
    assert all(c.doc_key == str(path.resolve()) for c in parsed.chunks)


def test_pdf_metadata_title_and_windowing(tmp_path: Path):
    long_page = [f"line {i} of the long page with several words" for i in range(30)]  # 9 words
    path = write_bytes(tmp_path, "book.pdf", make_pdf([["short"], long_page], title="Monte Cristo"))
    parsed = parse_file(path, ChunkOptions(window_words=90, overlap_words=18))
    assert parsed.chunks[0].title == "Monte Cristo > page 1"
    page2 = [c for c in parsed.chunks if c.page == 2]
    assert len(page2) >= 3
    assert {c.title for c in page2} == {"Monte Cristo > page 2"}
    assert "line 0 of" in page2[0].body and "line 29 of" in page2[-1].body


def outlined_pdf(pages: list[list[str]], marks: list[tuple[str, int, float | None, int]]) -> bytes:
    """make_pdf's pages with an outline: (title, page index, destination height or None, parent
    mark's index or -1) each, written by pypdf with "XYZ" destinations."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import Fit

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(make_pdf(pages))))
    added = []
    for title, page, top, parent in marks:
        fit = Fit.xyz(0, top, 0) if top is not None else Fit.fit()
        added.append(
            writer.add_outline_item(
                title=title, page_number=page, parent=added[parent] if parent >= 0 else None, fit=fit
            )
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# lines sit 14 points apart from 720 down (make_pdf); a destination may point into a heading's letters
OUTLINED_PAGES = [
    ["Front matter words", "1. Introduction", "Intro text", "1.1 Scope", "Scope text one"],
    ["scope continues here", "2. Layout", "layout words"],
]
OUTLINE = [("1. Introduction", 0, 710.0, -1), ("1.1 Scope", 0, 682.0, 0), ("2. Layout", 1, 716.0, -1)]


def test_pdf_sections_follow_the_outline_with_heading_paths_and_page_ranges(tmp_path: Path):
    path = write_bytes(tmp_path, "spec.pdf", outlined_pdf(OUTLINED_PAGES, OUTLINE))
    parsed = parse_file(path)
    got = [(c.title, c.page, c.meta.get("page_end"), c.body.split("\n")) for c in parsed.chunks]
    assert got == [
        ("spec.pdf", 1, None, ["Front matter words"]),  # before the first bookmark: kept, under the file
        ("spec.pdf > 1. Introduction", 1, None, ["1. Introduction", "Intro text"]),
        (
            "spec.pdf > 1. Introduction > 1.1 Scope",
            1,
            2,
            ["1.1 Scope", "Scope text one", "scope continues here"],
        ),
        ("spec.pdf > 2. Layout", 2, None, ["2. Layout", "layout words"]),
    ]
    # every line of the pages is in exactly one section: none dropped, none cut in two
    lines = [line for chunk in parsed.chunks for line in chunk.body.split("\n")]
    assert sorted(lines) == sorted(line for page in OUTLINED_PAGES for line in page)


def test_pdf_bookmarks_without_a_height_cut_at_the_top_of_their_page(tmp_path: Path):
    marks = [("Part one", 0, None, -1), ("Part two", 1, None, -1)]
    parsed = parse_file(
        write_bytes(tmp_path, "parts.pdf", outlined_pdf([["alpha words"], ["beta words"]], marks))
    )
    assert [(c.title, c.page, c.body) for c in parsed.chunks] == [
        ("parts.pdf > Part one", 1, "alpha words"),
        ("parts.pdf > Part two", 2, "beta words"),
    ]


def test_a_hostile_outline_is_bounded(tmp_path: Path):
    """Titles are cut, a page cut by too many bookmarks is cut by the first MAX_CUTS_PER_PAGE only
    (each cut reads the page once more), and a FitH destination gives its height like XYZ."""
    from kenning.ingest.pdf import MAX_CUTS_PER_PAGE, MAX_PATH_CHARS, MAX_TITLE_CHARS

    lines = [f"line {i}" for i in range(40)]
    many = [(f"mark {i}", 0, 720.0 - 14 * i + 10, -1) for i in range(MAX_CUTS_PER_PAGE + 20)]
    parsed = parse_file(write_bytes(tmp_path, "many.pdf", outlined_pdf([lines], many)))
    assert len(parsed.chunks) <= MAX_CUTS_PER_PAGE + 1 and any("more than" in w for w in parsed.warnings)
    body = [line for chunk in parsed.chunks for line in chunk.body.split("\n")]
    assert sorted(body) == sorted(lines)  # nothing lost: the rest is read with the section before
    long = [("x" * 5000, 0, None, -1), ("y" * 5000, 0, 700.0, 0), ("z" * 5000, 0, 680.0, 1)]
    titles = [
        c.title for c in parse_file(write_bytes(tmp_path, "long.pdf", outlined_pdf([lines], long))).chunks
    ]
    assert titles and all(len(t) <= MAX_PATH_CHARS for t in titles)
    assert all(len(part) <= MAX_TITLE_CHARS for t in titles for part in t.split(" > "))


def test_a_fit_width_destination_cuts_its_page_at_its_height(tmp_path: Path):
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import Fit

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(make_pdf([["intro words", "2. Two", "two words"]]))))
    writer.add_outline_item(title="1. One", page_number=0, fit=Fit.xyz(0, 730, 0))
    writer.add_outline_item(title="2. Two", page_number=0, fit=Fit.fit_horizontally(top=716))
    out = io.BytesIO()
    writer.write(out)
    parsed = parse_file(write_bytes(tmp_path, "fith.pdf", out.getvalue()))
    assert [(c.title, c.body) for c in parsed.chunks] == [
        ("fith.pdf > 1. One", "intro words"),
        ("fith.pdf > 2. Two", "2. Two\ntwo words"),
    ]


# a PDF without an outline whose fonts set its headings apart: 18-point chapters, 14-point sections,
# an 11-point body, a bold running header on every later page and a table of contents with dot leaders
STYLED_PAGES = [
    [
        ("Field Manual", 24.0, True),
        ("Contents", 14.0, True),
        ("1 Getting started ........ 1", 11.0, True),
        ("2 Keys and rotation ........ 2", 11.0, True),
        ("1 Getting started", 18.0, True),
        ("Install the tool and run it once.", 11.0, False),
        ("1.1 Requirements of a", 14.0, True),
        ("working machine", 14.0, True),  # the heading wraps onto a second line
        ("Two cores are enough for the work.", 11.0, False),
    ],
    [
        ("Field Manual draft 2", 11.0, True),
        ("More requirements continue on this page.", 11.0, False),
        ("2 Keys and rotation", 18.0, True),
        ("Keys rotate every ninety days.", 11.0, False),
        ("Bold words", 11.0, True),
        ("A paragraph under the bold heading.", 11.0, False),
    ],
    [
        ("Field Manual draft 3", 11.0, True),
        ("The end of the keys chapter.", 11.0, False),
    ],
    [
        ("Field Manual draft 4", 11.0, True),
        ("Closing words of the manual.", 11.0, False),
    ],
]


def test_pdf_without_an_outline_reads_headings_from_its_fonts(tmp_path: Path):
    parsed = parse_file(write_bytes(tmp_path, "manual.pdf", make_pdf(STYLED_PAGES)))
    got = [(c.title, c.page, c.meta.get("page_end")) for c in parsed.chunks]
    assert got == [
        ("manual.pdf > Field Manual", 1, None),
        ("manual.pdf > Field Manual > Contents", 1, None),  # its leader lines are not headings
        ("manual.pdf > Field Manual > 1 Getting started", 1, None),
        ("manual.pdf > Field Manual > 1 Getting started > 1.1 Requirements of a working machine", 1, 2),
        ("manual.pdf > Field Manual > 2 Keys and rotation", 2, None),
        ("manual.pdf > Field Manual > 2 Keys and rotation > Bold words", 2, 4),
    ]
    # every line of every page is in exactly one section; the running header is text, not a heading
    lines = [line for chunk in parsed.chunks for line in chunk.body.split("\n")]
    assert sorted(lines) == sorted(line[0] for page in STYLED_PAGES for line in page)
    assert not any("draft" in c.title for c in parsed.chunks)


def test_a_size_set_by_the_text_matrix_is_the_size_printed(tmp_path: Path):
    pages = [[(text, size, False, "matrix") for text, size, _ in STYLED_PAGES[0][4:]]]
    parsed = parse_file(write_bytes(tmp_path, "cairo.pdf", make_pdf(pages)))
    assert [c.title for c in parsed.chunks] == [
        "cairo.pdf > 1 Getting started",
        "cairo.pdf > 1 Getting started > 1.1 Requirements of a working machine",
    ]


def test_pdf_with_plain_fonts_reads_numbered_headings_else_pages(tmp_path: Path):
    numbered = [
        ["1. Overview", "The tool indexes notes.", "2. Setup"],
        ["Run the installer once.", "3. Usage", "1. type a query and press enter"],  # a list item
    ]
    parsed = parse_file(write_bytes(tmp_path, "plain.pdf", make_pdf(numbered)))
    assert [(c.title, c.page) for c in parsed.chunks] == [
        ("plain.pdf > 1. Overview", 1),
        ("plain.pdf > 2. Setup", 1),
        ("plain.pdf > 3. Usage", 2),
    ]
    two = [["1. Overview", "words"], ["2. Setup", "words"]]  # too few numbered lines to trust
    assert [c.title for c in parse_file(write_bytes(tmp_path, "two.pdf", make_pdf(two))).chunks] == [
        "two.pdf > page 1",
        "two.pdf > page 2",
    ]


def test_a_page_of_headings_is_cut_a_bounded_number_of_times(tmp_path: Path, monkeypatch):
    import kenning.ingest.pdf as pdf

    monkeypatch.setattr(pdf, "MAX_DETECTED_PER_PAGE", 5)  # each cut reads the page once more
    first = [(f"Heading {i}", 16.0, True) if i % 2 else (f"body {i} words", 10.0, False) for i in range(34)]
    rest = [[("Closing heading", 16.0, True), ("closing words of the book", 10.0, False)]]
    parsed = parse_file(write_bytes(tmp_path, "crowded.pdf", make_pdf([first] + rest)))
    assert len([c for c in parsed.chunks if c.page == 1]) <= 5 + 1
    assert any("more than 5 bookmarks on page(s) 1" in w for w in parsed.warnings)
    body = [line for chunk in parsed.chunks for line in chunk.body.split("\n")]
    assert sorted(body) == sorted(line[0] for page in [first] + rest for line in page)  # nothing lost


def test_lines_set_apart_beyond_a_document_s_headings(tmp_path: Path):
    """A page of short bold lines (a table) is not sixty sections: the least prominent level goes
    first, and when one level alone is still too many, the document is read by page."""
    table = [(f"cell {i}", 10.0, True) for i in range(30)]
    chapter = [("Chapter One", 20.0, True), ("Plain words of the chapter.", 10.0, False), *table]
    parsed = parse_file(
        write_bytes(tmp_path, "table.pdf", make_pdf([chapter, [("More plain words.", 10.0, False)] * 3]))
    )
    assert {c.title for c in parsed.chunks} == {"table.pdf > Chapter One"}  # the cells are its text
    flat = [
        [(f"cell {p}.{i}", 10.0, True) for i in range(40)] + [("some plain body text", 9.0, False)] * 40
        for p in range(2)
    ]
    parsed = parse_file(write_bytes(tmp_path, "flat.pdf", make_pdf(flat)))
    assert [c.title for c in parsed.chunks][:1] == ["flat.pdf > page 1"]
    assert any("more lines set apart than a document has headings" in w for w in parsed.warnings)


def test_the_real_manuals_headings_without_their_outline():
    """The two PDF manuals Debian ships, with their outline removed: the headings read from their
    fonts give back the outline's titles (the text layer holds more headings than the outline)."""
    import pypdfium2 as pdfium

    from kenning.ingest.pdf_headings import detect_headings

    manuals = [
        Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
        Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    ]
    present = [m for m in manuals if m.exists()]
    if not present:
        pytest.skip("neither Debian PDF manual is installed (shared-mime-info, libtasn1-doc)")

    def words(text: str) -> str:
        return " ".join(text.lower().replace("-", "").split())

    for manual in present:
        document = pdfium.PdfDocument(manual)  # the outline is not read: detection uses the text layer
        outline = [words(item.get_title()) for item in document.get_toc()]
        found = [words(h.text) for h in detect_headings(document)]
        document.close()
        missed = [t for t in outline if not any(f == t or f.endswith(" " + t) for f in found)]
        assert not missed, (manual.name, missed)


def test_a_paged_location_is_a_page_or_a_page_range_never_none():
    from kenning.search.results import location_text

    assert location_text("a.pdf", None, None, 4, None) == "a.pdf p.4"
    assert location_text("a.pdf", None, None, 4, 5) == "a.pdf pp.4-5"
    assert location_text("a.pdf", None, None, 4, 4) == "a.pdf p.4"
    assert location_text("a.pdf", None, None, 4, "5\x1b[2J") == "a.pdf p.4"  # metadata is untrusted
    assert location_text("a.pdf", None, None, 4, 2) == "a.pdf p.4"  # a last page before the first
    assert location_text("a.md", 3, 9) == "a.md:3-9" and location_text("a.md", 3, 3) == "a.md:3"
    assert location_text("a.pdf") == "a.pdf"


def test_answers_and_hits_on_a_pdf_cite_pages(tmp_path: Path):
    from kenning import Index
    from kenning.surfaces.render import answer_text

    folder = tmp_path / "docs"
    folder.mkdir()
    pages = [
        ["Front matter words", "1. Introduction", "The spec explains the rotation of signing keys."],
        ["2. Rotation", "Signing keys rotate every ninety days by the key service,"],
        ["after which the old keys are revoked by the key service.", "3. Other", "Unrelated closing words."],
    ]
    marks = [("1. Introduction", 0, 710.0, -1), ("2. Rotation", 1, None, -1), ("3. Other", 2, 700.0, -1)]
    write_bytes(folder, "keys.pdf", outlined_pdf(pages, marks))
    with Index(tmp_path / "ix") as index:
        index.add([folder])
        hit = index.search("signing keys rotate ninety days", mode="lexical").hits[0]
        answer = index.answer("How often do signing keys rotate?").to_dict()
    assert hit.title == "keys.pdf > 2. Rotation" and hit.location().endswith("keys.pdf pp.2-3")
    cited = [c for c in answer["citations"] if c["page"] == 2]
    assert cited and cited[0]["page_end"] == 3 and cited[0]["location"].endswith("keys.pdf pp.2-3")
    text = answer_text(answer)
    assert "pp.2-3" in text and "None" not in text
    # a page of it, as `kenning get keys.pdf#page=3` (and MCP and HTTP `get`) reads it
    with Index(tmp_path / "ix") as index:
        page = index.read(f"{folder / 'keys.pdf'}#page=3")
        lines = [text for section in page.sections for _, text in section.lines]
        assert any("old keys are revoked" in line for line in lines)
        assert not any("Front matter" in line for line in lines)
        with pytest.raises(ValueError, match="page 9 is not in it"):
            index.read(f"{folder / 'keys.pdf'}#page=9")
        page = index.read(f"{folder / 'keys.pdf'}#page=2")  # the section runs on, but page 2 stops here
        lines = [text for section in page.sections for _, text in section.lines]
        assert any("ninety days" in line for line in lines) and not any("revoked" in line for line in lines)


def test_a_long_pdf_section_reads_back_once_though_its_windows_overlap(tmp_path: Path):
    from kenning import Index

    folder = tmp_path / "docs"
    folder.mkdir()
    pages = [
        [f"line {p}.{i} of the long section with several more words in it" for i in range(45)] for p in (1, 2)
    ]
    write_bytes(folder, "long.pdf", outlined_pdf(pages, [("1. Long", 0, None, -1)]))
    with Index(tmp_path / "ix") as index:
        index.add([folder])
        assert len(index.get(str(folder / "long.pdf"))) > 2  # 1,080 words: overlapping windows
        whole = index.read(str(folder / "long.pdf"))
        second = index.read(f"{folder / 'long.pdf'}#page=2")
    lines = [text for section in whole.sections for _, text in section.lines]
    assert lines == pages[0] + pages[1]  # every line once, in order
    assert [text for section in second.sections for _, text in section.lines] == pages[1]


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.4\nthis is not really a pdf\n",
        make_pdf([["cut short"]])[:70],
        b"<html>not a pdf</html>\n",
    ],
)
def test_malformed_pdf_raises_naming_file(tmp_path: Path, data: bytes):
    path = write_bytes(tmp_path, "broken.pdf", data)
    with pytest.raises(IngestError) as err:
        parse_file(path, display_name="papers/broken.pdf")
    assert str(err.value).startswith("papers/broken.pdf: ")
    assert "PDF" in str(err.value)


# --- message logs ----------------------------------------------------------------------------


def message_lines(count: int, conversation: str = "family", start: int = 1_700_000_000) -> list[dict]:
    return [
        {
            "id": f"{conversation}-{i}",
            "conversation": conversation,
            "sender": "ana" if i % 2 else "ben",
            "text": f"message number {i}",
            "timestamp": start + 60 * i,
        }
        for i in range(count)
    ]


def write_jsonl(tmp_path: Path, name: str, rows: list) -> Path:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_messages_windows(tmp_path: Path):
    rows = message_lines(13)
    rows.reverse()  # file order is not time order: windows must follow timestamps
    path = write_jsonl(tmp_path, "chat.jsonl", rows)
    parsed = parse_file(path, ChunkOptions(message_window=8, message_stride=4))
    assert parsed.kind == "messages"
    assert parsed.warnings == []
    ids = [c.meta["message_ids"] for c in parsed.chunks]
    assert ids == [
        [f"family-{i}" for i in range(0, 8)],
        [f"family-{i}" for i in range(4, 12)],
        [f"family-{i}" for i in range(8, 13)],
    ]
    first = parsed.chunks[0]
    assert first.title == "family"
    assert first.doc_key == str(path.resolve())
    assert first.body.splitlines()[:2] == ["ben: message number 0", "ana: message number 1"]
    assert first.meta["conversation"] == "family"
    assert first.meta["senders"] == ["ben", "ana"]
    # line by line: each message's id, its sender's index in `senders`, and its time
    assert first.meta["messages"][:2] == [["family-0", 0, 1_700_000_000], ["family-1", 1, 1_700_000_060]]
    assert [t for _, _, t in first.meta["messages"]] == [1_700_000_000 + 60 * i for i in range(8)]
    assert first.time == 1_700_000_000 + 60 * 7
    # Message i sits on file line 13 - i (the file was reversed).
    assert (first.start_line, first.end_line) == (6, 13)
    assert (parsed.chunks[2].start_line, parsed.chunks[2].end_line) == (1, 5)


def test_messages_no_redundant_tail_and_short_conversations(tmp_path: Path):
    rows = message_lines(12, "work") + message_lines(3, "book club")
    parsed = parse_file(
        write_jsonl(tmp_path, "chat.ndjson", rows), ChunkOptions(message_window=8, message_stride=4)
    )
    work = [c.meta["message_ids"] for c in parsed.chunks if c.title == "work"]
    # With 12 messages, a third window [8, 12) would lie inside [4, 12): not emitted.
    assert work == [[f"work-{i}" for i in range(0, 8)], [f"work-{i}" for i in range(4, 12)]]
    club = [c for c in parsed.chunks if c.title == "book club"]
    assert len(club) == 1 and club[0].meta["message_ids"] == ["book club-0", "book club-1", "book club-2"]


def test_messages_fallbacks_and_bad_lines(tmp_path: Path):
    rows = [
        {"sender": "ana", "text": "hi", "timestamp": "2024-05-01T10:00:00Z"},
        "{not json",
        {"sender": "ana", "text": "no time"},
        {"sender": "ana", "text": "bad time", "timestamp": "yesterday"},
        {"sender": "ana", "text": "later", "timestamp": "2024-05-01T10:05:00"},
        ["a", "list"],
    ]
    parsed = parse_file(write_jsonl(tmp_path, "dm.jsonl", rows), display_name="dm.jsonl")
    assert len(parsed.chunks) == 1
    chunk = parsed.chunks[0]
    assert chunk.title == "ana"  # no conversation: falls back to the sender
    assert chunk.meta["message_ids"] == ["1", "5"]  # no ids: line numbers
    assert chunk.body == "ana: hi\nana: later"
    assert chunk.time == datetime(2024, 5, 1, 10, 5, tzinfo=UTC).timestamp()
    assert [w.split(" ")[0] for w in parsed.warnings] == [
        "dm.jsonl:2:",
        "dm.jsonl:3:",
        "dm.jsonl:4:",
        "dm.jsonl:6:",
    ]
    assert "timestamp" in parsed.warnings[1] and "yesterday" in parsed.warnings[2]


# --- BEIR ------------------------------------------------------------------------------------


def test_beir_corpus(tmp_path: Path):
    rows = [
        {"_id": "doc1", "title": "Scurvy", "text": "Vitamin C deficiency.", "metadata": {}},
        {"_id": "doc2", "title": "", "text": "No title here."},
        "garbage",
        {"_id": 3, "text": "Numeric id."},
        {"title": "no id", "text": "skipped"},
    ]
    parsed = parse_file(write_jsonl(tmp_path, "corpus.jsonl", rows), display_name="corpus.jsonl")
    assert parsed.kind == "beir"
    assert [(c.doc_key, c.title, c.body, c.start_line, c.end_line) for c in parsed.chunks] == [
        ("doc1", "Scurvy", "Vitamin C deficiency.", 1, 1),
        ("doc2", "", "No title here.", 2, 2),
        ("3", "", "Numeric id.", 4, 4),
    ]
    assert [w.split(" ")[0] for w in parsed.warnings] == ["corpus.jsonl:3:", "corpus.jsonl:5:"]


def test_beir_is_fast_and_not_windowed(tmp_path: Path):
    long_text = " ".join(["word"] * 1000)
    rows = [{"_id": f"d{i}", "title": f"T{i}", "text": f"document {i} " + long_text} for i in range(5000)]
    path = write_jsonl(tmp_path, "corpus.jsonl", rows)
    started = time.perf_counter()
    parsed = parse_file(path)
    elapsed = time.perf_counter() - started
    assert len(parsed.chunks) == 5000
    assert parsed.chunks[4999].doc_key == "d4999" and parsed.chunks[4999].start_line == 5000
    assert elapsed < 1.0, elapsed


def test_unrecognised_jsonl_raises(tmp_path: Path):
    path = write_jsonl(tmp_path, "events.jsonl", [{"event": "click", "at": 1}])
    with pytest.raises(IngestError, match=r"^events\.jsonl: .*'timestamp'.*'_id'"):
        parse_file(path, display_name="events.jsonl")


def test_jsonl_kind_decided_by_first_valid_object(tmp_path: Path):
    rows = ["", "not json", {"_id": "a", "text": "alpha"}, {"text": "x", "timestamp": 1}]
    path = write_jsonl(tmp_path, "c.jsonl", rows)
    assert detect_kind(path, path.read_bytes()) == "beir"
    # A first object longer than the sniffed head is still recognised from the whole file.
    big = write_jsonl(tmp_path, "big.jsonl", [{"_id": "a", "text": "x" * 20000}])
    assert parse_file(big).kind == "beir"


# --- failure modes and edge cases ------------------------------------------------------------


def test_binary_content_detected(tmp_path: Path):
    data = b"looks like text\x00\x01\x02 but is not"
    path = write_bytes(tmp_path, "mystery.txt", data)
    assert detect_kind(path, data) == "binary"
    with pytest.raises(IngestError, match=r"^mystery\.txt: binary"):
        parse_file(path, display_name="mystery.txt")


def test_binary_extension_skipped_in_walk_but_reported_when_named(tmp_path: Path):
    png = write_bytes(tmp_path, "photo.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write_bytes(tmp_path, "notes.txt", b"hello\n")
    assert [f.path.name for f in discover([tmp_path])] == ["notes.txt"]
    assert list(discover([png])) == [Found(png.resolve(), skip="binary extension")]


def test_invalid_utf8_indexed_with_warning(tmp_path: Path):
    data = "café au lait\n".encode() + b"bad byte: \xff here\n"
    path = write_bytes(tmp_path, "menu.txt", data)
    parsed = parse_file(path, display_name="menu.txt")
    assert len(parsed.chunks) == 1
    assert parsed.chunks[0].body == "café au lait\nbad byte: \ufffd here"
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith("menu.txt: ")
    assert str(data.index(b"\xff")) in parsed.warnings[0]


def test_bom_is_stripped(tmp_path: Path):
    path = write_bytes(tmp_path, "bom.md", b"\xef\xbb\xbf# Title\nbody\n")
    parsed = parse_file(path)
    assert [(c.title, c.body) for c in parsed.chunks] == [("Title", "# Title\nbody")]
    assert parsed.warnings == []


@pytest.mark.parametrize("name", ["empty.md", "empty.txt", "empty.py", "empty.pdf", "empty.jsonl"])
def test_empty_file_has_no_chunks(tmp_path: Path, name: str):
    parsed = parse_file(write_bytes(tmp_path, name, b""))
    assert parsed.chunks == [] and parsed.warnings == []


def test_whitespace_only_file_has_no_chunks(tmp_path: Path):
    assert parse_file(write_bytes(tmp_path, "blank.md", b"\n   \n\t\n")).chunks == []


def test_unreadable_file_raises(tmp_path: Path):
    with pytest.raises(IngestError, match="is a directory"):
        parse_file(tmp_path, display_name="somedir")
    with pytest.raises(IngestError, match=r"^gone\.txt: "):
        parse_file(tmp_path / "gone.txt", display_name="gone.txt")


def test_permission_error_becomes_ingest_error(tmp_path: Path, monkeypatch):
    path = write_bytes(tmp_path, "locked.txt", b"hidden\n")
    path.chmod(0)  # enough for any user but root, whom the operating system lets read anything

    real_open = os.open

    def deny(target, flags, *args, **kwargs):  # how kenning.ingest.limits opens a file to read it
        if os.fsdecode(target) == str(path):
            raise PermissionError(13, "Permission denied", str(target))
        return real_open(target, flags, *args, **kwargs)

    if os.geteuid() == 0:
        monkeypatch.setattr(os, "open", deny)
    with pytest.raises(IngestError, match=r"^locked\.txt: permission denied$"):
        parse_file(path, display_name="locked.txt")


def test_detect_kind_by_extension():
    assert detect_kind(Path("a.md"), b"# x") == "markdown"
    assert detect_kind(Path("a.MDX"), b"# x") == "markdown"
    assert detect_kind(Path("a.tsx"), b"const x = 1") == "code"
    assert detect_kind(Path("a.rs"), b"fn main() {}") == "code"
    assert detect_kind(Path("a.log"), b"x") == "text"
    assert detect_kind(Path("noext"), b"%PDF-1.7\n") == "pdf"
    assert detect_kind(Path("a.jsonl"), b'{"text": "hi", "timestamp": 1}\n') == "messages"
    assert detect_kind(Path("a.md"), b"# x\x00") == "binary"
