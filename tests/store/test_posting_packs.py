"""Posting packs (kenning.store.sqlite.packs): a segment's short rows kept many to a row read back as
the rows they were, through every way the store reads and frees postings, and an index written with
packs searches exactly as one written a row per term."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning import Index
from kenning.store.checksum import digest_lines, segment_checksum
from kenning.store.errors import StorageError
from kenning.store.sqlite import packs
from kenning.store.sqlite.packs import Pack, PackWriter, encode_pack

TERMS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=8
)
COLUMN = st.binary(max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(TERMS, COLUMN, COLUMN, COLUMN, COLUMN, COLUMN), max_size=30, unique_by=lambda r: r[0]),
    TERMS,
    TERMS,
)
def test_a_pack_gives_back_its_rows_by_term_and_by_range(rows, low, high):
    rows = sorted(rows)
    pack = Pack(encode_pack(rows))
    assert pack.terms == [row[0] for row in rows]
    assert [pack.find(row[0]) for row in rows] == rows
    assert pack.find(low) == next((row for row in rows if row[0] == low), None)
    assert pack.rows(low, high) == [row for row in rows if low <= row[0] < high]
    assert pack.rows(None, high) == [row for row in rows if row[0] < high]
    assert pack.rows(low, None) == [row for row in rows if row[0] >= low]


def test_a_damaged_pack_is_a_storage_error():
    blob = encode_pack([("a", b"\x01\x00\x00\x00", b"\x01", b"", b"\x00\x00", b"")])
    for bad in (blob[:-1], blob + b"x", blob[:3], blob[:8] + b"\xff" + blob[9:]):
        with pytest.raises(StorageError):
            Pack(bad)


def test_the_writer_packs_short_rows_in_term_order_and_leaves_the_rest_to_rows(monkeypatch):
    monkeypatch.setattr(packs, "PACK_BYTES", 64)
    short = [(f"t{i:03d}", b"\x00" * 8, b"", b"", b"", b"") for i in range(40)]
    long = ("t005x", b"\x00" * 400, b"", b"", b"", b"")
    late = ("s", b"\x00" * 4, b"", b"", b"", b"")  # after t-terms were packed: out of order
    nul = ("t100\0", b"", b"", b"", b"", b"")
    writer = PackWriter()
    taken = [writer.take(row) for row in [*short[:6], long, *short[6:], late, nul]]
    assert taken == [True] * 6 + [False] + [True] * 34 + [False, False]
    made = writer.done()
    assert len(made) > 1
    runs = [(p.first, p.last) for p in made]
    assert all(a[1] < b[0] for a, b in zip(runs, runs[1:], strict=False))  # runs never overlap
    assert [row for p in made for row in Pack(p.blob).rows()] == short
    monkeypatch.setattr(packs, "PACK_BYTES", 1 << 20)
    monkeypatch.setattr(packs, "PACK_ROWS", 3)  # closed by its count of rows too
    by_count = PackWriter()
    for row in short[:10]:
        by_count.take(row)
    assert [len(Pack(p.blob).terms) for p in by_count.done()] == [3, 3, 3, 1]


def test_a_range_packed_in_a_worker_is_what_the_writer_packs_itself(monkeypatch):
    """pack_range (a worker's) keeps the long rows, packs the short ones, joins every row's checksum
    line in term order, and marks the range in term order, each row or pack with the bytes it holds
    in a merge."""
    monkeypatch.setattr(packs, "PACK_BYTES", 64)
    rows = [(f"t{i:03d}", b"\x00" * (300 if i % 9 == 4 else 8), b"", b"", b"", b"") for i in range(40)]
    encoded = [(row, bytes([i]) * 16) for i, row in enumerate(rows)]
    bundle = packs.pack_range(encoded)
    assert bundle.rows == [row for row in rows if len(row[1]) == 300]
    assert [row for p in bundle.packs for row in Pack(p.blob).rows()] == [r for r in rows if len(r[1]) == 8]
    assert bundle.lines == digest_lines([(row[0], digest) for row, digest in encoded])
    assert (bundle.first, bundle.last) == (rows[0][0], rows[-1][0])
    assert [m[0] for m in bundle.marks] == sorted(m[0] for m in bundle.marks)
    held = sum(packs.row_bytes(row) + packs.ROW_MEMORY_BYTES for row in rows)
    assert sum(m[1] for m in bundle.marks) == held


def _segment(store, rows):
    """Write a segment of `rows` ((term, ids, tf_title, tf_body, pos_title, pos_body) arrays)."""
    ids = sorted({int(i) for row in rows for i in row[1]})
    with store.transaction():
        encoded = (store.posting_encoder(*row) for row in rows)
        n = len(ids)
        return store.write_encoded_segment(np.array(ids), np.ones(n), np.full(n, 9), encoded)


def _random_rows(rng, count):
    rows = []
    for i in range(count):
        n = int(rng.choice([1, 1, 2, 3, 60]))  # mostly short, a few long enough to stay rows
        ids = np.sort(rng.choice(np.arange(1, 200), n, replace=False))
        tft, tfb = rng.integers(0, 2, n), rng.integers(1, 3, n)
        rows.append(
            (
                f"w{i:03d}\u00e9" if i % 7 == 0 else f"w{i:03d}",
                ids,
                tft,
                tfb,
                rng.integers(0, 50, int(tft.sum())),
                rng.integers(0, 500, int(tfb.sum())),
            )
        )
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_a_segment_of_packs_and_rows_reads_and_frees_as_rows_alone_do(tmp_path, monkeypatch, seed):
    """The same rows written packed (small packs: many of them) and a row per term: every term, every
    range, positions, term counts and the rows left after freeing ranges are the same."""
    rng = np.random.default_rng(seed)
    rows = _random_rows(rng, 120)
    monkeypatch.setattr(packs, "PACK_BYTES", 200)
    with Index(tmp_path / "packed") as packed:
        seg_p = _segment(packed.store, rows)
        assert packed.store.conn.execute("SELECT count(*) FROM posting_packs").fetchone()[0] > 3
        assert packed.store.conn.execute("SELECT count(*) FROM postings").fetchone()[0] > 3
    monkeypatch.setattr(packs, "PACK_ROW_BYTES", -1)
    with Index(tmp_path / "rows") as plain:
        seg_r = _segment(plain.store, rows)
        assert plain.store.conn.execute("SELECT count(*) FROM posting_packs").fetchone()[0] == 0
    terms = [row[0] for row in rows] + ["absent", "w999", "a", "\uffff"]
    bounds = sorted(rng.choice(terms, 6, replace=False).tolist())
    with Index(tmp_path / "packed") as packed, Index(tmp_path / "rows") as plain:
        a, b = packed.store, plain.store
        got, want = a.load_postings(seg_p, terms), b.load_postings(seg_r, terms)
        assert set(got) == set(want) == {row[0] for row in rows}
        for term in want:
            for column in ("ids", "tf_title", "tf_body"):
                assert getattr(got[term], column).tolist() == getattr(want[term], column).tolist()
            for field in ("title", "body"):
                assert (
                    a.load_positions(seg_p, term, field).tolist()
                    == b.load_positions(seg_r, term, field).tolist()
                )
        assert a.load_positions(seg_p, "absent", "body") is None
        assert a.count_terms() == b.count_terms() == len(rows)
        for low, high in [(None, None), (None, bounds[2]), (bounds[1], None), (bounds[0], bounds[4])]:
            assert a.raw_postings(seg_p, low, high) == b.raw_postings(seg_r, low, high)
        assert a.term_bounds([seg_p], 2000) and a.segment_checksums()[seg_p] == b.segment_checksums()[seg_r]
        with a.transaction(), b.transaction():  # ranges freed out of order, ends inside packs
            for low, high in [(bounds[2], bounds[3]), (None, bounds[0]), (bounds[5], None)]:
                a.drop_postings_range([seg_p], low, high)
                b.drop_postings_range([seg_r], low, high)
                assert a.raw_postings(seg_p) == b.raw_postings(seg_r)
            assert a.count_terms() == b.count_terms()


def test_an_index_written_with_packs_searches_merges_and_verifies_as_one_without(
    tmp_path, monkeypatch, capsys
):
    """Short rows packed or not, the same corpus ranks the same, phrases included, before and after a
    re-index merges its segments; and `kenning verify` finds both sound."""
    from kenning.surfaces.cli import main

    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(600)]
    corpus = tmp_path / "corpus"
    corpus.mkdir()

    def write(part: int, docs: int) -> None:
        lines = [
            json.dumps(
                {
                    "_id": f"d{part}-{n}",
                    "title": " ".join(rng.choice(words, 3)),
                    "text": " ".join(rng.choice(words, 40)),
                }
            )
            for n in range(docs)
        ]
        (corpus / f"part-{part}.jsonl").write_text("\n".join(lines) + "\n")

    for part in range(3):
        write(part, 60)
    queries = [" ".join(rng.choice(words, k)) for k in (1, 2, 3, 4)] + [
        f'"{words[1]} {words[2]}"',
        "title:w7 w8",
    ]

    def build_and_rank(name: str) -> list:
        with Index(tmp_path / name) as ix:
            ix.add([corpus], progress=False)
            return [
                [(h.doc_key, round(h.score, 9)) for h in ix.search(q, mode="lexical").hits] for q in queries
            ]

    packed_first = build_and_rank("packed")
    monkeypatch.setattr(packs, "PACK_ROW_BYTES", -1)
    rows_first = build_and_rank("rows")
    monkeypatch.undo()
    assert packed_first == rows_first
    write(1, 80)  # a changed file: a new segment, and a merge of rows with packs in the row index
    assert build_and_rank("packed") == build_and_rank("rows")
    for name in ("packed", "rows"):
        assert main(["verify", "--index", str(tmp_path / name), "--full"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("order", ["ascending", "ranges out of order", "rows out of order in a range"])
def test_a_segment_of_worker_ranges_has_the_checksum_of_its_rows(tmp_path, monkeypatch, order):
    """The checksum the writer joins from the ranges' own lines (a worker makes them) is the one
    segment_checksum gives over every row's (term, digest) sorted, also when the ranges come out of
    term order (then it checksums the rows it stored) or a range's rows do, loose rows among them."""
    rng = np.random.default_rng(5)
    rows = _random_rows(rng, 150)
    monkeypatch.setattr(packs, "PACK_BYTES", 200)
    ids = np.array(sorted({int(i) for row in rows for i in row[1]}))
    title_lens, body_lens = np.ones(len(ids), dtype=np.uint16), np.full(len(ids), 9, dtype=np.uint16)
    with Index(tmp_path / "ix") as index:
        store = index.store
        encoded = [store.posting_encoder(*row) for row in rows]
        ranges = [encoded[i : i + 40] for i in range(0, len(encoded), 40)]
        if order == "ranges out of order":
            ranges = ranges[2:3] + ranges[:2] + ranges[3:]
        elif order == "rows out of order in a range":
            ranges[1] = ranges[1][::-1]
        items = [packs.pack_range(r) for r in ranges[:-1]] + ranges[-1]
        with store.transaction():
            seg = store.write_encoded_segment(ids, title_lens, body_lens, iter(items))
        pairs = [(row[0], digest) for row, digest in encoded]
        assert store.segment_checksums()[seg] == segment_checksum(ids, title_lens, body_lens, pairs)
        assert store.count_terms() == len(rows)


ORPHAN_PACKS = "SELECT count(*) FROM posting_packs WHERE segment_id NOT IN (SELECT id FROM segments)"


def _notes(folder, body="word{i} alpha beta unique{j} term{k}"):
    """Thirty small notes (short rows: packed), each body `body` with i, j = 7i and k = i mod 5."""
    folder.mkdir(exist_ok=True)
    for i in range(30):
        text = body.format(i=i, j=i * 7, k=i % 5)
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\n{text}\n")
    return folder


def test_a_forced_rebuild_leaves_no_pack_of_a_segment_it_dropped(tmp_path):
    """`kenning index --force` empties the index: its posting packs go with its segments (they were
    left behind, a pack of every segment the index ever had, in the file for good)."""
    docs = _notes(tmp_path / "docs")
    with Index(tmp_path / "ix") as index:
        index.add([docs], progress=False)
        index.add([docs], progress=False, force=True)
        conn = index.store.conn
        assert conn.execute("SELECT count(*) FROM posting_packs").fetchone()[0] > 0
        assert conn.execute(ORPHAN_PACKS).fetchone()[0] == 0


def test_packs_an_older_forced_rebuild_left_go_at_the_next_drop(tmp_path):
    """An index rebuilt with --force before packs went with their segments still holds the old
    segments' packs; the next write that drops a segment deletes them."""
    docs = _notes(tmp_path / "docs")
    with Index(tmp_path / "ix") as index:
        index.add([docs], progress=False)
        conn = index.store.conn
        with index.store.transaction():  # what a forced rebuild used to leave: a pack of no segment
            conn.execute("INSERT INTO posting_packs SELECT 0, first_term, last_term, data FROM posting_packs")
        assert conn.execute(ORPHAN_PACKS).fetchone()[0] > 0
        _notes(docs, "other{i} words")  # every file changes: the first segment is dropped
        index.add([docs], progress=False)
        assert conn.execute(ORPHAN_PACKS).fetchone()[0] == 0


@pytest.mark.parametrize("seed", range(3))
def test_long_rows_read_through_blob_io_are_the_rows_selected(tmp_path, monkeypatch, seed):
    """load_postings reads a long row's columns through incremental blob I/O: every row read that way
    (empty frequency columns too) is the row a SELECT gives, inside a read transaction as outside."""
    from kenning.store.sqlite import postings

    rng = np.random.default_rng(seed)
    rows = _random_rows(rng, 80)
    monkeypatch.setattr(packs, "PACK_ROW_BYTES", -1)  # a row per term: none in a pack
    with Index(tmp_path / "rows") as index:
        segment = _segment(index.store, rows)
        terms = [row[0] for row in rows] + ["absent"]
        monkeypatch.setattr(postings, "BLOB_READ_FROM", 10**9)
        selected = index.store.load_postings(segment, terms)
        monkeypatch.setattr(postings, "BLOB_READ_FROM", 0)
        through_blobs = index.store.load_postings(segment, terms)
        with index.store.reading():
            in_transaction = index.store.load_postings(segment, terms)
    assert set(selected) == set(through_blobs) == set(in_transaction) == {row[0] for row in rows}
    assert any(len(p.tf_title) and not p.tf_title.any() for p in selected.values())  # stored empty
    for term, want in selected.items():
        for got in (through_blobs[term], in_transaction[term]):
            for column in ("ids", "tf_title", "tf_body"):
                assert getattr(got, column).tolist() == getattr(want, column).tolist()
