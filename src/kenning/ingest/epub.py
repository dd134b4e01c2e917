"""EPUB books: chapter by chapter in reading order, each titled by the book and its place in the
table of contents.

An EPUB is a zip (read within kenning.ingest.zipped's bounds): META-INF/container.xml names the
package document, whose spine lists the chapters' XHTML files in reading order and whose manifest
says where they are. The table of contents comes from the EPUB 3 navigation document (its
`<nav epub:type="toc">`) or, in EPUB 2, the NCX file; a chapter file is titled by the path of the
first entry that points into it ("Book > Part One > Chapter 3"). Inside a chapter the HTML reader
cuts sections at h1-h6 (kenning.ingest.html); a chapter's own heading that repeats its table of
contents entry is not written twice.
"""

from __future__ import annotations

import posixpath
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

from .chunk import Chunk, ChunkOptions, IngestError, ParsedSource
from .html import parse_html
from .markdown import clean_text
from .zipped import READ_ERRORS, Container

_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/xml"})
MAX_TOC_ENTRIES = 10_000
MAX_TOC_DEPTH = 16


def parse_epub(data: bytes, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """The book's chapters as sections; a damaged or hostile zip is an IngestError or a FileSkipped
    naming the file."""
    warnings: list[str] = []
    chunks: list[Chunk] = []
    try:
        with Container(data, display) as book:
            package = _package_path(book)
            opf = book.xml(package)
            base = posixpath.dirname(package)
            title = clean_text(opf.findtext(f"{_OPF}metadata/{_DC}title") or "") or Path(display).stem
            manifest = {
                item.get("id"): item
                for item in opf.iter(f"{_OPF}item")
                if item.get("id") and item.get("href") is not None
            }
            contents = _contents(book, opf, manifest, base, warnings, display)
            for ref in opf.iter(f"{_OPF}itemref"):
                item = manifest.get(ref.get("idref"))
                if item is None or item.get("media-type") not in _CHAPTER_TYPES:
                    continue
                name = _resolve(base, item.get("href"))
                if name not in book.names:
                    warnings.append(f"{display}: {name} is in the spine but not in the book")
                    continue
                text = book.read(name).decode("utf-8", errors="replace")
                chapter = contents.get(name, ())
                chunks += _chapter(text, title, chapter, doc_key, display, name, options)
    except READ_ERRORS as exc:
        raise IngestError(f"{display}: not a readable .epub ({exc})") from exc
    return ParsedSource(kind="epub", chunks=chunks, warnings=warnings)


def _package_path(book: Container) -> str:
    container = book.xml("META-INF/container.xml")
    rootfile = container.find(f"{_CONTAINER}rootfiles/{_CONTAINER}rootfile")
    path = rootfile.get("full-path") if rootfile is not None else None
    if not path or path not in book.names:
        raise ValueError("META-INF/container.xml names no package document in the book")
    return path


def _chapter(text, title, chapter, doc_key, display, name, options) -> list[Chunk]:
    """One chapter file's sections, titled book > table-of-contents path > its own headings."""
    parsed = parse_html(text, doc_key, f"{display}/{name}", options)
    out = []
    for chunk in parsed.chunks:
        inner = [part for part in chunk.title.split(" > ") if part]
        if inner and not chapter and inner == [Path(name).stem]:
            inner = []  # the HTML reader's fallback (the file's name) says nothing a reader knows
        if chapter and inner and inner[0].casefold() == chapter[-1].casefold():
            inner = inner[1:]  # the chapter's own heading repeats its entry in the contents
        chunk.title = " > ".join((title, *chapter, *inner))
        chunk.start_line = chunk.end_line = None  # lines of a file inside the zip, not of the book
        chunk.meta = {**chunk.meta, "part": name}
        out.append(chunk)
    return out


def _contents(book, opf, manifest, base, warnings, display) -> dict[str, tuple[str, ...]]:
    """Each chapter file's table-of-contents path (its first entry's titles, outermost first)."""
    entries: list[tuple[str, tuple[str, ...]]] = []
    nav = next((i for i in manifest.values() if "nav" in (i.get("properties") or "").split()), None)
    try:
        if nav is not None:
            name = _resolve(base, nav.get("href"))
            reader = _NavReader()
            reader.feed(book.read(name).decode("utf-8", errors="replace"))
            reader.close()
            entries = [(_resolve(posixpath.dirname(name), href), path) for href, path in reader.entries]
        else:
            spine = opf.find(f"{_OPF}spine")
            ncx = manifest.get(spine.get("toc")) if spine is not None else None
            if ncx is not None:
                name = _resolve(base, ncx.get("href"))
                root = book.xml(name, allow_doctype=True)
                _walk_ncx(root.find(f"{_NCX}navMap"), (), posixpath.dirname(name), entries)
    except READ_ERRORS as exc:  # a broken table of contents: the chapters are still read
        warnings.append(f"{display}: its table of contents could not be read ({exc})")
    out: dict[str, tuple[str, ...]] = {}
    for target, path in entries[:MAX_TOC_ENTRIES]:
        out.setdefault(target, path)
    return out


def _walk_ncx(node, parents, folder, entries) -> None:
    if node is None or len(parents) >= MAX_TOC_DEPTH or len(entries) >= MAX_TOC_ENTRIES:
        return
    for point in node.findall(f"{_NCX}navPoint"):
        label = clean_text(point.findtext(f"{_NCX}navLabel/{_NCX}text") or "")
        content = point.find(f"{_NCX}content")
        path = (*parents, label) if label else parents
        if content is not None and content.get("src"):
            entries.append((_resolve(folder, content.get("src")), path))
        _walk_ncx(point, path, folder, entries)


class _NavReader(HTMLParser):
    """The entries of an EPUB 3 navigation document's table of contents: (href, titles path)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.entries: list[tuple[str, tuple[str, ...]]] = []
        self._in_toc = 0  # nesting depth inside <nav epub:type="toc">
        self._path: list[str] = []  # titles of the open list items
        self._link: list | None = None  # [href, text parts] while inside <a>

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "nav" and ("toc" in (attrs.get("epub:type") or "").split() or self._in_toc):
            self._in_toc += 1
        elif not self._in_toc:
            return
        if tag == "li" and len(self._path) < MAX_TOC_DEPTH:
            self._path.append("")
        elif tag == "a" and attrs.get("href"):
            self._link = [attrs["href"], []]

    def handle_endtag(self, tag):
        if not self._in_toc:
            return
        if tag == "nav":
            self._in_toc -= 1
        elif tag == "a" and self._link is not None:
            href, parts = self._link
            self._link = None
            label = clean_text("".join(parts))
            if self._path:
                self._path[-1] = label
            if len(self.entries) < MAX_TOC_ENTRIES:
                self.entries.append((href, tuple(p for p in self._path if p)))
        elif tag == "li" and self._path:
            self._path.pop()

    def handle_data(self, data):
        if self._link is not None:
            self._link[1].append(data)


def _resolve(folder: str, href: str | None) -> str:
    """A manifest or contents href as a member name: relative to its file's folder, without its
    fragment, percent-decoded."""
    target = unquote((href or "").split("#", 1)[0])
    return posixpath.normpath(posixpath.join(folder, target)) if target else ""
