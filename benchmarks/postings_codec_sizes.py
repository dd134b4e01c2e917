"""What the posting ids of a built kenning index would take in compact encodings, the measure behind
the next storage step (issue 15: compact postings).

Ids are stored as four-byte integers. This reads every row of the `postings` table (short rows kept in
posting packs are left out) and counts the bytes of each term's ids as deltas in LEB128 varints and as
deltas bit-packed in blocks of 128 (each block at its own width, one byte saying which), and prints
them beside the raw size, the term frequencies and the positions.

    python benchmarks/postings_codec_sizes.py /tmp/kenning-scale/chunks-1000000/index-kenning
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import numpy as np

BLOCK = 128


def bits_needed(values: np.ndarray) -> np.ndarray:
    """Bits to write each non-negative value (at least one)."""
    return np.maximum(1, np.ceil(np.log2(values.astype(np.float64) + 1))).astype(np.int64)


def packed_bytes(bits: np.ndarray) -> int:
    """Bytes of the values bit-packed in blocks of BLOCK, each at its widest value's width, plus a
    width byte per block."""
    n = len(bits)
    blocks = (n + BLOCK - 1) // BLOCK
    padded = np.zeros(blocks * BLOCK, dtype=np.int64)
    padded[:n] = bits
    widths = padded.reshape(blocks, BLOCK).max(axis=1)
    counts = np.full(blocks, BLOCK)
    counts[-1] = n - (blocks - 1) * BLOCK
    return int(np.sum(1 + (widths * counts + 7) // 8))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", type=Path, help="a kenning index folder (holding index.db)")
    args = ap.parse_args()
    db = sqlite3.connect(f"file:{args.index / 'index.db'}?mode=ro", uri=True)
    rows = postings = raw = varint = packed = frequencies = positions = 0
    for ids, tf_title, tf_body, pos_title, pos_body in db.execute(
        "SELECT ids, tf_title, tf_body, pos_title, pos_body FROM postings"
    ):
        deltas = np.diff(np.frombuffer(ids, dtype="<u4").astype(np.int64), prepend=0)
        bits = bits_needed(deltas)
        rows += 1
        postings += len(deltas)
        raw += len(ids)
        varint += int(np.sum((bits + 6) // 7))
        packed += packed_bytes(bits)
        frequencies += len(tf_title) + len(tf_body)
        positions += len(pos_title) + len(pos_body)
    mb = 1e6
    print(f"{rows:,} rows, {postings:,} postings (packed short rows not counted)")
    print(f"ids raw {raw / mb:.0f} MB (4 B a posting)")
    print(f"ids as delta LEB128 varints {varint / mb:.0f} MB ({varint / postings:.2f} B a posting)")
    print(f"ids as deltas bit-packed by {BLOCK} {packed / mb:.0f} MB ({packed / postings:.2f} B a posting)")
    print(f"term frequencies {frequencies / mb:.0f} MB, positions {positions / mb:.0f} MB")


if __name__ == "__main__":
    main()
