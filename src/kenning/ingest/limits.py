"""What one file may cost to read: every bound that keeps a small hostile file from taking the
machine's memory or time.

A folder kenning indexes may hold files made to blow up a reader: a kilobyte of YAML whose aliases
expand to a billion strings, a megabyte of zip that inflates to gigabytes, a sparse file that claims
terabytes, a named pipe that never answers. Each reader checks its bound here, and a file past one
is skipped (or its part ignored) with a message naming the file and the limit; the run goes on.

- Bytes read per file: `max_file_bytes` (64 MiB unless the user says, `kenning index
  --max-file-bytes`), checked from the file's size before any byte is read, and while reading (a
  file may grow). Only regular files are opened, and never in a way that waits (a FIFO is refused).
- Binary content is recognised from the first block (a NUL byte in the first 8 KB) before the rest
  is read; a macOS Messages database is read though (kenning.ingest.chat_imessage), within the same
  size bound with its write-ahead log, and within a budget of SQLite steps.
- YAML front matter: at most MAX_FRONT_MATTER_BYTES, MAX_YAML_NODES nodes and MAX_YAML_ALIASES
  aliases; values are copied out to at most MAX_YAML_ITEMS items and MAX_YAML_DEPTH levels.
- Zip containers (DOCX, EPUB): at most MAX_ZIP_MEMBERS members, and each member read inflates to at
  most MAX_ZIP_MEMBER_BYTES, all of them together to MAX_ZIP_TOTAL_BYTES, counted as they inflate
  (the sizes a zip declares are not trusted).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .chunk import IngestError

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 8192
MAX_FRONT_MATTER_BYTES = 64 * 1024
MAX_YAML_NODES = 10_000
MAX_YAML_ALIASES = 100
MAX_YAML_ITEMS = 10_000
MAX_YAML_DEPTH = 32
MAX_ZIP_MEMBERS = 10_000
MAX_ZIP_MEMBER_BYTES = 32 * 1024 * 1024
MAX_ZIP_TOTAL_BYTES = 256 * 1024 * 1024  # every member of one zip together (an EPUB of many chapters)


class FileSkipped(IngestError):
    """A file left out on purpose, past a limit: reported as skipped, not as failed."""


def megabytes(n: int) -> str:
    """A size for a message: 64 MiB, 2048 MiB, 1.5 MiB; bytes below a MiB."""
    return f"{n / (1 << 20):.4g} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_bounded(path: Path, max_bytes: int, display: str, binary_head=None) -> bytes:
    """The bytes of a regular file, at most `max_bytes` of them (FileSkipped past that).

    `binary_head(head) -> str | None`, when given, looks at the first block before the rest is read
    and names why the file is binary (IngestError), so a 2 GB image is not read to find its NUL."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _read_error(exc, display) from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IngestError(f"{display}: is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise FileSkipped(f"{display}: not a regular file")
        if info.st_size > max_bytes:
            raise FileSkipped(
                f"{display}: {megabytes(info.st_size)}, over the {megabytes(max_bytes)} limit "
                "(--max-file-bytes)"
            )
        head = os.read(fd, HEAD_BYTES)
        if binary_head is not None and (why := binary_head(head)):
            raise IngestError(f"{display}: {why}")
        parts, total = [head], len(head)
        while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total) or 1):
            parts.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise FileSkipped(
                    f"{display}: grew past the {megabytes(max_bytes)} limit while read (--max-file-bytes)"
                )
        return b"".join(parts)
    except OSError as exc:
        raise _read_error(exc, display) from exc
    finally:
        os.close(fd)


def _read_error(exc: OSError, display: str) -> IngestError:
    if isinstance(exc, PermissionError):
        return IngestError(f"{display}: permission denied")
    if isinstance(exc, IsADirectoryError):
        return IngestError(f"{display}: is a directory")
    if isinstance(exc, FileNotFoundError):
        return IngestError(f"{display}: file not found")
    return IngestError(f"{display}: cannot read ({exc.strerror or exc})")


def byte_size(text: str) -> int:
    """A size as a user writes it (65536, 64K, 64M, 1G, 1.5G) in bytes; ValueError otherwise."""
    value = str(text).strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:], 1)
    number = value[:-1] if scale > 1 else value
    try:
        size = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a size (as 65536, 64K, 64M or 1G)") from None
    if not size >= 1 or size != size or size == float("inf"):
        raise ValueError(f"{text!r} is not a size of at least one byte")
    return int(size * scale)
