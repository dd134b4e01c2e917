"""One file's kind and chunks: `detect_kind` tells the kind from the name and the first bytes,
`parse_file` reads the bytes once and hands off to the parser of that kind (one module per format).
The package (kenning.ingest) exports these."""

from __future__ import annotations

from pathlib import Path

from .beir import parse_beir
from .chat_exports import IMESSAGE, SLACK_DAY, SLACK_METADATA, TELEGRAM, WHATSAPP, chat_export
from .chat_imessage import looks_like_messages_db, parse_imessage
from .chat_slack import parse_slack_day, skip_metadata
from .chat_telegram import parse_telegram
from .chat_whatsapp import parse_whatsapp
from .chunk import ChunkOptions, IngestError, ParsedSource, bounded
from .code import LANGUAGES, parse_code
from .jsonl import JSONL_SUFFIXES, sniff_jsonl
from .limits import DEFAULT_MAX_FILE_BYTES, HEAD_BYTES, read_bounded
from .markdown import parse_markdown
from .messages import parse_messages
from .notebook import parse_notebook
from .pdf import parse_pdf
from .source import UTF16_BOMS, decode_text, split_source_lines
from .text import parse_text
from .walk import path_key

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
NOTEBOOK_SUFFIXES = frozenset({".ipynb"})
DOCX_SUFFIXES = frozenset({".docx"})
EPUB_SUFFIXES = frozenset({".epub"})


