"""Reading zip containers (DOCX, EPUB) within kenning.ingest.limits: members counted before the
central directory is read, every member inflated to at most MAX_ZIP_MEMBER_BYTES (counted as it
inflates: the sizes a zip declares are not trusted), all of them together to at most
MAX_ZIP_TOTAL_BYTES, and XML parsed without entity declarations (how XML bombs expand)."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from xml.etree import ElementTree

from .chunk import IngestError
from .limits import MAX_ZIP_MEMBER_BYTES, MAX_ZIP_MEMBERS, MAX_ZIP_TOTAL_BYTES, FileSkipped, megabytes

# what a damaged zip or XML part raises while it is read
READ_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    KeyError,
    ElementTree.ParseError,
    EOFError,
    zlib.error,
    RuntimeError,
    ValueError,
)
_PLAIN_DOCTYPE = re.compile(rb"<!DOCTYPE[^\[>]*>")  # a document type without an internal subset


class Container:
    """An opened zip whose reads are bounded; use as a context manager."""

    def __init__(self, data: bytes, display: str):
        members = declared_members(data)
        if members is not None and members > MAX_ZIP_MEMBERS:
            raise FileSkipped(f"{display}: a zip of {members} members, over the {MAX_ZIP_MEMBERS} limit")
        self.display = display
        self.archive = zipfile.ZipFile(io.BytesIO(data))
        if len(self.archive.infolist()) > MAX_ZIP_MEMBERS:
            self.archive.close()
            raise FileSkipped(f"{display}: a zip of over {MAX_ZIP_MEMBERS} members")
        self.names = set(self.archive.namelist())
        self.inflated = 0

    def __enter__(self) -> Container:
        return self

    def __exit__(self, *exc) -> None:
        self.archive.close()

    def read(self, name: str) -> bytes:
        """One member's bytes, within the member and total bounds."""
        parts, total = [], 0
        with self.archive.open(name) as member:
            while block := member.read(1 << 20):
                total += len(block)
                self.inflated += len(block)
                if total > MAX_ZIP_MEMBER_BYTES:
                    raise FileSkipped(
                        f"{self.display}: {name} inflates past the {megabytes(MAX_ZIP_MEMBER_BYTES)} limit"
                    )
                if self.inflated > MAX_ZIP_TOTAL_BYTES:
                    raise FileSkipped(
                        f"{self.display}: its parts inflate past the {megabytes(MAX_ZIP_TOTAL_BYTES)} limit"
                    )
                parts.append(block)
        return b"".join(parts)

    def xml(self, name: str, allow_doctype: bool = False):
        """One XML member parsed. No entity may be declared; a plain document type line (as EPUB's
        NCX tables of contents carry) is dropped when `allow_doctype`, else refused."""
        xml = self.read(name)
        if b"<!DOCTYPE" in xml[:4096] and allow_doctype:
            xml = _PLAIN_DOCTYPE.sub(b"", xml, count=1)
        if b"<!DOCTYPE" in xml[:4096] or b"<!ENTITY" in xml:
            raise IngestError(f"{self.display}: {name} declares a document type, which no such file needs")
        return ElementTree.fromstring(xml)


def declared_members(data: bytes) -> int | None:
    """How many members a zip's end record says it holds (None: no end record found), read before
    the central directory is: a small file can list millions of empty members."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0 or end + 22 > len(data):
        return None
    (count,) = struct.unpack_from("<H", data, end + 10)
    if count == 0xFFFF:  # zip64: the count is in the zip64 end record, which a locator points at
        locator = end - 20
        if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
            (offset,) = struct.unpack_from("<Q", data, locator + 8)
            if offset + 40 <= len(data) and data[offset : offset + 4] == b"PK\x06\x06":
                (count,) = struct.unpack_from("<Q", data, offset + 32)
    return count
