"""The lexical view's corpus-wide arrays of one generation, kept beside a folder index as one file
that a new process memory-maps instead of building them.

BM25 needs every chunk's title and body length and the live set, as arrays by chunk id. A view
built them from the segments' stored lengths: at 1M chunks ~10 ms of a new process's first query
(reading and decoding 4 MB of lengths, filling three corpus-sized arrays), a third of it. The writer
saves them after each write that changes the live set (`views/lengths.bin`, replaced atomically and
flushed to disk); a reader of the generation the file names maps it (nothing is read until a
query's candidates touch their pages), and any other reader (a commit not saved yet, a damaged file,
a server store with no folder) builds them from the segments as before.

Layout: a 64-byte header (magic, version, generation, largest chunk id, live chunks, the commit's
time (another index copied in with the same generation is not taken for it), mean title and body
lengths), then title lengths (uint16 by chunk id), body lengths (uint16), the live mask (uint8),
each starting on an 8-byte boundary.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

MAGIC = b"KNLENGTH"
VERSION = 1
# magic, version, (pad), generation, max id, live chunks, the commit's time, mean title and body lengths
_HEADER = struct.Struct("<8sIIQQQddd")
HEADER_BYTES = 64


def _stamp(snapshot) -> float:
    """The commit's time (meta last_commit), -1 when the index has none."""
    return -1.0 if snapshot.last_commit is None else float(snapshot.last_commit)


def _aligned(n: int) -> int:
    return (n + 7) // 8 * 8


class LengthsFile:
    """`<index dir>/views/lengths.bin`."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / "views" / "lengths.bin"

    def save(self, snapshot, view) -> None:
        """Write `view`'s arrays (a LexicalView of `snapshot`) in place of the file."""
        size = view.max_id + 1
        header = _HEADER.pack(
            MAGIC, VERSION, 0, snapshot.generation, view.max_id, view.n_docs, _stamp(snapshot),
            view.avg_title_len, view.avg_body_len,
        )  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".bin.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as out:
                out.write(header.ljust(HEADER_BYTES, b"\0"))
                for array, dtype in ((view.title_len, "<u2"), (view.body_len, "<u2"), (view.live_mask, "u1")):
                    data = np.ascontiguousarray(array[:size], dtype=dtype).tobytes()
                    out.write(data + b"\0" * (_aligned(len(data)) - len(data)))
                out.flush()
                os.fsync(out.fileno())  # replaced only once whole: a crash never leaves half a file
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def open(self, snapshot):
        """(title lengths, body lengths, live mask, max id, mean title length, mean body length),
        memory-mapped, if the file is whole and of `snapshot`'s commit; else None."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(HEADER_BYTES)
                magic, version, _, generation, max_id, live, stamp, avg_title, avg_body = _HEADER.unpack_from(
                    head
                )
                wanted = (MAGIC, VERSION, snapshot.generation, len(snapshot.live), _stamp(snapshot))
                if (magic, version, generation, live, stamp) != wanted:
                    return None
                size = max_id + 1
                title_at = HEADER_BYTES
                body_at = title_at + _aligned(2 * size)
                live_at = body_at + _aligned(2 * size)
                if os.fstat(f.fileno()).st_size != live_at + _aligned(size):
                    return None
                mapped = np.memmap(f, dtype=np.uint8, mode="r")
        except (OSError, struct.error, ValueError):
            return None
        title = mapped[title_at : title_at + 2 * size].view("<u2")
        body = mapped[body_at : body_at + 2 * size].view("<u2")
        live_mask = mapped[live_at : live_at + size].view(bool)
        return title, body, live_mask, int(max_id), float(avg_title), float(avg_body)
