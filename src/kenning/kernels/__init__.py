"""Numeric kernels both paths share: top-k selection (topk), sorted-unique arrays and roaring bitmaps
made from numpy (arrays), and, here, the per-posting and per-row loops in C (the extension
kenning.kernels._native, built from kenning/kernels/c/ when kenning is installed): on the query path
(postings.c, scoring.c, phrases.c) a term's weighted BM25 scores, its live postings (as stored when
nothing is to be dropped, else joined from its segments), roaring bitmaps of ids and the union of a
query's terms, MaxScore top-k weighing the postings it visits, and the chunks holding a phrase on
its words' stored positions; on the write path (rows.c) the encoding
of a segment's rows with their digests, the joining of merged segments' rows and the packing of a
range's short rows; on both (idcodec.c) a row's chunk ids packed by their gaps and read back.

The first query that meets a common term pays these over every posting (~300k at a million
chunks): in NumPy ~10 array passes for the scores, a concatenation, mask and widenings for the
postings and pyroaring's adding of values for the bitmap.
Where the module could not be built, `NATIVE` is False, these return None, and the callers compute
the same in NumPy (kenning.lexical.view, kenning.lexical.pruning, kenning.kernels.arrays);
tests/lexical/test_kernels.py holds both ways equal to the last bit.
"""

from __future__ import annotations

import numpy as np

VARIANT_CODES = {"classic": 0, "plus": 1, "l": 2}

try:
    from kenning.kernels import _native

    NATIVE = True
except ImportError:  # not compiled here
    _native = None
    NATIVE = False


def weigh(ids, tf_title, tf_body, title_len, body_len, avg_title, avg_body, params, idf, field=None):
    """idf x (title_weight x S_title + body_weight x S_body) for each posting (kenning.lexical.view
    has the formula); `field` keeps one field's part only. Chunk ids and term frequencies per
    posting (frequencies as stored: one or two bytes, or empty when all zero), lengths uint16 per
    chunk id. None without the C module."""
    if _native is None or params.variant not in VARIANT_CODES:  # bm25f: kenning.lexical.bm25 alone
        return None
    raw = _native.weigh(
        _ids(ids), _frequencies(tf_title), _frequencies(tf_body), title_len, body_len, float(avg_title),
        float(avg_body),
        VARIANT_CODES[params.variant], params.k1, params.b, params.delta, params.title_weight,
        params.body_weight, float(idf), field != "body", field != "title",
    )  # fmt: skip
    return np.frombuffer(raw, dtype=np.float64)


def _ids(ids) -> np.ndarray:
    """Chunk ids as the kernels read them: uint32 (no copy when they are already)."""
    return np.ascontiguousarray(ids, dtype=np.uint32)


def _frequencies(tf) -> np.ndarray:
    """Term frequencies as the kernels read them: one or two bytes each, as stored (others widened)."""
    tf = np.ascontiguousarray(tf)
    return tf if tf.dtype in (np.uint8, np.uint16) else tf.astype(np.uint16)


def weighing_of(title_len, body_len, avg_title, avg_body, params):
    """What `maxscore` needs to weigh postings itself: the fields' lengths by chunk id (uint16), their
    means and the BM25 parameters."""
    return (
        title_len, body_len, float(avg_title), float(avg_body), VARIANT_CODES[params.variant], params.k1,
        params.b, params.delta, params.title_weight, params.body_weight,
    )  # fmt: skip


def weighed(tf_title, tf_body, idf: float, weight: float, field=None):
    """A term's postings for `maxscore` to weigh as `weigh` does (frequencies as `weigh` takes them),
    times `weight` (the clause's; 1.0 none); `field` keeps one field's part only."""
    return (
        _frequencies(tf_title),
        _frequencies(tf_body),
        float(idf),
        float(weight),
        field != "body",
        field != "title",
    )


def roaring_bytes(ids: np.ndarray) -> bytes | None:
    """Ascending distinct uint32 ids in roaring's portable serialization, for `BitMap.deserialize`;
    None when they are not ascending or without the C module."""
    if _native is None:
        return None
    return _native.roaring_bytes(np.ascontiguousarray(ids, dtype=np.uint32))


def roaring_union_bytes(id_arrays) -> bytes | None:
    """The union of chunk id arrays (any order) in roaring's portable serialization, for
    `BitMap.deserialize`; None without the C module."""
    if _native is None:
        return None
    return _native.roaring_union_bytes(tuple(_ids(ids) for ids in id_arrays))


