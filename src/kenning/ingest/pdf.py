"""PDF: one chunk per page (windowed if long), so a result can say which page to open.

pypdf is chatty about the many small spec violations real PDFs have; those are not the user's
problem, so its logging and warnings are silenced while we read. A PDF that cannot be opened at all
is an IngestError naming the file.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

from .chunk import ChunkOptions, IngestError, ParsedSource
from .source import split_source_lines, windowed_chunks


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def parse_pdf(data: bytes, doc_key: str, display: str, options: ChunkOptions) -> ParsedSource:
    """Text of each page as its own chunk, titled `{title or basename} > page {n}`.

    Pages without extractable text (scans, blank pages) are skipped; a page whose extraction fails
    is skipped with a warning rather than losing the whole document.
    """
    from pypdf import PdfReader  # imported here: only PDF ingestion pays for it

    warnings_out: list[str] = []
    with _quiet_pypdf():
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise IngestError(f"{display}: encrypted PDF (needs a password)")
            pages = list(reader.pages)
        except IngestError:
            raise
        except Exception as exc:  # pypdf raises many kinds of errors on damaged files
            raise IngestError(f"{display}: malformed PDF ({_reason(exc)})") from exc
        label = _metadata_title(reader) or Path(display).name

        chunks = []
        for number, page in enumerate(pages, start=1):
            try:
                text = page.extract_text() or ""
            except Exception as exc:
                warnings_out.append(f"{display}: page {number}: text could not be extracted ({_reason(exc)})")
                continue
            chunks.extend(
                windowed_chunks(
                    split_source_lines(text),
                    1,
                    options,
                    title=f"{label} > page {number}",
                    doc_key=doc_key,
                    page=number,
                    keep_lines=False,  # lines of extracted page text are not lines of the file
                )
            )
    return ParsedSource(kind="pdf", chunks=chunks, warnings=warnings_out)


def _metadata_title(reader) -> str:
    try:
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except Exception:
        return ""
    return " ".join(str(title).split()) if title else ""


def _reason(exc: Exception) -> str:
    return str(exc).strip() or type(exc).__name__
