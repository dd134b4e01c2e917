"""The narrowest exact encoding of each postings column, told apart by its length alone.

Most term frequencies fit a byte and most title frequencies are zero; positions inside one chunk's
field nearly always fit 16 bits. So a column is written in the narrowest type that holds every value,
and read back by comparing its length with the count it must hold (the postings' number for term
frequencies, the sum of those frequencies for positions). The wide forms are what older indexes
wrote, so they read unchanged. The values are the same whatever the width, and checksums are taken
over the values (kenning.store.checksum), so they agree across widths.

- term frequencies (counts up to 65,535): empty when all are zero, one byte each below 256, else two;
- positions: two bytes each below 65,536, else four.
"""

from __future__ import annotations

import numpy as np


def pack_frequencies(tf) -> bytes:
    tf = np.asarray(tf, dtype=np.uint16)
    if not tf.any():
        return b""
    return (tf.astype(np.uint8) if tf.max() < 256 else tf).tobytes()


def unpack_frequencies(blob: bytes, count: int) -> np.ndarray:
    """`count` term frequencies (one per posting) from their packed bytes."""
    if len(blob) == 0:
        return np.zeros(count, dtype=np.uint16)
    if len(blob) == count:
        return np.frombuffer(blob, dtype=np.uint8)
    if len(blob) == 2 * count:
        return np.frombuffer(blob, dtype=np.uint16)
    raise ValueError(f"{len(blob)} bytes cannot hold {count} term frequencies")


def pack_positions(positions) -> bytes:
    positions = np.asarray(positions, dtype=np.uint32)
    if len(positions) and positions.max() >= 65536:
        return positions.tobytes()
    return positions.astype(np.uint16).tobytes()


def unpack_positions(blob: bytes, count: int) -> np.ndarray:
    """`count` positions from their packed bytes."""
    if len(blob) == 2 * count:
        return np.frombuffer(blob, dtype=np.uint16)
    if len(blob) == 4 * count:
        return np.frombuffer(blob, dtype=np.uint32)
    raise ValueError(f"{len(blob)} bytes cannot hold {count} positions")