def intersect_ids(id_arrays) -> np.ndarray | None:
    """The uint32 ids that every one of some ascending, distinct id arrays holds, ascending (the
    shortest array first is fastest); None without the C module."""
    if _native is None:
        return None
    return np.frombuffer(_native.intersect_ids(tuple(_ids(ids) for ids in id_arrays)), dtype=np.uint32)


def top_k(ids, scores, k: int, by_id: bool = False):
    """The k best (int64 ids, float64 scores), best first, ties by ascending id; `scores` one per id
    (or with `by_id`, one per chunk id: a corpus-sized array). None without the C module."""
    if _native is None:
        return None
    ids = np.asarray(ids)
    if ids.dtype not in (np.int64, np.uint32):
        ids = ids.astype(np.int64)
    got_ids, got_scores = _native.top_k(
        np.ascontiguousarray(ids), np.ascontiguousarray(scores, dtype=np.float64), max(int(k), 0), by_id
    )
    return np.frombuffer(got_ids, dtype=np.int64), np.frombuffer(got_scores, dtype=np.float64)


def sum_scores(size: int, ids, scores, weights, matched, coordination) -> np.ndarray:
    """A query's scores over every chunk id: each term's `ids` add its `scores` times its weight, then
    with `coordination` = (a weight per `matched` id array, floor, divisor) each chunk's score is
    multiplied by floor + (1 - floor) x (its matched arrays' weights summed / divisor); what
    kenning.lexical.view.LexicalView.score computes in NumPy, to the last bit, `size` long or to the
    largest id. The array starts as zeros the system hands out lazily (as bincount's do), so chunk
    ids no posting reaches cost no memory. Call only when NATIVE."""
    matched_weights, floor, divisor = coordination if coordination is not None else ((), 1.0, 1.0)
    arguments = (
        tuple(_ids(i) for i in ids),
        tuple(np.ascontiguousarray(s, dtype=np.float64) for s in scores),
        tuple(float(w) for w in weights),
        tuple(_ids(m) for m in matched) if coordination else (),
        tuple(float(w) for w in matched_weights),
        float(floor),
        float(divisor),
    )
    out = np.zeros(int(size))
    needed = _native.sum_scores(out, *arguments)
    if needed is not None:  # an id past `size` (NumPy's bincount grows to it too)
        out = np.zeros(needed)
        _native.sum_scores(out, *arguments)
    return out


def maxscore(ids, scores, maxima, clauses: int, floor: float, k: int, allowed, weighing=None, held=None):
    """The exact top k by summed term scores times coordination (floor 1.0: none), ties by ascending
    id, with MaxScore by windows of chunk ids: (ids, scores, chunks scored, terms still essential at the
    end, each term's largest score). `ids` and `scores` hold one array per present term, in the
    query's order; a term's scores may instead be `weighed(...)`: its postings are then weighed as
    `weigh` does, only those MaxScore visits, with `weighing = weighing_of(...)`. A weighed common term
    with title hits is searched as two lists, its title hits and the rest, each with its own bound:
    the rest's is several times lower (no title weight), so it stops being essential much sooner.
    `maxima` holds each term's largest score (a (title hits, rest) pair for a split term, as the
    kernel returns them), or None to have it found (without weighing every posting);
    `allowed` is a bool mask over chunk ids or None. The coordination is floor + (1 - floor) x the
    share of the query a chunk holds: of `clauses` clauses, each present term one, or with `held` =
    (a weight per present term, their whole), that weighted share (idf coordination)."""
    if _native is None:
        return None
    maxima = tuple(m if m is None or isinstance(m, tuple) else float(m) for m in maxima)
    got_ids, got_scores, scored, essential, found = _native.maxscore(
        tuple(_ids(i) for i in ids),
        tuple(scores),
        maxima,
        clauses,
        float(floor),
        k,
        allowed,
        weighing,
        None if held is None else (tuple(float(w) for w in held[0]), float(held[1])),
    )
    return (
        np.frombuffer(got_ids, dtype=np.int64),
        np.frombuffer(got_scores, dtype=np.float64),
        scored,
        essential,
        found,
    )


