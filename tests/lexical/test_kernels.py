"""The C loops (kenning.kernels._native) against the Python and NumPy they replace, to the last bit: a term's
weighted BM25 scores, its live postings, its roaring bitmap, MaxScore's top k, a segment's rows
as the store encodes them, and a range's short rows packed."""

import shutil
import sysconfig
from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from kenning import kernels
from kenning.kernels import arrays
from kenning.lexical.bm25 import Bm25Params, saturate

native = pytest.mark.skipif(not kernels.NATIVE, reason="kenning.kernels._native is not built here")


def test_the_kernels_are_built_where_a_compiler_is():
    """Without them every first sight of a term runs the NumPy path: correct, but ~14 ms slower for a
    common term at 1M chunks. A machine that could compile them and did not has lost the build."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not ((shutil.which("cc") or shutil.which("gcc")) and headers.exists()):
        pytest.skip("no C compiler or Python headers here: the query path runs NumPy")
    assert kernels.NATIVE, "a compiler is here but kenning.kernels._native was not built"


def _numpy_weighted(ids, tft, tfb, tl, bl, avg_t, avg_b, p, weight, field):
    """What LexicalView.weighted computed before the kernel: idf x impacts, in NumPy."""
    out = np.zeros(len(ids))
    if field != "body":
        out += p.title_weight * saturate(tft, tl[ids], avg_t, p)
    if field != "title":
        out += p.body_weight * saturate(tfb, bl[ids], avg_b, p)
    return weight * out


PARAMS = st.builds(
    Bm25Params,
    variant=st.sampled_from(["classic", "plus", "l"]),
    k1=st.floats(0, 3),
    b=st.floats(0, 1),
    delta=st.floats(0, 2),
    title_weight=st.floats(0, 5),
    body_weight=st.floats(0, 5),
)


@native
@settings(max_examples=200, deadline=None)
@given(
    params=PARAMS,
    seed=st.integers(0, 2**32 - 1),
    # from 16,384 postings the kernel tabulates norms by length (most lengths short, tf mostly 1)
    n=st.one_of(st.integers(0, 300), st.sampled_from([16_383, 16_384, 20_000])),
    field=st.sampled_from([None, "title", "body"]),
    avg=st.sampled_from([0.0, 0.7, 3.5, 180.25]),
    stored=st.sampled_from(["uint16", "uint8", "no title"]),
)
def test_weighted_scores_equal_numpy_to_the_bit(params, seed, n, field, avg, stored):
    """Frequencies are read as the stores keep them: two bytes, one byte, or an empty column when
    every one is zero (here the title's)."""
    rng = np.random.default_rng(seed)
    chunks = max(1000, 2 * n)
    ids = np.sort(rng.choice(chunks, n, replace=False)).astype(np.uint32)
    tft = rng.integers(0, 3, n).astype(np.uint16) * (stored != "no title")
    tfb = rng.integers(0, 40, n).astype(np.uint16)
    tfb[rng.random(n) < 0.5] = 1
    tl = rng.integers(0, 30, chunks).astype(np.uint16)
    bl = rng.integers(0, 65535, chunks).astype(np.uint16)
    short = rng.random(chunks) < 0.5  # lengths inside the table and past it
    bl[short] = rng.integers(0, 4100, int(short.sum()))
    weight = float(rng.random() * 9)
    given_t, given_b = tft, tfb
    if stored == "uint8":
        given_t, given_b = tft.astype(np.uint8), tfb.astype(np.uint8)
    elif stored == "no title":
        given_t = np.zeros(0, dtype=np.uint8)
    got = kernels.weigh(ids, given_t, given_b, tl, bl, avg, avg * 40, params, weight, field)
    want = _numpy_weighted(ids, tft, tfb, tl, bl, avg, avg * 40, params, weight, field)
    assert got.dtype == np.float64
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


@native
def test_weigh_refuses_ids_without_a_length():
    p = Bm25Params()
    ids = np.array([0, 5], dtype=np.int64)
    tf = np.ones(2, dtype=np.uint16)
    lengths = np.ones(5, dtype=np.uint16)
    with pytest.raises(IndexError, match="chunk id 5"):
        kernels.weigh(ids, tf, tf, lengths, lengths, 1.0, 1.0, p, 1.0)
    with pytest.raises(ValueError, match="each of 2 postings"):
        kernels.weigh(ids, tf[:1], tf, lengths, lengths, 1.0, 1.0, p, 1.0)
    with pytest.raises(ValueError, match="different lengths"):
        kernels.weigh(ids, tf, tf, lengths, lengths[:4], 1.0, 1.0, p, 1.0)


def _pyroaring(ids: np.ndarray) -> BitMap:
    values = array("I")
    values.frombytes(ids.astype(np.uint32).tobytes())
    return BitMap(values)


@native
@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.sampled_from([0, 1, 7, 4095, 4096, 4097, 20_000]),
    spread=st.sampled_from([5000, 70_000, 2**20, 2**32]),
)
def test_roaring_bytes_are_what_pyroaring_writes(seed, n, spread):
    """Array and bitset containers (4096 values is the last array), keys across the whole 32 bits."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(spread, min(n, spread), replace=False).astype(np.uint32))
    if n and rng.random() < 0.3:
        ids[-1] = 2**32 - 1  # the largest id roaring holds
        ids = np.unique(ids)
    want = _pyroaring(ids)
    ours = kernels.roaring_bytes(ids)
    assert BitMap.deserialize(ours) == want
    if want.get_statistics()["n_run_containers"] == 0:  # else pyroaring wrote runs, which we never do
        assert ours == want.serialize()
    assert arrays.bitmap_of(ids) == want


def test_bitmap_of_unordered_or_repeated_ids():
    ids = np.array([9, 3, 3, 70_000, 1], dtype=np.int64)
    assert kernels.roaring_bytes(ids) is None
    assert arrays.bitmap_of(ids) == BitMap([1, 3, 9, 70_000])


@native
@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    terms=st.integers(1, 6),
    extra_clauses=st.integers(0, 2),
    floor=st.sampled_from([0.0, 0.5, 1.0]),
    k=st.integers(1, 30),
    masked=st.booleans(),
    chunks=st.sampled_from([400, 5000]),
    weighted=st.booleans(),
)
def test_maxscore_is_the_exhaustive_top_k(seed, terms, extra_clauses, floor, k, masked, chunks, weighted):
    """Same ids, order and scores (to the bit) as summing every posting in the query's order and
    taking top_k; scores drawn from a few values, so ties (broken by id) are common. 5,000 chunk
    ids span several of the kernel's windows, with gaps between them when a term is rare. With
    `weighted`, each term holds its own share of the coordination (idf coordination), the whole
    including clauses no chunk holds."""
    from kenning.kernels.topk import top_k

    rng = np.random.default_rng(seed)
    ids, scores = [], []
    for _ in range(terms):
        n = int(rng.integers(0, chunks))
        ids.append(np.sort(rng.choice(chunks, n, replace=False)).astype(np.int64))
        scores.append(rng.choice([0.5, 1.25, 2.0, 3.0, 7.5], n) * rng.choice([1.0, 0.1]))
    allowed = rng.random(chunks + 5) < 0.7 if masked else None
    clauses = terms + extra_clauses
    holds = rng.uniform(0.1, 9.0, clauses).tolist() if weighted else [1.0] * clauses
    whole = sum(holds) if weighted else clauses
    sums, holding = np.zeros(chunks), np.zeros(chunks)
    for i, s, h in zip(ids, scores, holds, strict=False):
        sums[i] += s
        holding[i] += h
    held = np.flatnonzero(holding)
    if masked:
        held = held[allowed[held]]
    coord = floor + (1.0 - floor) * (holding[held] / whole)
    want_ids, want_scores = top_k(held, sums[held] * coord, k)
    maxima = [float(s.max()) if len(s) else 0.0 for s in scores]
    given_maxima = [m if rng.random() < 0.5 else None for m in maxima]  # None: the kernel finds it
    shares = (holds[:terms], whole) if weighted else None
    got_ids, got_scores, scored, essential, found = kernels.maxscore(
        ids, scores, given_maxima, clauses, floor, k, allowed, None, shares
    )
    assert got_ids.tolist() == want_ids.tolist()
    assert np.array_equal(got_scores.view(np.uint64), want_scores.view(np.uint64))
    assert len(want_ids) <= scored <= len(held) and 0 <= essential <= terms
    assert list(found) == maxima


@native
@settings(max_examples=150, deadline=None)
@given(
    params=PARAMS,
    seed=st.integers(0, 2**32 - 1),
    terms=st.integers(1, 4),
    # past 16,384 postings in all, the kernel weighs with the norm tables as weigh() does
    chunks=st.sampled_from([600, 6000, 40_000]),
    k=st.integers(1, 20),
)
def test_maxscore_weighing_on_demand_equals_weighed_lists(params, seed, terms, chunks, k):
    """Postings MaxScore weighs itself (only those it visits) give the same top k, to the bit, as the
    same postings weighed whole by weigh() and times their clause's weight. It bounds their scores
    from their largest frequencies (no posting above the bound), and finds given scores' exact
    maximum. High frequencies, terms in both fields, field-restricted terms and lengths past the norm
    table are all drawn."""
    rng = np.random.default_rng(seed)
    # (a field that holds the term is never empty: an empty one with b = 1 weighs to NaN either way)
    tl = rng.integers(1, 12, chunks).astype(np.uint16)
    bl = rng.integers(1, 400, chunks).astype(np.uint16)
    bl[rng.random(chunks) < 0.05] = rng.integers(4096, 65535)
    avg_t, avg_b = float(tl.mean()), float(bl.mean())
    ids, specs, weighed_scores = [], [], []
    for _ in range(terms):
        n = int(rng.integers(0, chunks // 2))
        term_ids = np.sort(rng.choice(chunks, n, replace=False)).astype(np.int64)
        tft = np.where(rng.random(n) < 0.1, rng.integers(1, 4, n), 0).astype(np.uint16)
        tfb = np.where(rng.random(n) < 0.8, 1, rng.integers(0, 90, n)).astype(np.uint16)
        field = rng.choice([None, "title", "body"], p=[0.8, 0.1, 0.1])
        weight = float(rng.choice([1.0, 1.6, 2.5]))
        idf = float(rng.random() * 8)
        if rng.random() < 0.5:  # stored one byte wide
            tft, tfb = tft.astype(np.uint8), tfb.astype(np.uint8)
        full = kernels.weigh(term_ids, tft, tfb, tl, bl, avg_t, avg_b, params, idf, field)
        ids.append(term_ids)
        specs.append(kernels.weighed(tft, tfb, idf, weight, field))
        weighed_scores.append(full * weight if weight != 1.0 else full)
    maxima = [float(s.max()) if len(s) else 0.0 for s in weighed_scores]
    clauses = terms + int(rng.integers(0, 2))
    want = kernels.maxscore(ids, weighed_scores, maxima, clauses, 0.5, k, None)
    weighing = kernels.weighing_of(tl, bl, avg_t, avg_b, params)
    got = kernels.maxscore(ids, specs, [None] * terms, clauses, 0.5, k, None, weighing)
    assert got[0].tolist() == want[0].tolist()
    assert np.array_equal(got[1].view(np.uint64), want[1].view(np.uint64))
    for bound, spec, scores in zip(got[4], specs, weighed_scores, strict=True):
        if isinstance(bound, tuple):  # split: (its title hits', the rest's), each a bound on its part
            title = np.asarray(spec[0]) > 0
            assert len(scores) >= 4096 and title.any() and not title.all()
            assert bound[0] >= scores[title].max() and bound[1] >= scores[~title].max()
        else:
            assert bound >= (scores.max() if len(scores) else 0.0)
    again = kernels.maxscore(ids, specs, got[4], clauses, 0.5, k, None, weighing)  # the bounds kept
    assert again[0].tolist() == want[0].tolist()
    assert np.array_equal(again[1].view(np.uint64), want[1].view(np.uint64))
    given = kernels.maxscore(ids, weighed_scores, [None] * terms, clauses, 0.5, k, None)
    assert list(given[4]) == maxima  # given scores: their exact maximum


@native
def test_maxscore_searches_a_common_terms_title_hits_apart():
    """A common word's few title hits in short chunks bound the whole word far above what its body
    postings can score. Split into its title hits and the rest, the rest stops being essential once
    the rare word's chunks fill the top k: far fewer chunks are scored than with one bound for the
    word (its scores given whole), and the top k is the same to the bit."""
    rng = np.random.default_rng(7)
    chunks = 60_000
    tl = np.full(chunks, 8, dtype=np.uint16)
    bl = rng.integers(80, 300, chunks).astype(np.uint16)
    tl[:50] = 1  # short titles
    params = Bm25Params()
    common = np.sort(rng.choice(chunks, 30_000, replace=False)).astype(np.int64)
    common = np.union1d(common, np.arange(50)).astype(np.int64)  # ... holding the common word
    tft = np.where(common < 50, 1, 0).astype(np.uint8)
    tfb = np.ones(len(common), dtype=np.uint8)
    rare = np.sort(rng.choice(common[common >= 50], 40, replace=False)).astype(np.int64)
    rare_tf = np.full(len(rare), 3, dtype=np.uint8)
    avg_t, avg_b = float(tl.mean()), float(bl.mean())
    idfs = (0.7, 8.0)
    scores = [
        kernels.weigh(common, tft, tfb, tl, bl, avg_t, avg_b, params, idfs[0]),
        kernels.weigh(rare, np.zeros(0, np.uint8), rare_tf, tl, bl, avg_t, avg_b, params, idfs[1]),
    ]
    ids = [common, rare]
    whole = kernels.maxscore(ids, scores, [None, None], 2, 0.5, 10, None)
    weighing = kernels.weighing_of(tl, bl, avg_t, avg_b, params)
    specs = [
        kernels.weighed(tft, tfb, idfs[0], 1.0),
        kernels.weighed(np.zeros(0, np.uint8), rare_tf, idfs[1], 1.0),
    ]
    split = kernels.maxscore(ids, specs, [None, None], 2, 0.5, 10, None, weighing)
    assert split[0].tolist() == whole[0].tolist()
    assert np.array_equal(split[1].view(np.uint64), whole[1].view(np.uint64))
    assert isinstance(split[4][0], tuple) and split[4][0][1] < split[4][0][0]  # the rest's bound is lower
    assert split[2] * 10 < whole[2], (split[2], whole[2])  # chunks scored


@native
@native
def test_maxscore_rejects_held_weights_it_cannot_use():
    ids, scores = [np.arange(3)], [np.ones(3)]
    for held in [((1.0, 2.0), 3.0), ((-1.0,), 3.0), ((1.0,), 0.0), ((4.0,), 3.0)]:
        with pytest.raises(ValueError, match="held"):
            kernels.maxscore(ids, scores, [None], 1, 0.5, 2, None, None, held)


def test_maxscore_rejects_ids_without_lengths():
    """A chunk id past the lengths is an error, not a read outside them."""
    lengths = np.ones(10, dtype=np.uint16)
    ids = np.array([3, 12], dtype=np.int64)
    tf = np.ones(2, dtype=np.uint16)
    weighing = kernels.weighing_of(lengths, lengths, 1.0, 1.0, Bm25Params())
    for maxima in ([None], [5.0]):
        with pytest.raises(IndexError, match="no length"):
            kernels.maxscore([ids], [kernels.weighed(tf, tf, 2.0, 1.0)], maxima, 1, 1.0, 3, None, weighing)


@native
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), parts=st.integers(1, 4), deleted=st.sampled_from([0.0, 0.001, 0.2]))
def test_live_postings_equal_numpy(seed, parts, deleted):
    """Segments' parts (frequencies one or two bytes wide, or empty when all zero) joined, deleted
    chunks dropped, frequencies as uint16: as LexicalView._merge_live does it in NumPy. One part
    with every chunk live is served as stored, the very arrays given."""
    rng = np.random.default_rng(seed)
    chunks, stored = 3000, []
    for _ in range(parts):
        n = int(rng.integers(0, 300))
        ids = np.sort(rng.choice(chunks + (10 if deleted else 0), n, replace=False)).astype(np.uint32)
        columns = []
        for _field in range(2):
            kind = rng.integers(0, 3)
            columns.append(
                np.zeros(0, dtype=np.uint8)
                if kind == 0
                else rng.integers(0, 256 if kind == 1 else 5000, n).astype(
                    np.uint8 if kind == 1 else np.uint16
                )
            )
        stored.append((ids, *columns))
    live = rng.random(chunks) >= deleted  # ids past its end are not live
    ids, tft, tfb = kernels.live_postings(stored, live)
    all_ids = np.concatenate([p[0] for p in stored])
    keep = (all_ids < chunks) & live[np.minimum(all_ids, chunks - 1)]

    def widened(column, n):
        return np.zeros(n, dtype=np.uint16) if len(column) == 0 else column.astype(np.uint16)

    want_t = np.concatenate([widened(p[1], len(p[0])) for p in stored])[keep]
    want_b = np.concatenate([widened(p[2], len(p[0])) for p in stored])[keep]
    assert ids.tolist() == all_ids[keep].astype(np.int64).tolist()
    assert np.array_equal(tft, want_t) and np.array_equal(tfb, want_b)
    assert ids.dtype == np.uint32 and tft.dtype == tfb.dtype == np.uint16
    as_stored = kernels.live_as_stored(stored, live)
    if parts == 1 and keep.all():  # one segment's postings, all live: served as stored, no copy
        assert all(got is column for got, column in zip(as_stored, stored[0], strict=True))
    else:
        assert as_stored is None


@native
@pytest.mark.parametrize("variant", ["classic", "plus", "l"])
def test_a_views_weights_are_its_numpy_impacts_to_the_bit(tmp_path, variant):
    """On a real index (lengths, averages and postings as a view holds them), the C weights equal
    what LexicalView.impacts gives, times the idf, for every field choice."""
    import json
    import random

    from kenning import Index
    from kenning.lexical.bm25 import idf

    rng = random.Random(3)
    words = [f"w{i}" for i in range(60)]
    lines = [
        json.dumps({"_id": f"d{n}", "title": " ".join(rng.choices(words, k=rng.randint(0, 4))),
                    "text": " ".join(rng.choices(words, k=rng.randint(1, 90)))})
        for n in range(400)
    ]  # fmt: skip
    (tmp_path / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path / "corpus.jsonl"], progress=False)
    params = Bm25Params(variant=variant)
    with ix.store.reading():
        view = ix.lexical.view()
        found = view.postings([f"w{i}" for i in range(0, 60, 7)])
        checked = 0
        for postings in found.values():
            weight = idf(view.n_docs, postings.df)
            for field in (None, "title", "body"):
                got = kernels.weigh(
                    postings.ids, postings.tf_title, postings.tf_body, view.title_len, view.body_len,
                    view.avg_title_len, view.avg_body_len, params, weight, field,
                )  # fmt: skip
                want = weight * view.impacts(postings, params, field)
                assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
                checked += 1
    ix.close()
    assert checked == 27


@native
def test_a_row_s_digest_is_the_checksum_s_at_every_length_around_blake2b_s_blocks():
    """encode_rows and join_rows digest a row by hashlib as kenning.store.checksum does, whatever its
    length: the digest's input from under one 128-byte block to many, and past the 2 KB from which
    hashlib lets go of the GIL."""
    from kenning.store import compact
    from kenning.store.checksum import posting_digest
    from kenning.store.records import SegmentColumns

    rng = np.random.default_rng(0)
    for n in [*range(1, 40), 100, 1000, 5000]:
        ids = (np.arange(n) * 3).astype(np.uint32)
        tft, tfb = rng.integers(0, 2, n).astype(np.uint16), np.ones(n, np.uint16)
        pt = rng.integers(0, 70_000, int(tft.sum())).astype(np.uint32)
        pb = rng.integers(0, 100, n).astype(np.uint32)
        bounds = [np.array([0, len(column)], np.int64) for column in (ids, pt, pb)]
        columns = SegmentColumns(["term"], ids, tft, tfb, pt, pb, *bounds)
        [(row, digest)] = compact.encode_posting_rows(columns)
        assert digest == posting_digest("term", ids, tft, tfb, pt, pb), n
        assert kernels.join_rows([[row]], np.zeros(0, np.uint32)) == [(row, digest)], n


ANY_CHARACTER = st.characters(blacklist_categories=())  # lone surrogates too
DIGESTS = st.binary(min_size=16, max_size=16)


def _segment_columns(rng, terms: list[str]):
    """Flat columns of a segment of `terms` (kenning.store.records.SegmentColumns), every width a
    column can take somewhere: no title occurrence, frequencies past a byte, positions past 65535."""
    from kenning.store.records import SegmentColumns

    parts = []
    for i in range(len(terms)):
        n = int(rng.integers(0, 6)) if i % 5 else 0
        ids = np.sort(rng.choice(10**6, n, replace=False)).astype(np.uint32)
        tft = rng.integers(0, 300 if i % 3 == 0 else 2, n).astype(np.uint16)
        tfb = rng.integers(1, 3, n).astype(np.uint16)
        far = 70_000 if i % 4 == 0 else 100
        pt = rng.integers(0, far, int(tft.sum())).astype(np.uint32)
        pb = rng.integers(0, far, int(tfb.sum())).astype(np.uint32)
        parts.append((ids, tft, tfb, pt, pb))

    def bounds(column: int) -> np.ndarray:
        return np.concatenate(([0], np.cumsum([len(p[column]) for p in parts]))).astype(np.int64)

    joined = [np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, np.uint32) for c in range(5)]
    return SegmentColumns(terms, *joined, bounds(0), bounds(3), bounds(4))


@native
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(ANY_CHARACTER, min_size=1, max_size=6), max_size=40, unique=True),
    st.integers(0, 2**32 - 1),
)
def test_a_segment_s_rows_encode_in_c_as_in_python(terms, seed):
    """encode_posting_rows' C loop gives the rows and digests its Python loop gives, for any terms
    (lone surrogates included: digested as the store digests them, surrogatepass)."""
    from kenning.store import compact

    columns = _segment_columns(np.random.default_rng(seed), sorted(terms))
    in_c = compact.encode_posting_rows(columns)
    kernels.NATIVE = False
    try:
        in_python = compact.encode_posting_rows(columns)
    finally:
        kernels.NATIVE = True
    assert in_c == in_python


@native
def test_encoding_rows_refuses_columns_that_do_not_match_their_bounds():
    from kenning.store import compact

    columns = _segment_columns(np.random.default_rng(1), ["a", "b", "c"])
    good = compact.encode_posting_rows(columns)
    assert [row[0] for row, _ in good] == ["a", "b", "c"]
    bounds = (columns.posting_bounds, columns.title_bounds, columns.body_bounds)
    c = columns
    stored = [c.ids.astype("<u4").tobytes()]
    for tf in (c.tf_title, c.tf_body):
        stored += [tf.astype("<u2").tobytes(), tf.astype(np.uint8).tobytes()]
    for pos in (c.pos_title, c.pos_body):
        stored += [pos.astype("<u4").tobytes(), pos.astype("<u2").tobytes(), pos.astype(np.uint8).tobytes()]
    kinds = (np.full(3, 2, np.uint8),) * 4
    assert [row[0] for row, _ in kernels.encode_rows(["a", "b", "c"], bounds, stored, kinds)] == [
        "a",
        "b",
        "c",
    ]
    with pytest.raises(ValueError):  # an ids column one posting short
        kernels.encode_rows(["a", "b", "c"], bounds, (stored[0][:-4], *stored[1:]), kinds)
    with pytest.raises(ValueError):  # a kind missing
        kernels.encode_rows(["a", "b", "c"], bounds, stored, tuple(k[:2] for k in kinds))
    with pytest.raises(ValueError):  # a one-byte positions column one position short
        kernels.encode_rows(["a", "b", "c"], bounds, (*stored[:10], stored[10][:-1]), kinds)
    with pytest.raises(TypeError):
        kernels.encode_rows([1, 2, 3], bounds, stored, kinds)


def _stored_parts(rng, terms: list[str], segments: int) -> tuple[list[list[tuple]], np.ndarray]:
    """`segments` segments' stored rows over some of `terms` (ids ascending from one segment to the
    next, every column width somewhere, some rows in the wide form older kenning wrote), and ids to
    delete among them: none, some, or a term's every posting."""
    from kenning.store.compact import encode_posting_row

    parts, all_ids, base = [], [], 0
    for _ in range(segments):
        rows = []
        for i, term in enumerate(terms):
            if rng.random() < 0.4:
                continue
            n = int(rng.integers(1, 6))
            ids = (base + np.sort(rng.choice(1000, n, replace=False))).astype(np.uint32)
            tft = rng.integers(0, 300 if i % 3 == 0 else 2, n).astype(np.uint16)
            tfb = rng.integers(1 if i % 2 else 0, 3, n).astype(np.uint16)
            tfb[tft + tfb == 0] = 1  # every posting stands in a field, as every row kenning writes
            far = 70_000 if i % 4 == 0 else 1000 if i % 4 == 1 else 100  # positions of 4, 2 and 1 bytes
            pt = rng.integers(0, far, int(tft.sum())).astype(np.uint32)
            pb = rng.integers(0, far, int(tfb.sum())).astype(np.uint32)
            row, _ = encode_posting_row(term, ids, tft, tfb, pt, pb)
            if rng.random() < 0.2:
                row = (term, ids.tobytes(), tft.tobytes(), tfb.tobytes(), pt.tobytes(), pb.tobytes())
            rows.append(row)
            all_ids.append(ids)
        parts.append(rows)
        base += 1000
    ids = np.unique(np.concatenate(all_ids)) if all_ids else np.zeros(0, np.uint32)
    dead = ids[rng.random(len(ids)) < rng.choice([0.0, 0.3, 0.9])]
    return parts, dead.astype(np.uint32)


