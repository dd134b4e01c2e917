"""PDF: sections from the document's outline (its bookmarks), else from the headings its text layer
sets apart (kenning.ingest.pdf_headings), else one chunk per page; every chunk keeps the pages it
spans, so a result can say which page to open.

Text comes from PDFium (pypdfium2): it keeps whole the words pypdf splits apart, and it is an order
of magnitude faster. A PDF that cannot be opened (damaged, or encrypted with a password) is an
IngestError naming the file; a page whose text cannot be read is a warning, and the rest of the
document is indexed.

With an outline, each bookmark starts a section titled by its heading path, as a Markdown
heading's would be ("spec.pdf > 2. Unified system > 2.1. Directory layout"). A bookmark's
destination gives its page and, for the usual "XYZ" destinations, the height on the page where
it points: the page is cut there, so a page holding three sections gives three chunks and a
section running over two pages is one. Text before the first bookmark is a section titled by the
document alone; no text between two bookmarks is dropped. Headings found in the text are cut the
same way, just above their line. A chunk's `page` is its first page, and `meta["page_end"]` its
last when that is another.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .chunk import Chunk, ChunkOptions, IngestError, ParsedSource, split_lines_into_windows
from .pdf_headings import Heading, detect_headings, heading_paths
from .source import split_source_lines

MAX_BOOKMARKS = 5000  # an outline longer than this is read no further (a crafted file's loop)
MAX_DEPTH = 16
MAX_CUTS_PER_PAGE = 64  # bookmarks that cut one page (each cut reads the page's text once more)
MAX_DETECTED_PER_PAGE = 8  # headings found in the text that cut one page; and on average at most
DETECTED_PER_PAGE = 4  # this many a page (the manuals tried have about two)
MAX_TITLE_CHARS = 200  # a bookmark's title, and
MAX_PATH_CHARS = 512  # a heading path of them, are cut here (every child repeats its parents')
# destination view modes that give a height on the page, and where it is among their parameters
# (PDF 32000-1, 12.3.2.2): XYZ (left, top, zoom), FitH (top), FitR (left, bottom, right, top), FitBH (top)
_TOP_PARAMETER = {1: 1, 3: 0, 5: 3, 7: 0}


@dataclass(frozen=True)
class Bookmark:
    """Where a section begins: its heading path, its page (0-based) and the height on that page
    (PDF points from the bottom; None: the top of the page)."""

    path: tuple[str, ...]
    page: int
    top: float | None


def parse_pdf(data: bytes, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Sections from the outline, titled by heading path; without one, each page's text as its own
    chunk, titled `{title or basename} > page {n}`. Pages without extractable text (scans, blank
    pages) give no chunk."""
    import pypdfium2 as pdfium  # imported here: only PDF ingestion pays for it

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise IngestError(f"{display}: encrypted PDF (needs a password)") from exc
        raise IngestError(f"{display}: malformed PDF ({_reason(exc)})") from exc
    warnings: list[str] = []
    try:
        label = _metadata_title(document) or Path(display).name
        bookmarks = _bookmarks(document, len(document), warnings, display)
        bookmarks = bookmarks or _detected(document, warnings, display)
        if bookmarks:
            chunks = _sections(document, bookmarks, label, doc_key, options, warnings, display)
        else:
            chunks = _pages(document, label, doc_key, options, warnings, display)
    finally:
        document.close()
    return ParsedSource(kind="pdf", chunks=chunks, warnings=warnings)


def _pages(document, label, doc_key, options, warnings, display) -> list[Chunk]:
    chunks: list[Chunk] = []
    numbered = 0  # lines of the document's text so far
    for number in range(1, len(document) + 1):
        text = _page_text(document, number - 1, None, None, warnings, display)
        if text is None:
            continue
        lines = split_source_lines(text)
        chunks.extend(
            _windows(lines, [number] * len(lines), f"{label} > page {number}", doc_key, options, numbered)
        )
        numbered += len(lines)
    return chunks


