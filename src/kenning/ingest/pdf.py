"""PDF: one chunk per page (windowed if long), so a result can say which page to open.

Text comes from PDFium (pypdfium2): it keeps whole the words pypdf splits apart, and it is an order
of magnitude faster. A PDF that cannot be opened (damaged, or
encrypted with a password) is an IngestError naming the file; a page whose text cannot be read is a
warning, and the rest of the document is indexed.
"""

from __future__ import annotations

from pathlib import Path

from .chunk import ChunkOptions, IngestError, ParsedSource
from .source import split_source_lines, windowed_chunks


def parse_pdf(data: bytes, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Text of each page as its own chunk, titled `{title or basename} > page {n}`.

    Pages without extractable text (scans, blank pages) give no chunk.
    """
    import pypdfium2 as pdfium  # imported here: only PDF ingestion pays for it

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise IngestError(f"{display}: encrypted PDF (needs a password)") from exc
        raise IngestError(f"{display}: malformed PDF ({_reason(exc)})") from exc
    warnings: list[str] = []
    chunks = []
    try:
        label = _metadata_title(document) or Path(display).name
        for number in range(1, len(document) + 1):
            try:
                page = document[number - 1]
                textpage = page.get_textpage()
                text = textpage.get_text_range()
                textpage.close()
                page.close()
            except Exception as exc:  # one damaged page must not lose the others
                warnings.append(f"{display}: page {number}: text could not be extracted ({_reason(exc)})")
                continue
            chunks.extend(
                windowed_chunks(
                    split_source_lines(text.replace("\x00", "")),
                    1,
                    options,
                    title=f"{label} > page {number}",
                    doc_key=doc_key,
                    page=number,
                    keep_lines=False,  # lines of extracted page text are not lines of the file
                )
            )
    finally:
        document.close()
    return ParsedSource(kind="pdf", chunks=chunks, warnings=warnings)


def _metadata_title(document) -> str:
    try:
        title = document.get_metadata_dict().get("Title")
    except Exception:
        return ""
    return " ".join(str(title).split()) if title else ""


def _reason(exc: Exception) -> str:
    return str(exc).strip() or type(exc).__name__