@native
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(ANY_CHARACTER, min_size=1, max_size=6), min_size=1, max_size=30, unique=True),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
)
def test_a_merge_joins_rows_in_c_as_in_python(terms, segments, seed):
    """merge_range's C join gives the rows and digests the Python paths give (joined from the bytes
    with nothing deleted, decoded and filtered with deletions): any terms, one to four segments, rows
    narrow or wide, deleted chunks dropped and terms left with no posting gone."""
    from kenning.indexing.segments import merge_range
    from kenning.store.compact import decode_posting_row, encode_posting_row

    parts, dead = _stored_parts(np.random.default_rng(seed), sorted(terms), segments)
    in_c = merge_range(parts, dead, decode_posting_row, encode_posting_row)
    kernels.NATIVE = False
    try:
        in_python = merge_range(parts, dead, decode_posting_row, encode_posting_row)
    finally:
        kernels.NATIVE = True
    assert in_c == in_python


@native
def test_joining_rows_refuses_parts_out_of_term_order_and_rows_that_do_not_fit():
    rows = [
        ("a", b"\x01\x00\x00\x00", b"", b"\x01", b"", b"\x05\x00"),
        ("b", b"\x02\x00\x00\x00", b"", b"", b"", b""),
    ]
    none = np.zeros(0, np.uint32)
    assert [row[0] for row, _ in kernels.join_rows([rows], none)] == ["a", "b"]
    with pytest.raises(ValueError, match="not ascending"):
        kernels.join_rows([rows[::-1]], none)
    with pytest.raises(ValueError, match="positions"):  # a body frequency of 1 and no position
        kernels.join_rows([[("a", b"\x01\x00\x00\x00", b"", b"\x01", b"", b"")]], none)
    with pytest.raises(ValueError, match="frequencies"):
        kernels.join_rows([[("a", b"\x01\x00\x00\x00", b"\x01\x02\x03", b"", b"", b"")]], none)
    with pytest.raises(TypeError):
        kernels.join_rows([[("a", b"")]], none)


