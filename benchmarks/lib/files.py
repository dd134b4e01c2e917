"""The files an index or a corpus takes: their size, and whether they are in the page cache."""

from __future__ import annotations

import os
from pathlib import Path


def disk_mb(path: Path) -> float:
    """The bytes of every file below a folder, in MB (2**20)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def page_cache(directory: Path, state: str) -> None:
    """Every file below a folder in the page cache ("warm": read whole) or out of it ("cold": synced,
    then posix_fadvise DONTNEED); "as-is" leaves them. Two systems measured one after the other then
    start alike: a machine that pages out files untouched for a minute would otherwise serve the one
    built first from the disk and the one built last from memory."""
    if state == "as-is":
        return
    if state == "cold":
        os.sync()
    buffer = bytearray(1 << 20)
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        with open(path, "rb", buffering=0) as fh:
            if state == "cold":
                os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while fh.readinto(buffer):
                    pass
