"""The segment builder's posting lists against a direct, per-chunk reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from kenning.analysis.analyzer import Analyzer, raw_tokens
from kenning.indexing import segments
from kenning.indexing.segments import SegmentBuilder, merge_plan
from kenning.indexing.tuning import WriterTuning

CHUNKS = [
    (3, "Parsing", "def parseQueryString(raw): parse the query string, then parse it again"),
    (4, "", "東京都の天気 and the weather in Tokyo"),
    (9, "Query strings", "the query is a string; QUERY_STRING is an environment variable"),
    (10, "parse parse parse parse", "parse"),
]


def reference(analyzer, chunks, max_tf):
    """term -> (ids, tf_title, tf_body, title positions, body positions), one chunk at a time."""
    out: dict[str, list] = {}
    for chunk_id, title, body in chunks:
        per_field = []
        for text in (title, body):
            terms, positions = analyzer.positioned_terms(text)
            found: dict[str, list[int]] = {}
            for term, pos in zip(terms, positions, strict=True):
                found.setdefault(term, []).append(pos)
            per_field.append({t: p[:max_tf] for t, p in found.items()})
        for term in sorted(per_field[0].keys() | per_field[1].keys()):
            ids, tft, tfb, pt, pb = out.setdefault(term, [[], [], [], [], []])
            title_positions, body_positions = per_field[0].get(term, []), per_field[1].get(term, [])
            ids.append(chunk_id)
            tft.append(len(title_positions))
            tfb.append(len(body_positions))
            pt.extend(title_positions)
            pb.extend(body_positions)
    return {term: tuple(list(map(int, part)) for part in parts) for term, parts in out.items()}


def built(analyzer, chunks):
    builder = SegmentBuilder(analyzer)
    for chunk_id, title, body in chunks:
        builder.add(chunk_id, title, body)
    return {term: tuple(np.asarray(part).tolist() for part in rest) for term, *rest in builder.rows()}


def test_postings_match_the_reference():
    analyzer = Analyzer()
    got = built(analyzer, CHUNKS)
    assert got == reference(analyzer, CHUNKS, segments.MAX_TF)
    ids, tf_title, tf_body, title_positions, body_positions = got["pars"]
    assert (ids, tf_title, tf_body) == ([3, 10], [1, 4], [3, 1])
    assert title_positions == [0, 0, 1, 2, 3] and body_positions[-1] == 0  # chunk 10's body "parse"
    assert got["queri"][0] == [3, 9]  # parts of identifiers are postings too
    assert list(got) == sorted(got)  # terms ascending: the store's key order, appended, not inserted


# words that make one term, identifiers that make several at one place, CJK runs, accents and NFC
# forms: a chunk of known words takes the builder's fast path, one with a new word the slow one
WORDS = ["parse", "Parsing", "query", "QUERY_STRING", "parseQueryString", "東京都", "Dantès", "Dante\u0300s",
         "snake_case_name", "v2", "HTTPServer", "the", "ﬁnal", "x"]  # fmt: skip


@pytest.mark.parametrize("kept", [1, 10**9])
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(WORDS), max_size=4), st.lists(st.sampled_from(WORDS), max_size=20)
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_builder_kept_from_segment_to_segment_builds_each_as_a_fresh_one(kept, runs):
    """A worker keeps one builder for the segments it makes (its raw tokens' terms learned once,
    reset past `kept_raws`): each segment's rows and raw-token counts are those of a fresh builder."""
    from collections import Counter

    analyzer, chunk_id = Analyzer(), 0
    kept_builder = SegmentBuilder(analyzer, kept_raws=kept)
    for run in runs:
        fresh = SegmentBuilder(Analyzer(), kept_raws=kept)
        counts = Counter()
        for title, body in run:
            chunk_id += 1
            for builder in (kept_builder, fresh):
                builder.add(chunk_id, " ".join(title), " ".join(body))
            counts.update(set(raw_tokens(" ".join(title))) | set(raw_tokens(" ".join(body))))
        assert kept_builder.raw_chunk_counts() == fresh.raw_chunk_counts() == dict(counts)
        rows = [[term, *(np.asarray(p).tolist() for p in rest)] for term, *rest in kept_builder.rows()]
        assert rows == [[term, *(np.asarray(p).tolist() for p in rest)] for term, *rest in fresh.rows()]
        kept_builder.next_segment()