@native
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(ANY_CHARACTER, max_size=5), st.integers(0, 60), DIGESTS),
        max_size=40,
    ),
    st.booleans(),
    # (row bytes packed at most, rows a pack, bytes a pack): closed by rows, by bytes, only empty rows
    st.sampled_from([(40, 3, 10_000), (40, 100, 90), (0, 2, 10_000), (256, 128, 4096)]),
)
def test_a_ranges_rows_pack_in_c_as_in_python(items, ordered, limits):
    """pack_range's C loop gives the rows, packs, marks and checksum lines the Python one gives: any
    terms (NULs, surrogates, repeats), in term order or not, rows short and long, packs closed by
    rows, by bytes or at once."""
    from kenning.store.sqlite import packs

    if ordered:
        items = sorted({term: (term, n, digest) for term, n, digest in items}.values())
    rng = np.random.default_rng(len(items))
    encoded = []
    for term, n, digest in items:
        cut = np.sort(rng.integers(0, n + 1, 4))
        data = bytes(rng.integers(0, 256, n, dtype=np.uint8))
        columns = [data[a:b] for a, b in zip([0, *cut], [*cut, n], strict=True)]
        encoded.append(((term, *columns), digest))
    saved = packs.PACK_ROW_BYTES, packs.PACK_ROWS, packs.PACK_BYTES
    packs.PACK_ROW_BYTES, packs.PACK_ROWS, packs.PACK_BYTES = limits
    try:
        try:
            expected = packs.pack_range_python(encoded)
        except UnicodeEncodeError:  # a lone surrogate in a packed term: neither way can pack it
            with pytest.raises(UnicodeEncodeError):
                packs.pack_range(encoded)
            return
        assert packs.pack_range(encoded) == expected
    finally:
        packs.PACK_ROW_BYTES, packs.PACK_ROWS, packs.PACK_BYTES = saved