def phrase_chunks(wanted: np.ndarray, words) -> np.ndarray | None:
    """The chunks among `wanted` (uint32 ids, ascending) in which every word stands at its offset from
    one common start: `words` holds (ids, tf, positions, offset) per word, one segment's and one
    field's postings and positions each, the rarest word first. uint32 ids ascending; None without
    the C module."""
    if _native is None:
        return None
    held = tuple((_ids(ids), _frequencies(tf), pos, int(offset)) for ids, tf, pos, offset in words)
    raw = _native.phrase_chunks(_ids(wanted), held)
    return np.frombuffer(raw, dtype=np.uint32)


def live_postings(parts, live: np.ndarray):
    """A term's postings joined from its segments' parts ((uint32 ids, title tf, body tf) each, tf as
    stored: uint8, uint16, or empty when all zero), in the order given, keeping the chunks `live`
    marks: (uint32 ids, uint16 title tf, uint16 body tf). None without the C module."""
    if _native is None or not all(_as_stored(p) for p in parts):
        return None
    ids, tft, tfb = _native.live_postings(tuple((p[0], p[1], p[2]) for p in parts), live)
    return np.frombuffer(ids, dtype=np.uint32), np.frombuffer(tft, np.uint16), np.frombuffer(tfb, np.uint16)


def live_as_stored(parts, live: np.ndarray):
    """A term's postings as stored, with no copy, when they lie in one segment's part and `live`
    marks every one of them (a built index before any deletion): (uint32 ids, title tf, body tf).
    None otherwise, or without the C module. At 1M chunks the copy `live_postings` makes of the
    commonest term of a query is 2 MB of new memory on a process's first query."""
    if _native is None or len(parts) != 1 or not _as_stored(parts[0]):
        return None
    ids, tft, tfb = parts[0][0], parts[0][1], parts[0][2]
    return (ids, tft, tfb) if _native.all_live(ids, live) else None


def _as_stored(part) -> bool:
    """Whether a part's columns have the widths the stores give (what the C loop reads)."""
    ids, tft, tfb = part[0], part[1], part[2]
    return ids.dtype == np.uint32 and all(
        len(tf) == 0 or tf.dtype in (np.uint8, np.uint16) for tf in (tft, tfb)
    )


def encode_rows(terms: list[str], bounds, columns, kinds) -> list[tuple[tuple, bytes]]:
    """kenning.store.compact.encode_posting_rows' per-term loop (its caller prepares the columns and
    kinds, and runs the loop itself without the C module): each row and its blake2b digest."""
    bounds = tuple(np.ascontiguousarray(b, dtype=np.int64) for b in bounds)
    kinds = tuple(np.ascontiguousarray(k, dtype=np.uint8) for k in kinds)
    return _native.encode_rows(terms, bounds, tuple(columns), kinds)


def join_rows(parts: list[list[tuple]], dead: np.ndarray) -> list[tuple[tuple, bytes]]:
    """kenning.indexing.segments.merge_range in C: each term's stored rows from the merged segments
    (each part's terms ascending) joined in segment order without the `dead` chunks' postings (ids
    ascending), narrowed and digested as kenning.store.compact.encode_posting_row does; a term left
    with no posting is dropped. Call only when NATIVE."""
    dead = np.ascontiguousarray(dead, dtype=np.uint32)
    return _native.join_rows([p if isinstance(p, list) else list(p) for p in parts], dead)


def pack_rows(encoded: list, packed_type, max_row_bytes: int, max_rows: int, max_bytes: int, row_memory: int):
    """kenning.store.sqlite.packs.pack_range's loop in C: (rows, packs, marks, checksum lines or None);
    None without the C module."""
    if _native is None:
        return None
    return _native.pack_rows(encoded, packed_type, max_row_bytes, max_rows, max_bytes, row_memory)


def pack_ids(wide: bytes) -> bytes | None:
    """Ascending chunk ids (little-endian uint32 bytes) packed by their gaps
    (kenning.store.compact.pack_ids), or the same bytes when that is no shorter; None without the C
    module."""
    return None if _native is None else _native.pack_ids(wide)


def unpack_ids(blob, most: int) -> np.ndarray | None:
    """A posting row's stored chunk ids as uint32 (ValueError for bytes kenning does not write, or
    packed ids claiming more than `most`); None without the C module."""
    return None if _native is None else np.frombuffer(_native.unpack_ids(blob, most), dtype=np.uint32)