def detect_kind(path: Path | str, head_bytes: bytes) -> str:
    """Kind of a file from its name and first bytes: markdown, html, notebook, docx, epub, code, pdf,
    messages, beir, text or binary.

    A NUL byte in the first 8 KB means binary whatever the extension says, unless a UTF-16 byte order
    mark says the NULs are half of each character, or the file is a macOS Messages database. For
    .jsonl files the first complete JSON object in `head_bytes` decides; if none fits, "text" is
    returned and `parse_file` looks at the whole file before giving up. Chat apps' exports (a
    WhatsApp .txt, a Slack or Telegram .json, Messages' chat.db: kenning.ingest.chat_exports) are
    "messages".
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".pdf" or head_bytes.startswith(b"%PDF-"):
        return "pdf"
    if looks_like_messages_db(path, head_bytes):  # (SQLite: NULs, yet readable)
        return "messages"
    if suffix in DOCX_SUFFIXES and head_bytes.startswith(b"PK"):
        return "docx"
    if suffix in EPUB_SUFFIXES and head_bytes.startswith(b"PK"):
        return "epub"
    if b"\x00" in head_bytes[:HEAD_BYTES] and not head_bytes.startswith(UTF16_BOMS):
        return "binary"
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in NOTEBOOK_SUFFIXES:
        return "notebook"
    if suffix in LANGUAGES:
        return "code"
    if chat_export(path, head_bytes):
        return "messages"
    if suffix in JSONL_SUFFIXES:
        text = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff")
        complete = split_source_lines(text)
        if len(head_bytes) >= HEAD_BYTES and not text.endswith(("\n", "\r")):
            complete = complete[:-1]  # the last line may be cut off mid-object
        return sniff_jsonl(complete) or "text"
    return "text"


def binary_reason(path: Path | str, head_bytes: bytes) -> str | None:
    """Why a file whose first bytes are `head_bytes` is binary (None: it is not), told from the
    first block alone so that the rest need not be read."""
    if detect_kind(path, head_bytes[:HEAD_BYTES]) != "binary":
        return None
    offset = head_bytes.index(b"\x00")
    return f"binary content (NUL byte at offset {offset})"


def parse_file(
    path: Path | str,
    options: ChunkOptions | None = None,
    display_name: str | None = None,
    data: bytes | None = None,
    doc_key: str | None = None,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> ParsedSource:
    """Read one file (unless its bytes are given; at most `max_bytes`, kenning.ingest.limits) and
    parse it into chunks according to its kind.

    Raises IngestError ("{display}: reason") when the file cannot be read or is not text, and its
    FileSkipped (kenning.ingest.limits) for a file left out by design (a Slack export's lists of
    users and channels). Decoding problems are warnings, not errors. An empty file gives zero
    chunks. `max_bytes` also bounds the files one is read with: a Slack export's users.json, the
    write-ahead log of a Messages chat.db.
    """
    path = Path(path)
    options = options or ChunkOptions()
    display = display_name or path_key(path)
    doc_key = doc_key or path_key(path.resolve())
    if data is None:
        data = read_bounded(path, max_bytes, display, binary_head=lambda head: binary_reason(path, head))

    kind = detect_kind(path, data[:HEAD_BYTES])
    if not data:
        return ParsedSource(kind=kind, chunks=[])
    if kind == "binary":
        offset = data.index(b"\x00")
        raise IngestError(f"{display}: binary content (NUL byte at offset {offset})")
    export = chat_export(path, data[:HEAD_BYTES]) if kind == "messages" else None
    if export == SLACK_METADATA:
        raise skip_metadata(display)
    if export == IMESSAGE:
        parsed = parse_imessage(data, path, doc_key, display, options, max_bytes)
        parsed.chunks = bounded(parsed.chunks, options.max_chars)
        return parsed
    if kind in ("pdf", "docx", "epub"):
        if kind == "docx":  # its parser (xml.etree) imported for the first such file
            from .docx import parse_docx as parse_zipped
        elif kind == "epub":
            from .epub import parse_epub as parse_zipped
        parsed = (parse_pdf if kind == "pdf" else parse_zipped)(data, doc_key, display, options)
        parsed.chunks = bounded(parsed.chunks, options.max_chars)
        return parsed

    text, warnings = decode_text(data, display)
    if export:
        parsed = _parse_chat_export(export, text, path, doc_key, display, options, max_bytes)
    elif path.suffix.lower() in JSONL_SUFFIXES:
        lines = split_source_lines(text)
        if kind not in ("messages", "beir"):
            kind = sniff_jsonl(lines) or ""
        if kind == "messages":
            parsed = parse_messages(lines, doc_key, display, options)
        elif kind == "beir":
            parsed = parse_beir(lines, display)
        elif not any(line.strip() for line in lines):
            parsed = ParsedSource(kind="text", chunks=[])
        else:
            raise IngestError(
                f"{display}: unrecognised JSON lines file; expected objects with 'text' and "
                "'timestamp' (a message log) or '_id' and 'text' (a BEIR corpus)"
            )
    elif kind == "markdown":
        parsed = parse_markdown(text, doc_key, display, options)
    elif kind == "html":
        from .html import parse_html  # (html.parser: imported for the first such file)

        parsed = parse_html(text, doc_key, display, options)
    elif kind == "notebook":
        parsed = parse_notebook(text, doc_key, display, options)
    elif kind == "code":
        parsed = parse_code(text, path, doc_key, display, options)
    else:
        parsed = None
    if parsed is None:
        parsed = parse_text(text, doc_key, display, options)
    parsed.warnings[:0] = warnings
    parsed.chunks = bounded(parsed.chunks, options.max_chars)
    if not parsed.chunks and text.strip():
        parsed.warnings.append(f"{display}: no text found to index")  # never a silent nothing
    return parsed


def _parse_chat_export(
    export: str, text: str, path: Path, doc_key: str, display: str, options: ChunkOptions, max_bytes: int
) -> ParsedSource | None:
    """A chat app's text export (kenning.ingest.chat_exports); None: not one after all, read as text."""
    if export == WHATSAPP:  # a text that only began like one, with no message in it, stays text
        parsed = parse_whatsapp(text, path, doc_key, display, options)
        return parsed if parsed.chunks else None
    if export == SLACK_DAY:
        return parse_slack_day(text, path, doc_key, display, options, max_bytes)
    if export == TELEGRAM:
        return parse_telegram(text, doc_key, display, options)
    return None