@native
def test_packing_rows_refuses_what_is_not_a_range_of_encoded_rows():
    with pytest.raises(TypeError):
        kernels.pack_rows([(("a", b"", b"", b"", b""), b"d")], tuple, 256, 128, 4096, 300)
    with pytest.raises(TypeError):
        kernels.pack_rows([(("a", b"", b"", b"", b"", "x"), b"d")], tuple, 256, 128, 4096, 300)
    with pytest.raises(ValueError):
        kernels.pack_rows([], tuple, 70_000, 128, 4096, 300)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), parts=st.integers(0, 5))
def test_union_of_id_arrays_is_the_union_of_their_bitmaps(seed, parts):
    """In any order, with repeats, empty arrays, sparse and dense containers (over 4,096 ids in one
    2^16 range), and ids in far containers: the same set as pyroaring's union."""
    rng = np.random.default_rng(seed)
    arrays_ = []
    for _ in range(parts):
        kind = rng.integers(0, 4)
        if kind == 0:
            ids = np.zeros(0, dtype=np.uint32)
        elif kind == 1:  # dense: a bitset container
            ids = rng.choice(70_000, int(rng.integers(4_000, 20_000)), replace=False)
        else:
            ids = rng.integers(0, 3_000_000, int(rng.integers(1, 500)))
        if rng.random() < 0.5:
            ids = np.sort(ids)
        arrays_.append(np.asarray(ids, dtype=rng.choice([np.uint32, np.int64])))
    want = BitMap.union(*(BitMap(a.astype(np.uint32).tolist()) for a in arrays_)) if arrays_ else BitMap()
    assert arrays.union_of(arrays_) == want


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), few=st.booleans())
def test_chunks_holding_a_term_looked_up_or_intersected_agree(seed, few):
    """Few candidates are looked up in the term's ids, many intersected with its bitmap: the same
    chunks either way (candidates on and off the term's ids, at both ends of them)."""
    from kenning.lexical import view as lexical

    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(50_000, int(rng.integers(0, 8_000)), replace=False)).astype(np.uint32)
    postings = lexical.TermPostings(ids, np.ones(len(ids), np.uint8), np.ones(len(ids), np.uint8))
    count = int(rng.integers(0, lexical.LOOKUP_UP_TO if few else 3 * lexical.LOOKUP_UP_TO))
    docs = BitMap(rng.choice(50_001, count, replace=False).tolist()) | BitMap([0, 50_000])
    assert lexical.chunks_holding(docs, postings) == docs & BitMap(ids.tolist())