def _bookmarks(document, pages: int, warnings: list[str], display: str) -> list[Bookmark]:
    """The outline's bookmarks that point into the document, in the order of their places in it,
    each with its heading path (the titles of its ancestors and its own)."""
    out: list[Bookmark] = []
    stack: list[str] = []
    try:
        for n, item in enumerate(document.get_toc(max_depth=MAX_DEPTH)):
            if n >= MAX_BOOKMARKS:
                warnings.append(f"{display}: outline longer than {MAX_BOOKMARKS} entries; the rest not read")
                break
            title = " ".join((item.get_title() or "")[: 4 * MAX_TITLE_CHARS].split())[:MAX_TITLE_CHARS]
            del stack[item.level :]
            stack.append(title or "(untitled)")
            dest = item.get_dest()
            page = dest.get_index() if dest is not None else None
            if page is None or not 0 <= page < pages:
                continue  # a bookmark to nowhere (or to another file) names a heading but no place
            mode, view = dest.get_view()
            at = _TOP_PARAMETER.get(mode)
            top = float(view[at]) if at is not None and len(view) > at and view[at] else None
            out.append(Bookmark(tuple(stack), page, top))
    except Exception as exc:  # a damaged outline: read the headings or the pages instead
        warnings.append(f"{display}: outline could not be read ({_reason(exc)}); indexed without it")
        return []
    return _in_reading_order(out, warnings, display)


def _detected(document, warnings: list[str], display: str) -> list[Bookmark]:
    """Section starts from the headings the text layer sets apart (kenning.ingest.pdf_headings),
    each just above its heading's line so the heading opens its own section."""
    try:
        headings = detect_headings(document)
    except Exception as exc:  # the pages are still read one by one
        warnings.append(f"{display}: headings could not be read ({_reason(exc)}); indexed by page")
        return []
    headings = _most_prominent(headings, len(document))
    if len(headings) > _heading_budget(len(document)):
        warnings.append(f"{display}: more lines set apart than a document has headings; indexed by page")
        return []
    marks = [
        Bookmark(tuple(title[:MAX_TITLE_CHARS] for title in path), heading.page, heading.top + 0.5)
        for heading, path in zip(headings, heading_paths(headings), strict=True)
    ]
    return _in_reading_order(marks, warnings, display, MAX_DETECTED_PER_PAGE)


def _most_prominent(headings: list[Heading], pages: int) -> list[Heading]:
    """The headings, their least prominent levels left out while there are more than a document's
    headings could be (MAX_DETECTED_PER_PAGE on a page, DETECTED_PER_PAGE a page on average): each
    cut reads its page once more, so a page of short bold lines (a table, a form) must not become
    sixty sections. Their text stays in the sections of the headings kept. Still too many of one
    level (the caller checks): the document is read by page; too many on a page: the page's first
    MAX_DETECTED_PER_PAGE cut it."""
    ranks = sorted({h.rank for h in headings})
    while len(ranks) > 1:
        on_page = Counter(h.page for h in headings)
        if len(headings) <= _heading_budget(pages) and max(on_page.values()) <= MAX_DETECTED_PER_PAGE:
            break
        least = ranks.pop()
        headings = [h for h in headings if h.rank != least]
    return headings[:MAX_BOOKMARKS]


def _heading_budget(pages: int) -> int:
    """The most headings found in the text that a document of `pages` pages is cut at."""
    return DETECTED_PER_PAGE * pages + 16


def _in_reading_order(
    out: list[Bookmark], warnings: list[str], display: str, per_page: int = MAX_CUTS_PER_PAGE
) -> list[Bookmark]:
    """The section starts by page, then down the page (a larger height is nearer the top), with at
    most `per_page` on a page."""
    out = sorted(out, key=lambda b: (b.page, -(b.top if b.top is not None else float("inf"))))
    kept, on_page = [], {}
    for bookmark in out:
        on_page[bookmark.page] = on_page.get(bookmark.page, 0) + 1
        if on_page[bookmark.page] <= per_page:
            kept.append(bookmark)
    crowded = sorted(page + 1 for page, n in on_page.items() if n > per_page)
    if crowded:
        warnings.append(
            f"{display}: more than {per_page} bookmarks on page(s) "
            f"{', '.join(map(str, crowded[:5]))}; the rest of them are read as part of the section before"
        )
    return kept


def _sections(document, bookmarks, label, doc_key, options, warnings, display) -> list[Chunk]:
    """Each bookmark's text, from its place to the next bookmark's, as chunks titled by its path;
    the text before the first bookmark under the document's label."""
    starts = [Bookmark((), 0, None)] + _on_line_boundaries(document, bookmarks)
    chunks: list[Chunk] = []
    numbered = 0  # lines of the document's text so far
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        lines: list[str] = []
        pages: list[int] = []
        last = end.page if end is not None else len(document) - 1
        for page in range(start.page, last + 1):
            top = start.top if page == start.page else None
            bottom = end.top if end is not None and page == end.page else None
            if end is not None and page == end.page and end.top is None:
                break  # the next section opens this page: nothing of it is this one's
            text = _page_text(document, page, top, bottom, warnings, display)
            for line in split_source_lines(text or ""):
                lines.append(line)
                pages.append(page + 1)
        title = " > ".join((label, *start.path))[:MAX_PATH_CHARS]
        chunks.extend(_windows(lines, pages, title, doc_key, options, numbered))
        numbered += len(lines)
    return chunks


