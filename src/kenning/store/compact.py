"""The narrowest exact encoding of each postings column, told apart by its length alone.

Most term frequencies fit a byte and most title frequencies are zero; positions inside one chunk's
field nearly always fit 16 bits. So a column is written in the narrowest type that holds every value,
and read back by comparing its length with the count it must hold (the postings' number for term
frequencies, the sum of those frequencies for positions). The wide forms are what older indexes
wrote, so they read unchanged. The values are the same whatever the width, and checksums are taken
over the values (kenning.store.checksum), so they agree across widths.

- chunk ids (ascending): packed by their gaps when that is shorter (`pack_ids`), else four bytes
  each. The packed form is a varint count, a varint first id, then the gaps less one in blocks of
  128, each a byte giving its bit width and the gaps bit-packed at that width, low bits first (as
  tantivy and Lucene pack doc ids); a packed form whose length is a multiple of four ends in one
  zero byte more, so that the length tells the two forms apart. At a million chat messages the ids
  were half of the postings (146 of 285 MB) and pack to 39 MB; at a million passages, 414 to 103 MB;
- term frequencies (counts up to 65,535): empty when all are zero, one byte each below 256, else two;
- positions: one byte each below 256 (a chat-sized chunk's every word), two below 65,536, else four
  (at a million chat messages, 88 MB of positions in two bytes each were half of that in one);
- a segment's field lengths (two bytes a chunk): zstd-compressed when that is shorter, which a
  length under two bytes a chunk tells. A new process reads every segment's lengths before its
  first query; at 1M chunks they were 4 MB, read from SQLite's page chain in ~8 ms, and are 1.3 MB
  compressed (titles' lengths nearly vanish), read in ~3 ms and decompressed in ~2.

Chunk bodies are kept compressed with zstd (level 1: ~1.8x smaller on prose and on the synthetic
benchmark corpus, written 3-5x faster than zlib at its fastest level for the same size, which was
the largest part of the writer's time while indexing) when that saves a tenth or more; a short or
incompressible body stays plain text. The column's type tells which (a BLOB is compressed, TEXT is
not), and a BLOB's first bytes tell zstd (its frame's magic number) from the zlib older kenning
wrote, so those bodies read unchanged.
"""

from __future__ import annotations

import zlib

import numpy as np

from kenning import kernels
from kenning.store.checksum import digest_of_columns
from kenning.store.errors import IndexDamaged, StorageError
from kenning.store.records import SegmentColumns, SegmentData, SegmentPostings
from kenning.store.zstd_codec import decompress_bounded, zstandard_module, zstd

MAX_TEXT_BYTES = 64 << 20  # a stored chunk text decompresses to at most this (chunks are ~8,000 characters)
PACK_TEXT_FROM = 256  # characters: shorter bodies are not worth compressing
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # how every zstd frame begins; a zlib stream begins 0x78


class DamagedText(ValueError):
    """Stored text whose zstd frame does not decompress (kenning's own name for zstd's error, so
    that catching it needs no zstd loaded)."""


# what reading damaged stored text raises (zstd frames carry a checksum of their content, as zlib
# streams do, so a flipped byte is an error rather than other text)
DAMAGED_TEXT = (zlib.error, DamagedText, UnicodeDecodeError)


def pack_text(text: str) -> str | bytes:
    if len(text) < PACK_TEXT_FROM:
        return text
    raw = text.encode("utf-8", "surrogatepass")
    packed = zstd()[0].compress(raw)
    return packed if len(packed) <= 0.9 * len(raw) else text