@native
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), parts=st.integers(1, 5))
def test_intersected_ids_are_the_ids_every_array_holds(seed, parts):
    """Galloping from the first array's ids through the others: the ids all of them hold, whichever
    array is shortest, with empty arrays, ids at both ends and far apart."""
    rng = np.random.default_rng(seed)
    arrays_ = []
    for _ in range(parts):
        spread = int(rng.choice([50, 5_000, 4_000_000_000]))
        ids = rng.choice(spread, int(rng.integers(0, min(spread, 3_000))), replace=False)
        arrays_.append(np.sort(ids).astype(np.uint32))
    want = arrays_[0]
    for ids in arrays_[1:]:
        want = np.intersect1d(want, ids, assume_unique=True)
    assert kernels.intersect_ids(arrays_).tolist() == want.tolist()


@native
@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 80),
    k=st.integers(-1, 90),
    ties=st.booleans(),
    unnumbered=st.booleans(),
)
def test_top_k_in_c_is_numpys_top_k(seed, n, k, ties, unnumbered):
    """The same k, in the same order (best first, ties by ascending id), from ids of either width,
    scores given per id or by chunk id from a corpus-sized array; scores with many ties too, and
    scores that are not numbers (a damaged input), which rank last by id in both."""
    from kenning.kernels.topk import top_k, top_k_numpy, top_k_of_dense

    rng = np.random.default_rng(seed)
    ids = rng.choice(1_000, n, replace=False)
    scores = rng.integers(-2, 3, n) * 0.5 if ties else rng.normal(size=n)
    if unnumbered:
        scores[rng.random(n) < 0.3] = np.nan
        scores[rng.random(n) < 0.1] = -np.inf
    for given_ids in (ids.astype(np.int64), np.sort(ids).astype(np.uint32)):
        got, want = top_k(given_ids, scores, k), top_k_numpy(given_ids, scores, k)
        assert got[0].tolist() == want[0].tolist() and np.array_equal(got[1], want[1], equal_nan=True)
    if unnumbered and k > 0 and np.isnan(scores).any() and (~np.isnan(scores)).any():
        best = top_k(ids, scores, 1)[1][0]
        assert not np.isnan(best)  # a number always ranks above a score that is not one
    dense = rng.integers(0, 4, 1_000) * 0.25 if ties else rng.random(1_000)
    by_id = np.sort(ids).astype(np.uint32)
    got = top_k_of_dense(by_id, dense, k)
    want = top_k_numpy(by_id, dense[by_id.astype(np.int64)], k)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@native