def _on_line_boundaries(document, bookmarks: list[Bookmark]) -> list[Bookmark]:
    """The bookmarks with their heights moved up to the top of the line each cuts through, if it
    cuts one: a destination may point into the middle of its heading, and a band cut there would
    split the heading's letters between two sections. Each page's letters are read once and merged
    into the vertical spans of its lines, so a page of many bookmarks costs one pass and a sort."""
    lines_of: dict[int, list[tuple[float, float]]] = {}
    out = []
    for bookmark in bookmarks:
        if bookmark.top is None:
            out.append(bookmark)
            continue
        if bookmark.page not in lines_of:
            lines_of[bookmark.page] = _line_spans(document, bookmark.page)
        spans = lines_of[bookmark.page]
        i = bisect.bisect_left(spans, (bookmark.top, float("inf"))) - 1  # the last span starting below it
        if i >= 0 and spans[i][0] < bookmark.top < spans[i][1]:
            out.append(Bookmark(bookmark.path, bookmark.page, spans[i][1] + 0.01))
        else:
            out.append(bookmark)
    return out


def _line_spans(document, index: int) -> list[tuple[float, float]]:
    """The page's letters' vertical extents (bottom, top), merged where they overlap: its lines, as
    disjoint spans sorted from the bottom of the page. [] when the page cannot be read."""
    try:
        page = document[index]
        textpage = page.get_textpage()
        boxes = sorted(
            (low, high) for _, low, _, high in map(textpage.get_charbox, range(textpage.count_chars()))
        )
        textpage.close()
        page.close()
    except Exception:  # an unreadable page: _page_text reports it
        return []
    merged: list[tuple[float, float]] = []
    for low, high in boxes:
        if high <= low:
            continue  # a space or a break has no height
        if merged and low < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _windows(lines, pages, title, doc_key, options, before: int) -> list[Chunk]:
    """A section's (or a page's) text in windows (kenning.ingest.source), each with its first page,
    its line numbers in the document's text (`before` lines come earlier: overlapping windows are
    shown once by `kenning get`), and, when it runs over pages, its last page and the lines where
    each later page begins (`page_breaks`, so `get FILE#page=N` shows that page's lines alone)."""
    out = []
    if not any(line.strip() for line in lines):
        return out
    for s, e, text in split_lines_into_windows(lines, before + 1, options, 0):
        if not text.strip():
            continue
        first, final = pages[s - before - 1], pages[e - before - 1]
        meta: dict = {}
        if final != first:
            breaks = [n for n in range(s + 1, e + 1) if pages[n - before - 1] != pages[n - before - 2]]
            meta = {"page_end": final, "page_breaks": breaks}
        out.append(
            Chunk(title=title, body=text, doc_key=doc_key, start_line=s, end_line=e, page=first, meta=meta)
        )
    return out


def _page_text(document, index, top, bottom, warnings, display) -> str | None:
    """The text of a page (0-based), or of the band between two heights on it; None when it cannot
    be read (a warning names the page)."""
    try:
        page = document[index]
        textpage = page.get_textpage()
        if top is None and bottom is None:
            text = textpage.get_text_range()
        else:
            left, low, right, high = page.get_bbox()
            text = textpage.get_text_bounded(
                left=left,
                bottom=low if bottom is None else bottom,
                right=right,
                top=high if top is None else top,
            )
        textpage.close()
        page.close()
    except Exception as exc:  # one damaged page must not lose the others
        warning = f"{display}: page {index + 1}: text could not be extracted ({_reason(exc)})"
        if warning not in warnings:  # a page cut into several sections is read once for each
            warnings.append(warning)
        return None
    return text.replace("\x00", "")


def _metadata_title(document) -> str:
    try:
        title = document.get_metadata_dict().get("Title")
    except Exception:
        return ""
    return " ".join(str(title).split()) if title else ""


def _reason(exc: Exception) -> str:
    return str(exc).strip() or type(exc).__name__
