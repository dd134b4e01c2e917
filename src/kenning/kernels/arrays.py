"""Sorted-unique helpers for the query path, and roaring bitmaps made from numpy arrays.

`np.unique` asks `np.ma.is_masked` about its input, and in NumPy 2 that first touch imports the whole
`numpy.ma` package, which costs a new process's first query more than the query itself on a mid-sized
index. These do the same on plain arrays with a sort and a comparison.
"""

from __future__ import annotations

from array import array

import numpy as np
from pyroaring import BitMap

from kenning.kernels import roaring_bytes, roaring_union_bytes


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending (what `np.unique(values)` returns for a plain array)."""
    ordered = np.sort(np.asarray(values), kind="stable")
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """`np.argsort(keys, kind="stable")` for non-negative integer keys. Below 2^32 (keys and count),
    each key and its place are sorted as one 64-bit integer: the places break ties in order, and
    numpy sorts plain integers with SIMD, where its stable sort of 32- or 64-bit keys is a timsort
    (several times slower on a segment's tokens)."""
    keys = np.asarray(keys)
    n = len(keys)
    if n == 0 or n >= 1 << 32 or int(keys.min()) < 0 or int(keys.max()) >= 1 << 32:
        return np.argsort(keys, kind="stable")
    pairs = keys.astype(np.uint64) << np.uint64(32)
    pairs |= np.arange(n, dtype=np.uint64)
    pairs.sort()
    pairs &= np.uint64(0xFFFFFFFF)
    return pairs.view(np.int64)


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values, ascending, and how often each occurs (`np.unique(..., return_counts=True)`)."""
    ordered = np.sort(np.asarray(values), kind="stable")
    if len(ordered) == 0:
        return ordered, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, len(ordered)))
    return ordered[starts], counts


def bitmap_of(ids: np.ndarray) -> BitMap:
    """A roaring bitmap of chunk ids. Ascending distinct ids (a term's postings) are serialized in C
    and read back with `BitMap.deserialize`, a copy (kenning.kernels): ~0.3 against ~2.2 ms for 320k
    ids. Otherwise pyroaring reads an `array.array` in one pass (a numpy array value by value: 15 ms),
    which made turning a common term's postings into its bitmap the largest cost of a lexical query
    on 1M chunks."""
    ids = np.ascontiguousarray(ids, dtype=np.uint32)
    packed = roaring_bytes(ids)
    if packed is not None:
        return BitMap.deserialize(packed)
    values = array("I")
    values.frombytes(ids.tobytes())
    return BitMap(values)


def union_of(id_arrays: list[np.ndarray]) -> BitMap:
    """The roaring union of several id arrays (a query's candidates from its terms' postings), made in
    one pass over them in C without a bitmap for each: at 1M chunks a query's terms' own bitmaps cost
    ~1 ms on its first sight of them. Without the C module, the union of their bitmaps."""
    packed = roaring_union_bytes(id_arrays)
    if packed is not None:
        return BitMap.deserialize(packed)
    return BitMap.union(*(bitmap_of(ids) for ids in id_arrays)) if id_arrays else BitMap()
