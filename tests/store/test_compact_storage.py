"""Postings columns in their narrowest exact width read back as the same values, and an index whose
rows were written wide (as older kenning wrote them) searches and verifies exactly as before."""

import sqlite3

import numpy as np
import pytest
import zstandard

from kenning import Index, kernels
from kenning.store import compact
from kenning.store.checksum import posting_digest
from kenning.store.compact import (
    decode_posting_row,
    decode_segment,
    encode_posting_row,
    encode_posting_rows,
    join_posting_rows,
    pack_doc_ids,
    pack_frequencies,
    pack_positions,
    unpack_frequencies,
    unpack_ids,
    unpack_positions,
)
from kenning.store.errors import IndexDamaged, StorageError
from kenning.store.field_lengths import pack_lengths, unpack_lengths, unpack_lengths_into
from kenning.store.records import SegmentColumns
from kenning.store.sqlite import packs
from kenning.store.sqlite.connection import DB_NAME
from kenning.surfaces.cli import main


@pytest.mark.parametrize("high", [0, 1, 255, 256, 65535])
def test_frequencies_round_trip_in_their_narrowest_width(high):
    rng = np.random.default_rng(high)
    tf = rng.integers(0, high + 1, size=200).astype(np.uint16)
    blob = pack_frequencies(tf)
    assert len(blob) == (0 if high == 0 else 200 if high < 256 else 400)
    assert unpack_frequencies(blob, 200).tolist() == tf.tolist()
    assert unpack_frequencies(tf.tobytes(), 200).tolist() == tf.tolist()  # the wide form
    with pytest.raises(ValueError):
        unpack_frequencies(b"\x01\x02\x03", 200)