def test_a_builders_raw_counts_add_up_until_taken_or_until_its_table_is_let_go():
    """The spelling vocabulary's counts are handed on when the run ends or when a segment's end lets
    the builder's table go (past `kept_raws` raw tokens), never lost between segments."""
    builder = SegmentBuilder(Analyzer(), kept_raws=3)
    builder.add(1, "", "alpha beta")
    assert builder.next_segment() == {}  # two raw tokens kept, their counts with them
    builder.add(2, "", "alpha gamma delta")
    assert builder.next_segment() == {"alpha": 2, "beta": 1, "gamma": 1, "delta": 1}
    builder.add(3, "", "alpha")
    builder.next_segment()
    assert builder.raw_chunk_counts() == {"alpha": 1}
    assert builder.raw_chunk_counts() == {}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), max_size=4),
            st.lists(st.sampled_from(WORDS), max_size=30),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_fast_and_slow_paths_give_the_reference_postings(texts):
    chunks = [(i + 1, " ".join(title), " ".join(body)) for i, (title, body) in enumerate(texts)]
    analyzer = Analyzer()
    assert built(analyzer, chunks) == reference(analyzer, chunks, segments.MAX_TF)


def test_term_frequency_cap_keeps_the_first_positions(monkeypatch):
    monkeypatch.setattr(segments, "MAX_TF", 2)
    analyzer = Analyzer()
    got = built(analyzer, CHUNKS)
    assert got == reference(analyzer, CHUNKS, 2)
    assert max(max(parts[1] + parts[2]) for parts in got.values()) == 2


class SegmentTable:
    """Just what merge_plan reads from a store: (segment id, chunks in it), oldest first."""

    def __init__(self, sizes):
        self.sizes = list(enumerate(sizes, 1))

    def segment_sizes(self):
        return self.sizes


def plan(sizes, live=None, max_segments: int = WriterTuning.max_segments):
    live = BitMap(range(sum(sizes))) if live is None else live
    return merge_plan(SegmentTable(sizes), live, max_segments)


def test_merge_plan_folds_the_newest_segments_that_break_the_doubling():
    assert plan([100]) == []
    assert plan([100, 50, 20, 10]) == []  # each at least as big as everything newer
    assert plan([100, 10, 10, 10]) == [2, 3, 4]  # 10 < 20: it and the newer ones
    assert plan([3, 1, 1, 1]) == [2, 3, 4]
    assert plan([3, 3, 1]) == [1, 2, 3]  # 3 < 4: everything
    assert plan([100, 40, 50]) == [2, 3]
    assert plan([100, 60, 50]) == [1, 2, 3]  # 100 < 60 + 50


def test_merge_plan_caps_the_count_and_reclaims_deleted_chunks():
    sizes = [1000, 500, 250, 125]
    assert plan(sizes, max_segments=3) == [3, 4]  # doubling holds, but 4 > 3 segments: the two newest
    assert plan(sizes) == []
    assert plan(sizes, live=BitMap(range(900))) == [1, 2, 3, 4]  # over half deleted: all of them


@pytest.mark.parametrize("workers", [0, 2])
def test_merges_hold_the_same_postings_and_give_their_pages_back(tmp_path, monkeypatch, workers):
    """A merge streams the segments by ranges of terms into one (here or in analysis workers) and the
    freed pages go back to the disk: the merged index answers exactly as one built from the surviving
    files alone, and the database file has no free pages left."""
    import json

    from kenning import Index
    from kenning.indexing import analysis

    monkeypatch.setenv(analysis.WORKERS_ENV, str(workers))
    tuning = WriterTuning(
        flush_chunks=100,  # many segments, then merges
        merge_range_bytes=4000,  # several ranges
    )
    from kenning.store.sqlite import SqliteStore
    from kenning.store.sqlite import postings as sqlite_postings

    monkeypatch.setattr(sqlite_postings, "TERM_MARK_BYTES", 200)  # marks fine enough for such ranges

    cuts: list[int] = []
    term_bounds = SqliteStore.term_bounds
    monkeypatch.setattr(
        SqliteStore, "term_bounds", lambda self, *a: cuts.append(len(b := term_bounds(self, *a))) or b
    )
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(300)]
    parts = [
        "\n".join(
            json.dumps({"_id": f"d{part}-{n}", "title": "", "text": " ".join(rng.choice(words, 40))})
            for n in range(300)
        )
        + "\n"
        for part in range(6)
    ]
    corpus, alone = tmp_path / "corpus", tmp_path / "alone"
    corpus.mkdir()
    alone.mkdir()
    for n, text in enumerate(parts):
        (corpus / f"part-{n}.jsonl").write_text(text)
        if n >= 4:
            (alone / f"part-{n}.jsonl").write_text(text)
    index = Index(tmp_path / "ix")
    index.add([corpus], progress=False, tuning=tuning)
    for n in range(4):  # two thirds of the chunks gone: the next write merges everything
        (corpus / f"part-{n}.jsonl").unlink()
    assert index.add([corpus], progress=False, tuning=tuning).merged_segments
    assert len(index.store.segment_sizes()) == 1 and min(cuts) > 10  # every merge went by ranges
    (segment_id, _), live = index.store.segment_sizes()[0], index.store.read_snapshot().live
    kept = index.store.load_segment(segment_id).doc_ids
    assert set(kept.tolist()) == set(live) and len(kept) == 600
    for posting in index.store.iter_segment_postings(segment_id):  # no posting of a deleted chunk
        assert np.isin(posting[1], kept).all(), posting[0]
    assert index.store.conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    fresh = Index(tmp_path / "fresh")
    fresh.add([alone], progress=False, tuning=tuning)
    for query in ("w1 w7", "w250 w3 w8", '"w5 w6"'):
        merged = [(h.doc_key, h.score) for h in index.search(query, mode="lexical", limit=20).hits]
        assert merged == [(h.doc_key, h.score) for h in fresh.search(query, mode="lexical", limit=20).hits]
    index.close()
    fresh.close()