def test_top_k_by_id_refuses_an_id_past_its_scores():
    with pytest.raises(IndexError):
        kernels.top_k(np.array([1, 5], dtype=np.uint32), np.zeros(5), 2, by_id=True)
    with pytest.raises(ValueError):
        kernels.top_k(np.array([1, 2], dtype=np.int64), np.zeros(3), 2)


def _corpus_index(tmp_path, n_docs=600, batches=2, delete=True):
    """An index of random short documents over a small vocabulary, added in `batches` (a segment
    each), then the first batch's file changed (its chunks deleted, a third of them written again):
    postings spread over segments, with deleted chunks, as a real index's are."""
    import json
    import random

    from kenning import Index

    rng = random.Random(5)
    words = [f"w{i}" for i in range(40)] + ["the", "of", "a"] * 6
    ix = Index(tmp_path / "ix")
    for batch in range(batches):
        lines = [
            json.dumps({"_id": f"d{batch}-{n}", "title": " ".join(rng.choices(words, k=rng.randint(0, 5))),
                        "text": " ".join(rng.choices(words, k=rng.randint(1, 60)))})
            for n in range(n_docs // batches)
        ]  # fmt: skip
        (tmp_path / f"part{batch}.jsonl").write_text("\n".join(lines) + "\n")
        ix.add([tmp_path / f"part{batch}.jsonl"], progress=False)
    if delete:  # the first part again with every third document left out: its old chunks deleted
        kept = (tmp_path / "part0.jsonl").read_text().splitlines()[::3]
        (tmp_path / "part0.jsonl").write_text("\n".join(kept) + "\n")
        ix.add([tmp_path / "part0.jsonl"], progress=False)
    return ix, words


@native
def test_phrases_on_positions_in_c_are_numpys(tmp_path, monkeypatch):
    """Random phrases of 2-5 words (repeated words too), in either field or both, over chunks spread
    across two segments: the C check finds exactly the chunks the NumPy check finds."""
    import random

    ix, words = _corpus_index(tmp_path)
    rng = random.Random(9)
    checked = found = 0
    with ix.store.reading():
        view = ix.lexical.view()
        assert len(view.snapshot.segment_ids) >= 2 and view.n_docs < view.max_id
        for _ in range(300):
            phrase = rng.choices(words, k=rng.randint(2, 5))
            spec = list(zip(phrase, range(len(phrase)), strict=True))
            for field in (None, "title", "body"):
                native_found = view._phrase_by_positions(spec, view.live, field)
                monkeypatch.setattr(kernels, "NATIVE", False)
                numpy_found = view._phrase_by_positions(spec, view.live, field)
                monkeypatch.setattr(kernels, "NATIVE", True)
                assert native_found == numpy_found, (phrase, field)
                checked += 1
                found += len(numpy_found) > 0
    ix.close()
    assert found > 100


@native
def test_phrase_chunks_refuses_frequencies_past_the_positions():
    ids = np.array([1, 2], dtype=np.uint32)
    tf = np.array([2, 3], dtype=np.uint8)  # five positions counted, four held
    positions = np.array([0, 4, 1, 2], dtype=np.uint16)
    with pytest.raises(IndexError):
        kernels.phrase_chunks(ids, [(ids, tf, positions, 0), (ids, tf, positions, 1)])


@native
@pytest.mark.parametrize("coordination", ["idf", "clauses"])
def test_summed_scores_in_c_are_numpys_to_the_bit(tmp_path, monkeypatch, coordination):
    """A view's scores over every chunk, for random queries with repeated words (a query weight),
    phrase-restricted terms, survivors masked or not, and both coordinations: the C sums equal the
    NumPy ones bit for bit."""
    import random

    from kenning.lexical.bm25 import ScoringClause, ScoringTerm

    ix, words = _corpus_index(tmp_path)
    rng = random.Random(13)
    params = Bm25Params(coordination=coordination)
    with ix.store.reading():
        view = ix.lexical.view()
        for _ in range(150):
            terms = rng.choices(words + ["absent"], k=rng.randint(1, 6))
            found = view.postings(list(dict.fromkeys(terms)))
            clauses = []
            for term in dict.fromkeys(terms):
                docs = None
                if rng.random() < 0.2 and found[term] is not None:  # a phrase's term: only some chunks
                    docs = BitMap(rng.sample(found[term].ids.tolist(), max(1, found[term].df // 3)))
                clauses.append(ScoringClause([ScoringTerm(term, rng.choice([None, "title", "body"]), docs)],
                                             docs, term, terms.count(term)))  # fmt: skip
            allowed = None
            if rng.random() < 0.5:
                allowed = np.zeros(view.max_id + 1, dtype=bool)
                allowed[rng.sample(range(view.max_id + 1), (view.max_id + 1) // 2)] = True
            got = view.score(clauses, found, params, allowed)
            monkeypatch.setattr(kernels, "NATIVE", False)
            want = view.score(clauses, found, params, allowed)
            monkeypatch.setattr(kernels, "NATIVE", True)
            assert got.dtype == want.dtype and np.array_equal(got.view(np.uint64), want.view(np.uint64))
    ix.close()


@native
def test_summed_scores_grow_to_the_largest_id_and_leave_unreached_memory_alone():
    """An id past the size asked for lengthens the scores, as NumPy's bincount does; and chunk ids no
    posting reaches are never written, so a huge id space (many deleted chunks, or a crafted
    segment) costs the pages the postings touch, not eight bytes a chunk id."""
    import os

    def resident_mb() -> float:  # the process's resident memory now (not its peak so far)
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    got = kernels.sum_scores(3, [np.array([0, 5], np.uint32)], [np.array([1.0, 2.0])], [1.0], [], None)
    assert got.tolist() == np.bincount([0, 5], weights=[1.0, 2.0], minlength=3).tolist()
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc/self/statm here to read resident memory from")
    size = 1 << 26  # 512 MB of float64 if every page were written
    ids = np.array([3, 1 << 20, size - 1], dtype=np.uint32)
    for coordination in (None, ([0.5], 0.3, 1.0)):
        matched = [ids] if coordination else []
        before = resident_mb()
        scores = kernels.sum_scores(size, [ids], [np.array([1.0, 2.0, 3.0])], [1.0], matched, coordination)
        grown = resident_mb() - before  # while the scores are alive
        assert len(scores) == size and scores[size - 1] > 0 and scores[4] == 0.0
        assert grown < 128, (coordination, grown)
        del scores


@native
def test_a_phrase_check_finds_only_chunks_it_was_given(tmp_path, monkeypatch):
    """Given some of the index's chunks, a phrase check (of a whole phrase, or of words at offsets
    past the first, as when some words narrow the candidates) returns only chunks among them, in C
    as in NumPy: a word nearer a text's start than its offset must not count for the chunk before."""
    import random

    ix, words = _corpus_index(tmp_path)
    rng = random.Random(21)
    with ix.store.reading():
        view = ix.lexical.view()
        live = list(view.live)
        for _ in range(300):
            phrase = rng.choices(words, k=rng.randint(2, 4))
            first = rng.choice([0, 1, 2])  # offsets from 1 or 2: the later words of a longer phrase
            spec = [(word, first + i) for i, word in enumerate(phrase)]
            given = BitMap(rng.sample(live, len(live) // 3))
            found = view._phrase_by_positions(spec, given, None)
            monkeypatch.setattr(kernels, "NATIVE", False)
            numpy_found = view._phrase_by_positions(spec, given, None)
            monkeypatch.setattr(kernels, "NATIVE", True)
            assert found <= given and numpy_found <= given and found == numpy_found, spec
    ix.close()


@native
def test_a_phrase_whose_rarest_words_never_meet_reads_no_common_words_positions(tmp_path, monkeypatch):
    """The two rarest words are checked first; when they never stand at their offsets, a common
    word's positions (megabytes at a million chunks) are not read at all."""
    import kenning.lexical.view as lexical

    ix, _ = _corpus_index(tmp_path)
    read = []
    field_positions = lexical.LexicalView._field_positions
    monkeypatch.setattr(
        lexical.LexicalView,
        "_field_positions",
        lambda self, seg, term, field: read.append(term) or field_positions(self, seg, term, field),
    )
    with ix.store.reading():
        view = ix.lexical.view()
        impossible = [("w38", 0), ("w39", 0), ("the", 1)]  # two words at one position: never
        assert not view._phrase_by_positions(impossible, view.live, None)
        assert read and "the" not in read
    ix.close()