def unpack_text(value: str | bytes) -> str:
    """A chunk's stored text; DamagedText for a value kenning never stores (not text or bytes, a
    frame that does not decompress or would pass MAX_TEXT_BYTES)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, bytes | bytearray | memoryview):
        raise DamagedText(f"stored text is a {type(value).__name__}")
    value = bytes(value)
    if value[:4] == _ZSTD_MAGIC:
        try:
            raw = decompress_bounded(value, MAX_TEXT_BYTES)
        except zstandard_module().ZstdError as exc:
            raise DamagedText(f"stored text does not decompress: {exc}") from exc
    else:  # written by kenning before zstd
        raw = zlib.decompress(value)
    return raw.decode("utf-8", "surrogatepass")


_ID_BLOCK = 128  # gaps a packed block holds


def pack_ids(wide: bytes) -> bytes:
    """Ascending chunk ids, given as little-endian uint32 bytes, as a row stores them: packed by their
    gaps when that is shorter, else the same bytes (also when they do not ascend)."""
    packed = kernels.pack_ids(wide)
    return packed if packed is not None else _pack_ids(wide)


def _pack_ids(wide: bytes) -> bytes:
    """`pack_ids` in NumPy (kenning.kernels' C loop writes the same bytes)."""
    ids = np.frombuffer(wide, dtype="<u4").astype(np.int64)
    gaps = np.diff(ids) - 1
    if len(ids) == 0 or (len(gaps) and gaps.min() < 0):
        return bytes(wide)
    out = bytearray(_varint(len(ids)) + _varint(int(ids[0])))
    for start in range(0, len(gaps), _ID_BLOCK):
        block = gaps[start : start + _ID_BLOCK].astype(np.uint64)
        width = int(block.max()).bit_length()
        out.append(width)
        if width:
            bits = (block[:, None] >> np.arange(width, dtype=np.uint64)) & np.uint64(1)
            out += np.packbits(bits.astype(np.uint8).ravel(), bitorder="little").tobytes()
    if len(out) % 4 == 0:
        out.append(0)
    return bytes(out) if len(out) < len(wide) else bytes(wide)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(blob: bytes, at: int) -> tuple[int, int]:
    """(value, the offset after it) of the varint at `at`; IndexDamaged past the end or 32 bits."""
    value = 0
    for shift in range(0, 35, 7):
        if at >= len(blob):
            break
        byte = blob[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value >= 1 << 32:
                break
            return value, at
    raise IndexDamaged(f"{len(blob)} bytes of packed chunk ids hold no count or first id")


ID_HEAD_BYTES = 5  # a packed form's count is in its first five bytes (`id_count`)


def id_count(blob: bytes, length: int | None = None) -> int:
    """How many chunk ids a row's stored ids hold: their length says, or their packed count. `blob`
    may be their first ID_HEAD_BYTES bytes alone when `length` gives the whole length (a store reads
    no more to count a row's postings)."""
    length = len(blob) if length is None else length
    if length % 4 == 0:
        return length // 4
    count, _ = _read_varint(bytes(blob[:ID_HEAD_BYTES]), 0)
    if count == 0 or count > _ID_BLOCK * length + 1:  # every block of gaps takes a byte at least
        raise IndexDamaged(f"{length} bytes of packed chunk ids cannot hold {count} ids")
    return count


def unpack_ids(blob: bytes, frequencies: tuple[bytes, bytes]) -> np.ndarray:
    """A row's stored chunk ids as uint32, packed or four bytes each; IndexDamaged for bytes that are
    neither. `frequencies`: the row's title and body frequency columns. Every posting stands in a
    field, so one of them holds a byte or two for each: packed ids claiming more than that are
    refused before anything is allocated for them (a few bytes may claim billions)."""
    if len(blob) % 4 == 0:
        return np.frombuffer(blob, dtype="<u4").astype(np.uint32, copy=False)
    most = max(len(frequencies[0]), len(frequencies[1]))
    try:
        native = kernels.unpack_ids(blob, most)
    except ValueError as exc:
        raise IndexDamaged(str(exc)) from exc
    if native is not None:
        return native
    if id_count(blob) > most:
        raise IndexDamaged(f"packed chunk ids claim {id_count(blob)}, more than their row holds ({most})")
    return _unpack_ids(bytes(blob))


def _unpack_ids(blob: bytes) -> np.ndarray:
    """`unpack_ids` of a packed form in NumPy."""
    count = id_count(blob)
    first, at = _read_varint(blob, _read_varint(blob, 0)[1])
    gaps = [np.zeros(1, dtype=np.uint64)]
    for start in range(1, count, _ID_BLOCK):
        n = min(_ID_BLOCK, count - start)
        width = blob[at] if at < len(blob) else 255
        size = (width * n + 7) // 8
        if width > 32 or at + 1 + size > len(blob):
            raise IndexDamaged(f"{len(blob)} bytes of packed chunk ids do not hold {count} ids")
        bits = np.unpackbits(np.frombuffer(blob, np.uint8, size, at + 1), bitorder="little")
        weights = np.left_shift(np.uint64(1), np.arange(width, dtype=np.uint64))
        gaps.append(bits[: n * width].reshape(n, width).astype(np.uint64) @ weights + np.uint64(1))
        at += 1 + size
    ids = np.cumsum(np.concatenate(gaps)) + np.uint64(first)
    padded = at % 4 == 0
    if at + padded != len(blob) or (padded and blob[at] != 0) or int(ids[-1]) >= 1 << 32:
        raise IndexDamaged(f"{len(blob)} bytes of packed chunk ids do not hold {count} ascending ids")
    return ids.astype(np.uint32)


def pack_frequencies(tf) -> bytes:
    return _narrow_frequencies(np.asarray(tf, dtype="<u2").tobytes())


def _narrow_frequencies(wide: bytes) -> bytes:
    # decided on the bytes (little-endian uint16: low byte first), C-level slicing and counting: a
    # segment writes one row per term, most of them a few postings long, where numpy's per-call cost
    # would dominate
    high = wide[1::2]
    if high.count(0) != len(high):
        return wide
    low = wide[0::2]
    return b"" if low.count(0) == len(low) else low


def unpack_frequencies(blob: bytes, count: int) -> np.ndarray:
    """`count` term frequencies (one per posting) from their packed bytes."""
    if len(blob) == 0:
        return np.zeros(count, dtype=np.uint16)
    if len(blob) == count:
        return np.frombuffer(blob, dtype=np.uint8)
    if len(blob) == 2 * count:
        return np.frombuffer(blob, dtype="<u2")
    raise IndexDamaged(f"{len(blob)} bytes cannot hold {count} term frequencies")


def pack_positions(positions) -> bytes:
    positions = np.asarray(positions, dtype="<u4")
    return _narrow_positions(positions.tobytes())


def _narrow_positions(wide: bytes) -> bytes:
    """Positions given as little-endian uint32 bytes, in one byte each when every one fits, else in two
    when every one fits those."""
    high = wide[2::4] + wide[3::4]
    if high.count(0) != len(high):
        return wide
    second = wide[1::4]
    if second.count(0) == len(second):
        return wide[0::4]
    narrow = bytearray(len(wide) // 2)
    narrow[0::2], narrow[1::2] = wide[0::4], second
    return bytes(narrow)


def unpack_positions(blob: bytes, count: int) -> np.ndarray:
    """`count` positions from their packed bytes (one, two or four bytes each: the length says which)."""
    if len(blob) == count:  # (none at all included)
        return np.frombuffer(blob, dtype=np.uint8)
    if len(blob) == 2 * count:
        return np.frombuffer(blob, dtype="<u2")
    if len(blob) == 4 * count:
        return np.frombuffer(blob, dtype="<u4")
    raise IndexDamaged(f"{len(blob)} bytes cannot hold {count} positions")


# ------------------------------------------------------------------------------ posting rows
def encode_posting_row(term: str, ids, tf_title, tf_body, pos_title, pos_body) -> tuple[tuple, bytes]:
    """A posting row as the table keeps it (each column in its narrowest exact form,
    above) and its digest (kenning.store.checksum). Each column becomes bytes once, in the widths the
    digest reads, and is narrowed from those bytes: a segment encodes one row per term, and most are
    a few postings long, so per-call costs are most of the work."""
    ids = np.asarray(ids, dtype="<u4")
    tf_title, tf_body = np.asarray(tf_title, dtype="<u2"), np.asarray(tf_body, dtype="<u2")
    pos_title, pos_body = np.asarray(pos_title, dtype="<u4"), np.asarray(pos_body, dtype="<u4")
    wide = [column.tobytes() for column in (ids, tf_title, tf_body, pos_title, pos_body)]
    digest = digest_of_columns(
        term,
        list(zip((len(ids), len(tf_title), len(tf_body), len(pos_title), len(pos_body)), wide, strict=True)),
    )
    row = (
        term,
        pack_ids(wide[0]),
        _narrow_frequencies(wide[1]),
        _narrow_frequencies(wide[2]),
        _narrow_positions(wide[3]),
        _narrow_positions(wide[4]),
    )
    return row, digest


def encode_posting_row_wide_ids(
    term: str, ids, tf_title, tf_body, pos_title, pos_body
) -> tuple[tuple, bytes]:
    """`encode_posting_row` in the widths kenning wrote before schema 12 (ids four bytes each,
    positions two or four): for an index that stays at an older schema (a PostgreSQL role that may
    not upgrade it), which an older kenning may still read."""
    row, digest = encode_posting_row(term, ids, tf_title, tf_body, pos_title, pos_body)
    return (
        row[0],
        np.asarray(ids, dtype="<u4").tobytes(),
        *row[2:4],
        _positions_before_12(pos_title),
        _positions_before_12(pos_body),
    ), digest


def _positions_before_12(positions) -> bytes:
    """Positions as schema 11 stored them: two bytes each when every one fits, else four."""
    wide = np.asarray(positions, dtype="<u4")
    return wide.astype("<u2").tobytes() if wide.size == 0 or int(wide.max()) < 65536 else wide.tobytes()


def encode_posting_rows(columns: SegmentColumns) -> list[tuple[tuple, bytes]]:
    """`encode_posting_row` for every term of a segment, from its flat columns: each column is
    made bytes once in its wide and its narrow width, each term's narrowest width is read off counts
    of its values past a width's reach, and each row is slices of those bytes. A segment holds
    ~150k terms, most of them a few postings long, so the per-term array calls were most of the cost
    of encoding it."""
    p, t, b = columns.posting_bounds, columns.title_bounds, columns.body_bounds

    def wider_than(values: np.ndarray, limit: int, bounds: np.ndarray) -> np.ndarray:
        """How many of each term's values exceed `limit`."""
        over = np.concatenate(([0], np.cumsum(values > limit, dtype=np.int64)))
        return over[bounds[1:]] - over[bounds[:-1]]

    def frequencies(tf: np.ndarray):
        """(wide bytes, byte-wide bytes, per term: 0 all zero, 1 bytes, 2 wide)"""
        kinds = np.where(wider_than(tf, 255, p) > 0, 2, np.where(wider_than(tf, 0, p) > 0, 1, 0))
        return tf.astype("<u2").tobytes(), tf.astype(np.uint8).tobytes(), kinds.astype(np.uint8)

    def positions(pos: np.ndarray, bounds: np.ndarray):
        """(wide bytes, two-byte bytes, one-byte bytes, per term: the bytes its widest position needs,
        4, 2 or 1)"""
        kinds = np.where(
            wider_than(pos, 65535, bounds) > 0, 4, np.where(wider_than(pos, 255, bounds) > 0, 2, 1)
        ).astype(np.uint8)
        return pos.astype("<u4").tobytes(), pos.astype("<u2").tobytes(), pos.astype(np.uint8).tobytes(), kinds

    ids = columns.ids.astype("<u4").tobytes()
    tft_wide, tft_byte, tft_kind = frequencies(columns.tf_title)
    tfb_wide, tfb_byte, tfb_kind = frequencies(columns.tf_body)
    pt_wide, pt_short, pt_byte, pt_kind = positions(columns.pos_title, t)
    pb_wide, pb_short, pb_byte, pb_kind = positions(columns.pos_body, b)
    if kernels.NATIVE:  # the same loop in C: ~5 us a row here, most of a small segment's landing
        return kernels.encode_rows(
            list(columns.terms),
            (p, t, b),
            (
                ids,
                tft_wide,
                tft_byte,
                tfb_wide,
                tfb_byte,
                pt_wide,
                pt_short,
                pt_byte,
                pb_wide,
                pb_short,
                pb_byte,
            ),
            (tft_kind, tfb_kind, pt_kind, pb_kind),
        )
    p, t, b = p.tolist(), t.tolist(), b.tolist()
    tft_kind, tfb_kind, pt_kind, pb_kind = (k.tolist() for k in (tft_kind, tfb_kind, pt_kind, pb_kind))
    out = []
    for i, term in enumerate(columns.terms):
        p0, p1, t0, t1, b0, b1 = p[i], p[i + 1], t[i], t[i + 1], b[i], b[i + 1]
        n = p1 - p0
        row_ids = ids[4 * p0 : 4 * p1]
        wide_tft, wide_tfb = tft_wide[2 * p0 : 2 * p1], tfb_wide[2 * p0 : 2 * p1]
        wide_pt, wide_pb = pt_wide[4 * t0 : 4 * t1], pb_wide[4 * b0 : 4 * b1]
        kind = tft_kind[i]
        tft = wide_tft if kind == 2 else (tft_byte[p0:p1] if kind else b"")
        kind = tfb_kind[i]
        tfb = wide_tfb if kind == 2 else (tfb_byte[p0:p1] if kind else b"")
        pt = _in_width(pt_kind[i], wide_pt, pt_short[2 * t0 : 2 * t1], pt_byte[t0:t1])
        pb = _in_width(pb_kind[i], wide_pb, pb_short[2 * b0 : 2 * b1], pb_byte[b0:b1])
        digest = digest_of_columns(
            term, [(n, row_ids), (n, wide_tft), (n, wide_tfb), (t1 - t0, wide_pt), (b1 - b0, wide_pb)]
        )
        out.append(((term, pack_ids(row_ids), tft, tfb, pt, pb), digest))
    return out


def _in_width(kind: int, wide: bytes, short: bytes, byte: bytes) -> bytes:
    """A row's positions in the width its kind (4, 2 or 1 bytes) says."""
    return wide if kind == 4 else short if kind == 2 else byte


def join_posting_rows(raws: list[tuple]) -> tuple[tuple, bytes]:
    """One term's stored rows from several segments (in segment order, none of their chunks deleted)
    as the one row that encoding their joined arrays gives, and its digest, from the stored bytes
    alone: each row's columns widened, joined, narrowed again. A merge's common words are in every
    merged segment, and decoding, joining and encoding them as arrays was most of a worker's merge."""
    wide = [_wide_columns(raw) for raw in raws]
    ids, wide_tft, wide_tfb, wide_pt, wide_pb = (b"".join(part[c] for part in wide) for c in range(5))
    n = len(ids) // 4
    columns = [
        (n, ids),
        (n, wide_tft),
        (n, wide_tfb),
        (len(wide_pt) // 4, wide_pt),
        (len(wide_pb) // 4, wide_pb),
    ]
    row = (
        raws[0][0],
        pack_ids(ids),
        _narrow_frequencies(wide_tft),
        _narrow_frequencies(wide_tfb),
        _narrow_positions(wide_pt),
        _narrow_positions(wide_pb),
    )
    return row, digest_of_columns(raws[0][0], columns)


def _wide_columns(raw: tuple) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """A stored row's ids, frequencies and positions as little-endian bytes in the widths the digest
    reads (uint32, uint16, uint16, uint32, uint32)."""
    _term, ids, tft, tfb, pt, pb = raw
    ids = unpack_ids(ids, (tft, tfb)).astype("<u4", copy=False).tobytes()
    n = len(ids) // 4
    wide_tft, wide_tfb = _wide_frequencies(tft, n), _wide_frequencies(tfb, n)
    return ids, wide_tft, wide_tfb, _wide_positions(pt, wide_tft), _wide_positions(pb, wide_tfb)


def _wide_frequencies(blob: bytes, count: int) -> bytes:
    """Stored term frequencies as little-endian uint16 bytes."""
    if len(blob) == 2 * count:
        return bytes(blob)
    if not blob:
        return bytes(2 * count)
    if len(blob) != count:
        raise IndexDamaged(f"{len(blob)} bytes cannot hold {count} term frequencies")
    wide = bytearray(2 * count)
    wide[0::2] = blob
    return bytes(wide)


def _total(wide_tf: bytes) -> int:
    """The sum of uint16 frequencies given as bytes (numpy past a few values, where it is faster)."""
    if len(wide_tf) > 128:
        return int(np.frombuffer(wide_tf, dtype="<u2").sum(dtype=np.int64))
    return sum(memoryview(wide_tf).cast("H")) if wide_tf else 0


def _wide_positions(blob: bytes, wide_tf: bytes) -> bytes:
    """Stored positions as little-endian uint32 bytes (`wide_tf`: the field's frequencies, whose sum
    is their count)."""
    count = _total(wide_tf)
    if len(blob) == 4 * count:
        return bytes(blob)
    wide = bytearray(4 * count)
    if len(blob) == count:
        wide[0::4] = blob
    elif len(blob) == 2 * count:
        wide[0::4], wide[1::4] = blob[0::2], blob[1::2]
    else:
        raise IndexDamaged(f"{len(blob)} bytes cannot hold {count} positions")
    return bytes(wide)


def decode_posting_row(raw: tuple) -> SegmentPostings:
    """A posting row as the table keeps it, back to its arrays."""
    term, ids, tft, tfb, pt, pb = raw
    ids = unpack_ids(ids, (tft, tfb))
    n = len(ids)
    tf_title, tf_body = unpack_frequencies(tft, n), unpack_frequencies(tfb, n)
    return SegmentPostings(
        term,
        ids,
        tf_title,
        tf_body,
        unpack_positions(pt, int(tf_title.sum(dtype=np.int64))),
        unpack_positions(pb, int(tf_body.sum(dtype=np.int64))),
    )


def pack_doc_ids(doc_ids: np.ndarray) -> bytes:
    """A segment's chunk ids (ascending uint32): the first and the last when they run without a gap
    (a build's segments and merges with nothing deleted), else every one. A new process reads a
    segment's ids to open it: at 1M chunks the explicit form was 4 MB and a third of the time to read
    the segment. The two forms are told apart by length (`decode_segment`); two ids in a row are the
    same eight bytes in either form."""
    n = len(doc_ids)
    if n > 2 and int(doc_ids[-1]) - int(doc_ids[0]) == n - 1:
        return np.array([doc_ids[0], doc_ids[-1]], dtype="<u4").tobytes()
    return np.asarray(doc_ids, dtype="<u4").tobytes()


def _stored_ids(blob: bytes, count: int) -> tuple[int, np.ndarray | None]:
    """(first id, None) for ids stored as their ends, else (0, every id)."""
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise IndexDamaged(f"a segment's chunk ids are a {type(blob).__name__}")
    if len(blob) == 8 and count != 2:
        first, last = np.frombuffer(blob, dtype="<u4").tolist()
        if last - first + 1 != count:
            raise IndexDamaged(f"a segment's id range {first}-{last} does not hold its {count} chunks")
        return first, None
    if len(blob) != 4 * count:
        raise IndexDamaged(f"a segment's {len(blob)} bytes of chunk ids do not hold its {count} chunks")
    ids = np.frombuffer(blob, dtype="<u4").astype(np.uint32, copy=False)
    if count > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise IndexDamaged("a segment's chunk ids are not ascending")
    return 0, ids


def decode_segment(segment_id: int, row: tuple | None) -> SegmentData:
    """A segment's stored columns (its number of chunks, doc ids, title and body lengths); the
    lengths stay packed until asked for."""
    if row is None:
        raise StorageError(f"segment {segment_id} vanished (index changed during read)")
    count = row[0]
    if not isinstance(count, int) or not 0 <= count < 1 << 32:
        raise IndexDamaged(f"segment {segment_id} claims {count!r} chunks")
    first, explicit = _stored_ids(row[1], count)
    for lengths in row[2:4]:
        if not isinstance(lengths, bytes | bytearray | memoryview):
            raise IndexDamaged(f"segment {segment_id}'s lengths are a {type(lengths).__name__}")
    return SegmentData(
        id=segment_id,
        n_docs=count,
        packed_lengths=(bytes(row[2]), bytes(row[3])),
        stored_ids=explicit,
        first_id=first,
    )
