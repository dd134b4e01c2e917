"""The lexical view's corpus-wide arrays, kept beside a folder index as one file that a new
process memory-maps instead of building them.

BM25 needs every chunk's title and body length and the live set, as arrays by chunk id. Building
them from the segments' stored lengths means reading and decoding every chunk's lengths and filling
three corpus-sized arrays, a large share of a new process's first query on a big index. The writer
saves them after each write that changes the live set (`views/lengths.bin`, replaced atomically and
flushed to disk); a reader whose segments and live set the file was made from maps it (nothing is
read until a query's candidates touch their pages), and any other reader (a write not saved yet, a
damaged file, a server store with no folder) builds them from the segments.

The arrays depend only on the segments and the live set, so the file names those (a digest of the
segments' ids and content checksums and of the live set): a commit that changes neither (an embed
run's, a glossary edit) leaves it valid, and another index's file is never taken for this one's.

The index folder may come from anyone, and a file whose header names this index's digest (anyone can
compute it) could still claim four billion chunk ids. So the file is used only when this user's
kenning wrote it: `lengths.seal` beside it holds the seal (kenning.sidefiles.seal) of the file and its
header; a copied, planted or rewritten file is not used, and the arrays are built from the segments.

Layout: a 64-byte header (magic, version, largest chunk id, live chunks, the digest, mean title and
body lengths), then title lengths (uint16 by chunk id), body lengths (uint16), the live mask (uint8),
each starting on an 8-byte boundary.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyroaring import BitMap

from kenning.sidefiles.seal import is_sealed, read_regular, seal
from kenning.store.errors import IndexDamaged, decoding

MAGIC = b"KNLENGTH"
VERSION = 1
# magic, version, (pad), max id, live chunks, what the arrays were made from, mean title and body lengths
_HEADER = struct.Struct("<8sIIQQ16sdd")
HEADER_BYTES = 64


def made_from(store, snapshot) -> bytes:
    """A digest of what a view's arrays depend on: the segments (ids and content checksums, in
    order) and the live set."""
    checksums = store.segment_checksums()
    segments = ";".join(f"{sid}:{checksums.get(sid, '')}" for sid in snapshot.segment_ids)
    return hashlib.sha256(segments.encode() + b"\0" + snapshot.live.serialize()).digest()[:16]


def _aligned(n: int) -> int:
    return (n + 7) // 8 * 8


class LengthsFile:
    """`<index dir>/views/lengths.bin`."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / "views" / "lengths.bin"
        self.seal_path = self.path.with_name("lengths.seal")

    def save(self, store, snapshot, view: LengthArrays) -> None:
        """Write `view`'s arrays (built_lengths of `snapshot`, or a LexicalView's) in place of the file."""
        size = view.max_id + 1
        header = _HEADER.pack(
            MAGIC, VERSION, 0, view.max_id, len(snapshot.live), made_from(store, snapshot),
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
            self.seal_path.unlink(missing_ok=True)  # no seal names the new file until it is whole
            os.replace(tmp, self.path)
            sealed = seal(self.path, header.hex())
            if sealed is not None:
                tmp_seal = self.seal_path.with_suffix(f".{os.getpid()}.tmp")
                tmp_seal.write_text(sealed)
                os.replace(tmp_seal, self.seal_path)
        finally:
            tmp.unlink(missing_ok=True)

    def open(self, store, snapshot):
        """(title lengths, body lengths, live mask, max id, mean title length, mean body length),
        memory-mapped, if the file is whole and made from `snapshot`'s segments and live set; else
        None. Call inside store.reading()."""
        given = read_regular(self.seal_path, 256)
        if given is None:
            return None  # not sealed by this user's kenning: built from the segments instead
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                head = f.read(HEADER_BYTES)
                if not is_sealed(self.path, head[: _HEADER.size].hex(), given.decode("ascii", "replace")):
                    return None
                magic, version, _, max_id, live, digest, avg_title, avg_body = _HEADER.unpack_from(head)
                if (magic, version, live) != (MAGIC, VERSION, len(snapshot.live)):
                    return None
                if digest != made_from(store, snapshot):
                    return None
                size = max_id + 1
                title_at = HEADER_BYTES
                body_at = title_at + _aligned(2 * size)
                live_at = body_at + _aligned(2 * size)
                if os.fstat(f.fileno()).st_size != live_at + _aligned(size):
                    return None
                # a plain array over the mapping: numpy's memmap subclass wraps every slice and index
                # taken of it in Python, a few microseconds a time on a search's hot path
                mapped = np.memmap(f, dtype=np.uint8, mode="r").view(np.ndarray)
        except (OSError, struct.error, ValueError):
            return None
        title = mapped[title_at : title_at + 2 * size].view("<u2")
        body = mapped[body_at : body_at + 2 * size].view("<u2")
        live_mask = mapped[live_at : live_at + size].view(bool)
        return title, body, live_mask, int(max_id), float(avg_title), float(avg_body)


@dataclass
class LengthArrays:
    """Field lengths (uint16) and the live mask by chunk id, and the mean lengths over live chunks."""

    title_len: np.ndarray
    body_len: np.ndarray
    live_mask: np.ndarray
    max_id: int
    avg_title_len: float
    avg_body_len: float


@decoding("the segments and the live set")
def build_lengths(snapshot, load_segment) -> LengthArrays:
    """The arrays of `snapshot`, from its segments (`load_segment(id)` gives one): what a reader
    builds when no saved file serves, and what the writer saves."""
    live, n_docs = snapshot.live, len(snapshot.live)
    segments = [load_segment(s) for s in snapshot.segment_ids]
    places = [seg.place for seg in segments]
    max_id = max((_last_id(place) for place in places), default=0)
    if n_docs and live.max() > max_id:  # a live chunk no segment holds
        raise IndexDamaged(f"the live set names chunk {live.max()}, past every segment's")
    # field lengths as stored (uint16, a quarter of float64's bytes to fill on a view's first query);
    # a segment whose ids run without a gap (a build's, before any deletion) is copied into place,
    # not scattered id by id; and when every live chunk lies in such segments, the live mask and mean
    # lengths come from the segments less their few deleted chunks, instead of reading the live set
    # whole (most of a new process's first view on a large index)
    title_len = np.zeros(max_id + 1, dtype=np.uint16)
    body_len = np.zeros(max_id + 1, dtype=np.uint16)
    for seg, place in zip(segments, places, strict=True):
        if isinstance(place, slice):  # decoded straight into place
            seg.lengths_into(title_len[place], body_len[place])
        else:
            title_len[place] = seg.title_lens
            body_len[place] = seg.body_lens
    live_mask = np.zeros(max_id + 1, dtype=bool)
    dead = _dead_ids(places, live) if n_docs else None
    if dead is not None:
        for place in places:
            live_mask[place] = True
        live_mask[dead] = False
        # (every id of a segment is in place, and ids in no segment hold zero)
        title_total = int(title_len.sum(dtype=np.int64)) - int(title_len[dead].sum(dtype=np.int64))
        body_total = int(body_len.sum(dtype=np.int64)) - int(body_len[dead].sum(dtype=np.int64))
        avg_title, avg_body = title_total / n_docs, body_total / n_docs
    elif n_docs:
        live_ids = np.frombuffer(live.to_array(), dtype=np.uint32)
        live_mask[live_ids] = True
        avg_title = int(title_len[live_ids].sum(dtype=np.int64)) / n_docs
        avg_body = int(body_len[live_ids].sum(dtype=np.int64)) / n_docs
    else:
        avg_title = avg_body = 0.0
    return LengthArrays(title_len, body_len, live_mask, max_id, avg_title, avg_body)


def _last_id(place: slice | np.ndarray) -> int:
    """The largest chunk id at a segment's place (0 for an empty segment)."""
    if isinstance(place, slice):
        return max(place.stop - 1, 0)
    return int(place[-1]) if len(place) else 0


def _dead_ids(places: list, live: BitMap) -> np.ndarray | None:
    """The deleted chunks of gapless segments at `places` (those not in `live`), when every live
    chunk lies in one of them; None when a segment's ids have gaps (then the caller reads `live`
    whole). A re-index deletes a few chunks of a large segment: counting from the few costs what
    they are, where reading the live set whole costs what the index is."""
    if not all(isinstance(place, slice) for place in places):
        return None
    held = BitMap()
    for place in places:
        held.add_range(place.start, place.stop)
    if not live.issubset(held):
        return None
    return np.frombuffer((held - live).to_array(), dtype=np.uint32)