def test_merge_ranges_cut_from_the_marks_kept_while_writing_are_about_the_budget(tmp_path, monkeypatch):
    """term_bounds of segments this process wrote comes from marks kept while writing them, instead of
    reading every row's length again; the ranges it cuts hold about the budget, as the ranges cut from
    the rows' lengths (a process that did not write the segment) do."""
    import json

    from kenning import Index
    from kenning.store.records import ROW_MEMORY_BYTES
    from kenning.store.sqlite import packs
    from kenning.store.sqlite import postings as sqlite_postings

    monkeypatch.setattr(sqlite_postings, "TERM_MARK_BYTES", 3000)
    monkeypatch.setattr(packs, "PACK_ROW_BYTES", -1)  # every row a row of its own, counted one by one
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(2000)]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "part.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"d{n}", "title": "", "text": " ".join(rng.choice(words, 60))}) + "\n"
            for n in range(400)
        )
    )
    budget = 40_000
    with Index(tmp_path / "ix") as writer:
        writer.add([corpus], progress=False)
        ((segment_id, _),) = writer.store.segment_sizes()
        assert segment_id in writer.store._term_marks
        from_marks = writer.store.term_bounds([segment_id], budget)
    with Index(tmp_path / "ix") as reader:
        assert segment_id not in reader.store._term_marks
        from_rows = reader.store.term_bounds([segment_id], budget)
        sizes = {
            term: size
            for term, size in reader.store.conn.execute(
                "SELECT term, length(ids) + length(tf_title) + length(tf_body) + length(pos_title)"
                f" + length(pos_body) + {ROW_MEMORY_BYTES} FROM postings WHERE segment_id=?",
                (segment_id,),
            )
        }
    for bounds in (from_marks, from_rows):
        edges = [None, *bounds, None]
        held = [
            sum(n for t, n in sizes.items() if (low is None or t >= low) and (high is None or t < high))
            for low, high in zip(edges, edges[1:], strict=False)
        ]
        assert max(held) <= budget + 3000 + max(sizes.values()), held
        assert sum(held) == sum(sizes.values())
    assert abs(len(from_marks) - len(from_rows)) <= 0.2 * len(from_rows) + 1


def test_a_lexical_view_holds_every_chunks_lengths_whatever_the_segments(tmp_path):
    """A view copies a gapless segment's lengths into place and takes the live mask and mean lengths
    from the segments less their deleted chunks; a segment whose ids have gaps (a merge over
    deletions) is scattered id by id. Either way: the same arrays as placing each live chunk's
    lengths one by one."""
    from kenning import Index
    from kenning.indexing.segments import merge_segments

    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(12):
        (docs / f"n{n}.md").write_text(f"# Note {n}\n\n" + " ".join(["alpha beta gamma"] * (n + 1)) + "\n")

    def check(index):
        with index.store.reading():
            view = index.lexical.view()
            live = list(index.store.read_snapshot().live)
            title, body = {}, {}
            for seg_id in view.snapshot.segment_ids:
                seg = index.store.load_segment(seg_id)
                for i, chunk in enumerate(seg.doc_ids.tolist()):
                    title[chunk], body[chunk] = int(seg.title_lens[i]), int(seg.body_lens[i])
            assert sorted(live) == sorted(int(i) for i in np.flatnonzero(view.live_mask))
            assert {c: int(view.title_len[c]) for c in title} == title
            assert {c: int(view.body_len[c]) for c in body} == body
            assert view.avg_title_len == pytest.approx(sum(title[c] for c in live) / len(live))
            assert view.avg_body_len == pytest.approx(sum(body[c] for c in live) / len(live))

    with Index(tmp_path / "ix") as index:
        index.add([docs], progress=False)  # one gapless segment, every chunk live
        check(index)
        for n in (3, 4, 9):
            (docs / f"n{n}.md").unlink()
        index.add([docs], progress=False)  # deleted chunks: gaps in the live set
        check(index)
        (docs / "late.md").write_text("# Late\n\nalpha delta\n")
        index.add([docs], progress=False)  # a second segment
        check(index)
        segment_ids = [seg_id for seg_id, _ in index.store.segment_sizes()]
        assert all(isinstance(index.store.load_segment(s).place, slice) for s in segment_ids)
        with index.store.transaction():
            merge_segments(index.store, index.store.read_snapshot().live)
    with Index(tmp_path / "ix") as index:  # one segment holding its ids one by one
        ((seg_id, _),) = index.store.segment_sizes()
        assert not isinstance(index.store.load_segment(seg_id).place, slice)
        check(index)