@pytest.mark.parametrize("high", [0, 255, 256, 65535, 65536, 2**32 - 1])
def test_positions_round_trip_in_their_narrowest_width(high):
    positions = np.array([0, high // 2, high], dtype=np.uint32)
    blob = pack_positions(positions)
    assert len(blob) == (3 if high < 256 else 6 if high < 65536 else 12)
    assert unpack_positions(blob, 3).tolist() == positions.tolist()
    assert unpack_positions(positions.tobytes(), 3).tolist() == positions.tolist()  # the wide form
    assert unpack_positions(positions.astype("<u2").tobytes(), 3).tolist() == positions.astype("<u2").tolist()
    with pytest.raises(IndexDamaged):
        unpack_positions(blob[:-1], 3)


def _ascending(rng, n: int, spread: int) -> np.ndarray:
    """`n` ascending chunk ids whose gaps reach up to `spread`, below 2**32."""
    gaps = rng.integers(1, spread + 1, size=n, dtype=np.uint64)
    ids = np.cumsum(gaps) + np.uint64(rng.integers(0, 1000))
    return ids[ids < 2**32].astype("<u4")


@pytest.mark.parametrize("spread", [1, 2, 300, 70_000, 2**24])
@pytest.mark.parametrize("n", [1, 2, 3, 127, 128, 129, 257, 2000])
def test_chunk_ids_pack_by_their_gaps_the_same_in_c_and_numpy_and_read_back(n, spread):
    ids = _ascending(np.random.default_rng(n * 7 + spread), n, spread)
    wide = ids.tobytes()
    packed = compact.pack_ids(wide)
    if kernels.NATIVE:
        assert packed == compact._pack_ids(wide)  # the C loop writes NumPy's bytes
    if packed != wide:
        assert len(packed) < len(wide) and len(packed) % 4 != 0  # told apart by length alone
    else:
        assert spread >= 70_000 or n == 1  # only wide gaps (or one id) leave ids as they were
    room = (b"", bytes(len(ids)))  # the row's frequencies: a byte a posting, in the body
    assert compact.unpack_ids(packed, room).tolist() == ids.tolist()
    if packed != wide:
        assert compact._unpack_ids(packed).tolist() == ids.tolist()
    assert compact.id_count(packed) == len(ids) == compact.id_count(packed[:5], len(packed))


def test_consecutive_ids_pack_to_a_few_bytes_and_ids_out_of_order_stay_wide():
    packed = compact.pack_ids(np.arange(10, 100_010, dtype="<u4").tobytes())
    # the count, the first id, then 782 blocks of gaps of width 0 (a byte each, nothing after it)
    assert packed == compact._varint(100_000) + bytes([10]) + bytes(782)
    assert compact.unpack_ids(packed, (bytes(100_000), b"")).tolist() == list(range(10, 100_010))
    unordered = np.array([5, 3, 9], dtype="<u4").tobytes()
    assert compact.pack_ids(unordered) == unordered
    repeated = np.array([3, 3, 9, 12, 20, 40], dtype="<u4").tobytes()
    assert compact.pack_ids(repeated) == repeated


def _damaged_forms() -> dict[str, bytes]:
    good = compact._pack_ids(np.arange(0, 3000, 7, dtype="<u4").tobytes())
    width_at = len(compact._varint(429)) + 1  # the first block's width byte, after count and first id
    padded = next(
        p
        for k in range(2, 400)
        if len(p := compact._pack_ids(np.arange(0, 3 * k, 3, dtype="<u4").tobytes())) % 4 == 1
    )
    return {
        "cut short": good[:-3] if len(good[:-3]) % 4 else good[:-2],
        "a width past 32": good[:width_at] + bytes([33]) + good[width_at + 1 :],
        "a count the bytes cannot hold": compact._varint(2**31) + b"\x01\x00",
        "no count": b"\xff\xff\xff",
        "a pad byte that is not zero": padded[:-1] + b"\x07",
        "bytes after the ids": good + b"\x00\x00\x00\x00",
        "ids past 2**32": compact._varint(2) + compact._varint(2**32 - 1) + b"\x00",
    }


@pytest.mark.parametrize("case", list(_damaged_forms()))
def test_packed_ids_kenning_did_not_write_are_damaged_in_c_and_numpy(case):
    blob = _damaged_forms()[case]
    assert len(blob) % 4 != 0
    with pytest.raises(IndexDamaged):
        compact.unpack_ids(blob, (bytes(128 * len(blob)), b""))
    with pytest.raises(IndexDamaged):
        compact._unpack_ids(blob)


@pytest.mark.parametrize("native", [True, False])
def test_packed_ids_claiming_more_postings_than_their_row_holds_are_refused_before_they_are_read(
    native, monkeypatch
):
    """A megabyte of width-0 blocks is a valid form of 2**27 ids (512 MB read back): the row's
    frequencies must hold a byte a posting, so a row whose frequencies do not is damaged, and
    nothing is allocated for what it claims."""
    if not native:
        monkeypatch.setattr(kernels, "_native", None)
    bomb = compact._varint(2**27 + 1) + compact._varint(0) + bytes(2**20)
    for room in [(b"", b""), (b"\x01" * 1000, b"\x01\x02" * 1000)]:
        with pytest.raises(IndexDamaged, match="more than their row holds"):
            compact.unpack_ids(bomb, room)
    small = compact.pack_ids(np.arange(5, 505, dtype="<u4").tobytes())
    assert compact.unpack_ids(small, (b"", bytes(500))).tolist() == list(range(5, 505))
    with pytest.raises(IndexDamaged):
        compact.unpack_ids(small, (b"", bytes(499)))


QUERIES = ["keys", '"signing keys"', "title:backups restore", "nightly cold"]


def _two_notes(tmp_path, rows_only: bool = False):
    """A folder of two notes and its index: (folder, index path). `rows_only`: written as kenning
    before posting packs wrote it, every term a row of `postings` (later writes pack again)."""
    if rows_only:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(packs, "PACK_ROW_BYTES", -1)
            return _two_notes(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Keys\n\nrotate the signing keys every quarter, keys keys\n")
    (docs / "b.md").write_text("# Backups\n\nrestore the nightly backup from cold storage\n")
    path = tmp_path / "ix"
    with Index(path) as ix:
        ix.add([docs])
    return docs, path


def _rankings(path):
    with Index(path) as ix:
        return [[(h.id, h.score) for h in ix.search(q, mode="lexical").hits] for q in QUERIES]


def test_an_index_written_wide_searches_and_verifies_the_same(tmp_path, capsys):
    docs, path = _two_notes(tmp_path, rows_only=True)
    before = _rankings(path)
    with sqlite3.connect(path / DB_NAME) as conn:
        rows = conn.execute(
            "SELECT segment_id, term, ids, tf_title, tf_body, pos_title, pos_body FROM postings"
        )
        for seg, term, ids, tft, tfb, pt, pb in rows.fetchall():
            ids = unpack_ids(ids, (tft, tfb))
            n = len(ids)
            wide_tft, wide_tfb = unpack_frequencies(tft, n), unpack_frequencies(tfb, n)
            conn.execute(
                "UPDATE postings SET ids=?, tf_title=?, tf_body=?, pos_title=?, pos_body=?"
                " WHERE segment_id=? AND term=?",
                (
                    ids.astype("<u4").tobytes(),
                    wide_tft.astype(np.uint16).tobytes(),
                    wide_tfb.astype(np.uint16).tobytes(),
                    unpack_positions(pt, int(wide_tft.sum())).astype(np.uint32).tobytes(),
                    unpack_positions(pb, int(wide_tfb.sum())).astype(np.uint32).tobytes(),
                    seg,
                    term,
                ),
            )
        widened = conn.execute("SELECT length(tf_body) FROM postings WHERE term='key'").fetchone()[0]
        packed = conn.execute("SELECT count(*) FROM postings WHERE length(ids) % 4 != 0").fetchone()[0]
    assert widened == 2  # one posting, two bytes: the wide form is really what is read below
    assert packed == 0
    assert _rankings(path) == before
    assert main(["verify", "--index", str(path)]) == 0, capsys.readouterr().out


def test_the_encoder_digests_what_the_checksum_reads(tmp_path):
    """encode_posting_row digests the bytes it packs from; `kenning verify` digests the values it
    reads back. The two must agree for every width a column can take."""
    rng = np.random.default_rng(7)
    for n, high in [(0, 1), (1, 1), (5, 300), (300, 70_000), (40, 2), (7, 256), (50, 65_536)]:
        ids = np.sort(rng.choice(10**6, n, replace=False)).astype(np.uint32)
        tft = rng.integers(0, min(high, 65535), n).astype(np.uint16)
        tfb = rng.integers(0, 3, n).astype(np.uint16)
        pt = rng.integers(0, high * 2, int(tft.sum())).astype(np.uint32)
        pb = rng.integers(0, 100, int(tfb.sum())).astype(np.uint32)
        row, digest = encode_posting_row("term", ids, tft, tfb, pt, pb)
        assert digest == posting_digest("term", ids, tft, tfb, pt, pb)
        back = decode_posting_row(row)
        for got, want in zip(back[1:], (ids, tft, tfb, pt, pb), strict=True):
            assert got.tolist() == want.tolist()
        # a merge restates the rows it carries over from their bytes: the same row and digest, from
        # the narrow form and from the wide form older kenning wrote
        wide = ("term", ids.tobytes(), tft.tobytes(), tfb.tobytes(), pt.tobytes(), pb.tobytes())
        assert join_posting_rows([row]) == (row, digest) == join_posting_rows([wide])


def test_rows_joined_from_their_bytes_are_the_rows_encoded_from_joined_arrays():
    """A merge with nothing deleted joins a term's rows from several segments on their bytes
    (join_posting_rows); the row and digest are those of encoding the joined arrays, whatever widths
    the parts were stored in (narrow, wide as older kenning wrote, empty title frequencies)."""
    rng = np.random.default_rng(5)
    for widths in [(1, 1, 1), (300, 2, 1), (1, 70_000, 1), (0, 1, 65_536), (2, 2, 2)]:
        parts, stored = [], []
        start = 0
        for high in widths:
            n = int(rng.integers(1, 40))
            ids = (start + np.sort(rng.choice(1000, n, replace=False))).astype(np.uint32)
            start += 1000
            tft = rng.integers(0, high, n).astype(np.uint16) if high else np.zeros(n, np.uint16)
            tfb = rng.integers(1, 3, n).astype(np.uint16)
            pt = rng.integers(0, max(2, high * 2), int(tft.sum())).astype(np.uint32)
            pb = rng.integers(0, 50, int(tfb.sum())).astype(np.uint32)
            parts.append((ids, tft, tfb, pt, pb))
            row, _ = encode_posting_row("t", ids, tft, tfb, pt, pb)
            wide = ("t", ids.tobytes(), tft.tobytes(), tfb.tobytes(), pt.tobytes(), pb.tobytes())
            stored.append(row if len(stored) % 2 == 0 else wide)
        joined = [np.concatenate([p[c] for p in parts]) for c in range(5)]
        assert join_posting_rows(stored) == encode_posting_row("t", *joined)
        for part, one in zip(parts, stored, strict=True):  # a term of one segment: kept or re-narrowed
            assert join_posting_rows([one]) == encode_posting_row("t", *part)


def test_a_segment_encoded_at_once_is_each_row_encoded_alone():
    """encode_posting_rows (a new segment's rows from its flat columns) gives every term the row and
    digest encode_posting_row gives it alone, whatever width each column of each term needs."""
    rng = np.random.default_rng(11)
    terms, parts = [], []
    shapes = [(1, 1, 1), (3, 0, 2), (4, 300, 2), (200, 2, 70_000), (6, 256, 65_536), (2, 1, 65_535)]
    for i, (n, high, far) in enumerate(shapes * 4):
        ids = np.sort(rng.choice(10**6, n, replace=False)).astype(np.uint32)
        tft = rng.integers(0, high, n).astype(np.uint16) if high else np.zeros(n, np.uint16)
        tfb = rng.integers(1, 4, n).astype(np.uint16)
        pt = rng.integers(0, far, int(tft.sum())).astype(np.uint32)
        pb = rng.integers(0, far, int(tfb.sum())).astype(np.uint32)
        terms.append(f"t{i:02d}\u00e9")
        parts.append((ids, tft, tfb, pt, pb))

    def bounds(column: int) -> np.ndarray:
        return np.concatenate(([0], np.cumsum([len(p[column]) for p in parts])))

    columns = SegmentColumns(
        terms,
        *(np.concatenate([p[c] for p in parts]) for c in range(5)),
        bounds(0),
        bounds(3),
        bounds(4),
    )
    alone = [encode_posting_row(term, *p) for term, p in zip(terms, parts, strict=True)]
    assert encode_posting_rows(columns) == alone
    assert [tuple(np.asarray(c).tolist() for c in r[1:]) for r in columns.rows()] == [
        tuple(c.tolist() for c in p) for p in parts
    ]
    assert {len(row[4]) % 4 for row, _ in alone} >= {0, 2}  # both position widths were made


def test_an_index_with_the_older_without_rowid_postings_table_reads_and_writes_the_same(tmp_path, capsys):
    """New indexes keep postings in a rowid table (faster to append); indexes written before keep
    their WITHOUT ROWID table, and search, take new files, merge and verify as before."""
    docs, path = _two_notes(tmp_path, rows_only=True)
    before = _rankings(path)
    with sqlite3.connect(path / DB_NAME) as conn:
        columns = "segment_id, term, ids, tf_title, tf_body, pos_title, pos_body"
        conn.executescript(
            "ALTER TABLE postings RENAME TO postings_new;"
            "CREATE TABLE postings (segment_id INTEGER NOT NULL, term TEXT NOT NULL, ids BLOB NOT NULL,"
            " tf_title BLOB NOT NULL, tf_body BLOB NOT NULL, pos_title BLOB NOT NULL,"
            " pos_body BLOB NOT NULL, PRIMARY KEY (segment_id, term)) WITHOUT ROWID;"
            f"INSERT INTO postings SELECT {columns} FROM postings_new; DROP TABLE postings_new;"
        )
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name='postings'").fetchone()[0]
    assert "WITHOUT ROWID" in sql
    assert _rankings(path) == before
    with Index(path) as ix:
        (docs / "c.md").write_text("# Keys again\n\nthe signing keys live in the vault\n")
        (docs / "d.md").write_text("# Vault\n\nthe vault is sealed at night\n")
        (docs / "e.md").write_text("# Night\n\nnight shifts restore the backup\n")
        ix.add([docs])  # three new chunks against two: the merge folds both segments into one
        assert len(ix.search('"signing keys"', mode="lexical").hits) == 2
        assert len(ix.search("restore backup", mode="lexical").hits) == 2
    with sqlite3.connect(path / DB_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM segments").fetchone()[0] == 1
    assert main(["verify", "--index", str(path), "--full"]) == 0, capsys.readouterr().out


def test_long_bodies_are_stored_compressed_and_read_back_whole(tmp_path, capsys):
    prose = "The nightly backup is restored from cold storage when the primary fails. " * 20
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.md").write_text(f"# Restore\n\n{prose}\n")
    (docs / "short.md").write_text("# Keys\n\nrotate the signing keys\n")
    path = tmp_path / "ix"
    with Index(path) as ix:
        ix.add([docs])
        hit = ix.search("nightly backup", mode="lexical", limit=1).hits[0]
        assert ix.get(hit.path)[0].body.strip() == f"# Restore\n\n{prose}".strip()
    with sqlite3.connect(path / DB_NAME) as conn:
        kinds = dict(
            conn.execute("SELECT length(title) > 0 AND instr(title, 'Keys'), typeof(body) FROM chunks")
        )
    assert sorted(kinds.values()) == ["blob", "text"]  # the long body packed, the short one plain
    assert main(["verify", "--index", str(path), "--full"]) == 0, capsys.readouterr().out


def test_bodies_older_kenning_compressed_with_zlib_read_back_whole(tmp_path, capsys):
    """Bodies are written with zstd now; an index holding the zlib bodies older kenning wrote reads,
    searches and verifies the same (the blob's first bytes tell the two apart)."""
    import zlib

    prose = "The nightly backup is restored from cold storage when the primary fails. " * 20
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.md").write_text(f"# Restore\n\n{prose}\n")
    path = tmp_path / "ix"
    with Index(path) as ix:
        ix.add([docs])
    with sqlite3.connect(path / DB_NAME) as conn:
        ((chunk_id, blob),) = conn.execute("SELECT id, body FROM chunks").fetchall()
        assert blob[:4] == b"\x28\xb5\x2f\xfd"  # a zstd frame
        body = zstandard.ZstdDecompressor().decompress(blob)
        conn.execute("UPDATE chunks SET body=? WHERE id=?", (zlib.compress(body, 1), chunk_id))
    with Index(path) as ix:
        hit = ix.search("nightly backup", mode="lexical", limit=1).hits[0]
        assert ix.get(hit.path)[0].body.strip() == f"# Restore\n\n{prose}".strip()
    assert main(["verify", "--index", str(path), "--full"]) == 0, capsys.readouterr().out


def test_a_flipped_byte_in_a_compressed_body_is_found(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.md").write_text("# Restore\n\n" + "restore the nightly backup from cold storage. " * 30)
    path = tmp_path / "ix"
    with Index(path) as ix:
        ix.add([docs])
    with sqlite3.connect(path / DB_NAME) as conn:
        blob = conn.execute("SELECT body FROM chunks").fetchone()[0]
    assert isinstance(blob, bytes)
    data = bytearray((path / DB_NAME).read_bytes())
    at = data.find(blob)
    data[at + len(blob) // 2] ^= 0x01
    (path / DB_NAME).write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["verify", "--index", str(path)]) == 1
    assert "its text changed after it was written" in capsys.readouterr().out
    assert main(["get", "--index", str(path), "chunk:1"]) == 2
    assert "stored text is damaged" in capsys.readouterr().err


@pytest.mark.parametrize("n", [0, 1, 2, 3, 50])
@pytest.mark.parametrize("gapless", [True, False])
def test_segment_ids_round_trip_as_a_range_or_one_by_one(n, gapless):
    """Ids without a gap are stored as their first and last (eight bytes), others one by one; two
    ids are eight bytes in either form, and read back the same."""
    ids = np.arange(7, 7 + n, dtype=np.uint32)
    if not gapless and n:
        ids[-1] += 5
    blob = pack_doc_ids(ids)
    assert len(blob) == (8 if gapless and n > 2 else 4 * n)
    assert unpack_doc_ids(blob, n).tolist() == ids.tolist()
    with pytest.raises(StorageError, match="does not hold its 4 chunks"):
        unpack_doc_ids(pack_doc_ids(np.arange(3, 8, dtype=np.uint32)), 4)


def test_an_index_whose_segment_ids_older_kenning_wrote_one_by_one_reads_the_same(tmp_path, capsys):
    """A built index's segment holds its ids as a range; rewritten one by one (as kenning before
    schema 9 wrote them) it searches and verifies the same."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\nthe backup number {i} restores from cold storage\n")
    path = tmp_path / "ix"
    with Index(path) as ix:
        ix.add([docs])
        before = [(h.path, h.score) for h in ix.search("backup restores", mode="lexical").hits]
    with sqlite3.connect(path / DB_NAME) as conn:
        ((seg_id, blob, n_docs),) = conn.execute("SELECT id, doc_ids, n_docs FROM segments").fetchall()
        assert len(blob) == 8 and n_docs == 6
        ids = unpack_doc_ids(blob, n_docs)
        conn.execute("UPDATE segments SET doc_ids=? WHERE id=?", (ids.astype("<u4").tobytes(), seg_id))
    with Index(path) as ix:
        assert [(h.path, h.score) for h in ix.search("backup restores", mode="lexical").hits] == before
    assert main(["verify", "--index", str(path), "--full"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("kind", ["empty", "short titles", "bodies", "random"])
def test_segment_lengths_are_compressed_only_when_that_makes_them_far_shorter(kind):
    """Lengths that compress to a quarter or less (titles of a few words) are stored compressed,
    others two bytes a chunk (bodies' lengths compress to ~70%, and decompressing them cost a first
    query more than reading them plain); the stored length tells which, so the plain form reads the
    same, and a wrong count is an error rather than other lengths."""
    rng = np.random.default_rng(3)
    n = {"empty": 0, "short titles": 5000, "bodies": 5000, "random": 300}[kind]
    if kind == "random":
        lengths = rng.integers(0, 65536, size=n).astype(np.uint16)
    elif kind == "bodies":
        lengths = rng.integers(50, 400, size=n).astype(np.uint16)
    else:
        lengths = rng.integers(0, 3, size=n).astype(np.uint16)
    blob = pack_lengths(lengths)
    assert len(blob) < 2 * n if kind == "short titles" else len(blob) == 2 * n
    assert unpack_lengths(blob, n).tolist() == lengths.tolist()
    assert unpack_lengths(lengths.tobytes(), n).tolist() == lengths.tolist()  # the plain form
    for stored in (blob, lengths.tobytes()):  # decoded into an array given (as a view does)
        out = np.full(n + 2, 7, dtype=np.uint16)
        unpack_lengths_into(stored, n, out[1 : n + 1])
        assert out[1 : n + 1].tolist() == lengths.tolist() and out[0] == out[-1] == 7
    if kind == "short titles":
        with pytest.raises(StorageError, match="holds 10000 bytes, more than 9998"):  # refused unread
            unpack_lengths(blob, 4999)
        for wrong in (4999, 5001):
            with pytest.raises(StorageError, match=f"do not hold its {wrong} chunks"):
                unpack_lengths_into(blob, wrong, np.zeros(wrong, dtype=np.uint16))


def test_an_index_whose_segment_lengths_older_kenning_wrote_plain_reads_the_same(tmp_path, capsys):
    """A built index keeps its segment's lengths compressed; rewritten two bytes a chunk (as kenning
    before wrote them) it searches and verifies the same."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(200):  # enough equal title lengths to compress to a quarter
        text = f"# Note {i}\n\nthe backup number {i} restores " + "cold " * (i % 40) + "\n"
        (docs / f"note{i}.md").write_text(text)
    path = tmp_path / "ix"
    with Index(path) as ix:
        ix.add([docs])
        before = [(h.path, h.score) for h in ix.search("backup restores cold", mode="lexical").hits]
    with sqlite3.connect(path / DB_NAME) as conn:
        ((seg_id, n_docs, title, body),) = conn.execute(
            "SELECT id, n_docs, title_lens, body_lens FROM segments"
        ).fetchall()
        assert len(title) < 2 * n_docs  # the titles' lengths compress
        plain = [unpack_lengths(blob, n_docs).astype("<u2").tobytes() for blob in (title, body)]
        conn.execute("UPDATE segments SET title_lens=?, body_lens=? WHERE id=?", (*plain, seg_id))
    with Index(path) as ix:
        assert [(h.path, h.score) for h in ix.search("backup restores cold", mode="lexical").hits] == before
    assert main(["verify", "--index", str(path), "--full"]) == 0, capsys.readouterr().out


def unpack_doc_ids(blob: bytes, count: int) -> np.ndarray:
    """A segment's ids read back as the store reads them (decode_segment), lengths aside."""
    lengths = np.zeros(count, dtype=np.uint16).tobytes()
    return decode_segment(1, (count, blob, lengths, lengths)).doc_ids


def test_damaged_compressed_text_is_damaged_text_and_a_search_of_titles_loads_no_zstd(tmp_path):
    """A flipped byte in a stored zstd frame is DAMAGED_TEXT (kenning's own DamagedText, so catching
    it needs no zstd); zstd loads only when something is decompressed, which a lexical search that
    shows titles never does (~1 ms of a new process's first query)."""
    import subprocess
    import sys

    from kenning.store.compact import DAMAGED_TEXT, DamagedText, pack_text, unpack_text

    packed = bytearray(pack_text("the harbour lantern keeps the mill gate lit " * 20))
    packed[len(packed) // 2] ^= 0xFF
    with pytest.raises(DamagedText) as caught:
        unpack_text(bytes(packed))
    assert isinstance(caught.value, DAMAGED_TEXT)
    (tmp_path / "notes.md").write_text("# Keys\n\n" + "Rotate the signing keys every month. " * 20)
    with Index(tmp_path / "ix") as index:
        index.add([tmp_path / "notes.md"])
    script = (
        "import sys; from kenning import Index\n"
        f"ix = Index({str(tmp_path / 'ix')!r})\n"
        "assert ix.search('signing keys', mode='lexical', detail='heads').hits\n"
        "print('zstandard' in sys.modules)\n"
        "assert 'month' in ix.search('signing keys', mode='lexical').hits[0].snippet\n"
        "print('zstandard' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "True"]