def test_a_views_deleted_chunks_come_from_gapless_segments_only_when_they_hold_every_live_one():
    """The deleted chunks are counted from the segments' ranges; a segment with gaps, or a live
    chunk outside every segment, sends the view back to reading the live set whole (None)."""
    from kenning.sidefiles.lengths_file import _dead_ids

    assert _dead_ids([slice(1, 6), slice(6, 9)], BitMap([1, 2, 4, 7, 8])).tolist() == [3, 5, 6]
    assert _dead_ids([slice(1, 6)], BitMap([1, 2, 9])) is None
    assert _dead_ids([slice(1, 6), np.array([7, 9], dtype=np.uint32)], BitMap([1, 7])) is None


@pytest.mark.parametrize("seed", range(6))
def test_a_merge_over_deleted_chunks_by_columns_writes_the_rows_term_by_term_did(seed):
    """Merging stored rows that lose postings goes through flat columns (spill.merge_columns) and
    encodes them at once; the rows are byte for byte those of decoding, filtering and encoding each
    term's parts one by one (the path any other codec takes)."""
    from kenning.store.compact import decode_posting_row, encode_posting_row

    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)] + ["parseQuery", "東京都"]
    parts, chunk_id = [], 0
    for _ in range(int(rng.integers(1, 4))):
        builder = SegmentBuilder(Analyzer())
        for _ in range(int(rng.integers(1, 30))):
            chunk_id += 1
            title = " ".join(rng.choice(words, int(rng.integers(0, 3))))
            builder.add(chunk_id, title, " ".join(rng.choice(words, int(rng.integers(0, 25)))))
        columns = builder.columns()
        parts.append([row for row, _ in segments.encode_posting_rows(columns)] if columns else [])
    dead = np.sort(rng.choice(np.arange(1, chunk_id + 1), int(rng.integers(1, chunk_id + 1)), replace=False))
    by_columns = segments.merge_range(parts, dead, decode_posting_row, encode_posting_row)
    by_term = segments.merge_range(parts, dead, lambda raw: decode_posting_row(raw), encode_posting_row)
    assert by_columns == by_term
    assert all(not np.isin(decode_posting_row(row).ids, dead).any() for row, _ in by_columns)


def test_a_segment_whose_chunks_are_all_deleted_is_dropped_not_merged(tmp_path):
    """When a write leaves none of a segment's chunks live, the segment goes whole (no merge reads
    it); the index answers as one built from the files as they are."""
    from kenning import Index

    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(8):
        (docs / f"n{n}.md").write_text(f"# Note {n}\n\nharbour castle letter number {n}\n")
    with Index(tmp_path / "ix") as index:
        index.add([docs], progress=False)
        (docs / "late.md").write_text("# Late\n\nharbour at night\n")
        index.add([docs], progress=False)  # a second segment: the late note's one chunk
        (late_segment, _) = index.store.segment_sizes()[-1]
        (docs / "late.md").write_text("# Late\n\nharbour at dawn\n")
        report = index.add([docs], progress=False)
        ids = [seg_id for seg_id, _ in index.store.segment_sizes()]
        assert late_segment not in ids and len(ids) == 2 and not report.merged_segments
        got = [(h.doc_key, h.score) for h in index.search("harbour dawn", mode="lexical").hits]
    with Index(tmp_path / "fresh") as fresh:
        fresh.add([docs], progress=False)
        assert got == [(h.doc_key, h.score) for h in fresh.search("harbour dawn", mode="lexical").hits]
