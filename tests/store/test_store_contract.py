"""The store contract: every Store implementation must pass these (the embedded SQLite store and the
PostgreSQL store, on a real server started for the tests: tests/pg_server.py).

Add an implementation to STORES and the whole suite runs against it.
"""

import os
import sqlite3
from dataclasses import dataclass, field

import numpy as np
import pytest
from pyroaring import BitMap

from kenning.store import ChunkHead, StorageError, Store, open_store
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META, RawPostings, SegmentPostings
from kenning.store.sqlite import DB_NAME, SCHEMA_VERSION, SqliteStore


def sqlite_store(request, tmp_path):
    return SqliteStore(tmp_path / "ix")


def postgres_store(request, tmp_path):
    return open_store(request.getfixturevalue("pg_url"))


STORES = {"sqlite": sqlite_store, "postgres": postgres_store}


@pytest.fixture(params=sorted(STORES))
def store(request, tmp_path):
    s = STORES[request.param](request, tmp_path)
    yield s
    s.close()


@dataclass
class Chunk:
    doc_key: str
    title: str
    body: str
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    time: float | None = None
    meta: dict = field(default_factory=dict)


def add_file(store, path="/notes/a.md", collection="notes", chunks=None, kind="markdown"):
    with store.transaction():
        sid = store.upsert_source(path, kind, 10, 1, "hash-" + path, collection)
        ids = store.insert_chunks(sid, [(i, c, f"c{i}-{path}") for i, c in enumerate(chunks or [])])
        store.set_source_chunk_count(sid, len(ids))
    return sid, ids


def test_it_is_a_store(store):
    assert isinstance(store, Store)


def test_transactions_are_atomic_and_count_generations(store):
    g0 = store.generation()
    with pytest.raises(KeyError):
        with store.transaction():
            store.upsert_source("/x.md", "markdown", 1, 1, "h", "default")
            raise KeyError("boom")
    assert store.sources() == [] and store.generation() == g0
    with store.transaction():
        pass  # nothing written: the generation stays, so readers keep their caches
    assert store.generation() == g0
    add_file(store, chunks=[Chunk("a", "A", "alpha")])
    assert store.generation() == g0 + 1
    with pytest.raises(RuntimeError):
        store.set_meta("k", "v")  # a write outside a transaction


def test_sources_and_chunks(store):
    sid, ids = add_file(
        store,
        chunks=[
            Chunk(
                "/notes/a.md", "A > One", "first body", 1, 3, time=100.0, meta={"front_matter": {"k": "v"}}
            ),
            Chunk(
                "/notes/a.md",
                "A > Two",
                "second body",
                4,
                9,
                meta={"conversation": "c1", "message_ids": [1, 2]},
            ),
        ],
    )
    assert [s.path for s in store.sources()] == ["/notes/a.md"] and store.sources()[0].n_chunks == 2
    assert store.source_by_path("/notes/a.md").id == sid and store.source_by_path("/nope") is None
    assert store.sources_by_paths(["/nope", "/notes/a.md"]) == {
        "/notes/a.md": store.source_by_path("/notes/a.md")
    }
    assert store.collections() == {"notes": 1}
    rows = store.chunks_by_ids(ids)
    assert rows[ids[0]].body == "first body" and rows[ids[0]].meta == {"front_matter": {"k": "v"}}
    assert rows[ids[0]].path == "/notes/a.md" and rows[ids[1]].start_line == 4
    heads = store.chunk_heads(ids)
    assert heads[ids[0]] == ChunkHead("/notes/a.md", "A > One", "/notes/a.md", 1, 3, None, 100.0)
    assert heads[ids[0]].title == "A > One"
    both, groups = store.chunk_heads_and_groups(ids)  # what the dedup stage reads at once
    assert both == heads and list(groups) == [ids[1]] and groups[ids[1]].message_ids == [1, 2]
    assert [r.title for r in store.chunks_of_doc("/notes/a.md")] == ["A > One", "A > Two"]
    assert store.chunk_texts(ids) == ["A > One\nfirst body", "A > Two\nsecond body"]
    assert [t[0] for t in store.iter_chunk_texts()] == ids
    assert [h for _, h in store.chunk_hashes(sid)] == ["c0-/notes/a.md", "c1-/notes/a.md"]
    with store.transaction():
        store.move_chunk(ids[1], 5, Chunk("", "", "", 20, 30))
        store.touch_source(sid, 11, 2, "other")
    assert store.chunks_by_ids([ids[1]])[ids[1]].start_line == 20 and store.collections() == {"other": 1}
    with store.transaction():
        store.delete_chunks([ids[0]])
    assert list(store.chunks_by_ids(ids)) == [ids[1]]
    with store.transaction():
        assert store.delete_source(sid) == [ids[1]]
    assert store.sources() == [] and store.chunks_by_ids(ids) == {}
    big = store.chunks_by_ids(list(range(5000)))  # more ids than one IN list takes
    assert big == {}


def test_any_text_comes_back_exactly(store):
    """NUL characters and quotes are kept as written (PostgreSQL's text type refuses NUL: the server
    store keeps titles and bodies as bytes)."""
    odd = "a\x00b '); DROP TABLE chunks; -- \\ % _ \u00e9 \U0001f600" * 30
    _, ids = add_file(store, chunks=[Chunk("d", "T\x00", odd, meta={"k": "\x00'"})])
    row = store.chunks_by_ids(ids)[ids[0]]
    assert (row.title, row.body, row.meta) == ("T\x00", odd, {"k": "\x00'"})
    assert store.chunk_texts(ids) == [f"T\x00\n{odd}"]
    assert list(store.iter_chunk_texts()) == [(ids[0], "T\x00", odd)]


def test_segments_postings_and_positions(store):
    _, ids = add_file(store, chunks=[Chunk("d", "t", "b"), Chunk("d", "t", "b")])
    rows = [
        ("alpha", np.array(ids), np.array([1, 0]), np.array([2, 1]), np.array([0]), np.array([3, 5, 0])),
        (
            "beta",
            np.array(ids[1:]),
            np.array([0]),
            np.array([1]),
            np.array([], dtype=np.uint32),
            np.array([7]),
        ),
    ]
    with store.transaction():
        encoded = (store.posting_encoder(*row) for row in rows)
        seg = store.write_encoded_segment(np.array(ids), np.array([1, 1]), np.array([4, 8]), encoded)
    assert store.segment_sizes() == [(seg, 2)]
    data = store.load_segment(seg)
    assert data.doc_ids.tolist() == ids and data.body_lens.tolist() == [4, 8]
    got = store.load_postings(seg, ["alpha", "beta", "gamma"])
    assert set(got) == {"alpha", "beta"} and isinstance(got["alpha"], RawPostings)
    assert got["alpha"].ids.tolist() == ids and got["alpha"].tf_body.tolist() == [2, 1]
    assert store.load_positions(seg, "alpha", "body").tolist() == [3, 5, 0]
    assert store.load_positions(seg, "gamma", "body") is None
    assert store.posting_counts([seg], ["alpha", "beta", "gamma"]) == {"alpha": 2, "beta": 1, "gamma": 0}
    assert store.posting_counts([], ["alpha"]) == {"alpha": 0}
    every = list(store.iter_segment_postings(seg))
    assert [p.term for p in every] == ["alpha", "beta"] and isinstance(every[0], SegmentPostings)
    assert every[1].pos_body.tolist() == [7]
    assert store.count_terms() == 2
    with store.transaction():  # a merge frees each term range of its segments as it reads it
        store.drop_postings_range([seg], "b", None)
        assert [row[0] for row in store.raw_postings(seg)] == ["alpha"]
        store.drop_postings_range([seg], None, "b")
        assert store.raw_postings(seg) == [] and store.segment_sizes() == [(seg, 2)]
    assert store.count_terms() == 0
    with store.transaction():
        store.drop_segments([seg])
    assert store.segment_sizes() == [] and store.count_terms() == 0
    with pytest.raises(StorageError):
        store.load_segment(seg)


def test_snapshot_meta_and_live(store):
    with store.transaction():
        store.set_meta("analyzer", '{"stem": true}')
        store.set_live(BitMap([1, 5, 9]))
    snap = store.read_snapshot()
    assert list(snap.live) == [1, 5, 9] and snap.analyzer == {"stem": True} and snap.last_commit
    assert store.get_meta("analyzer") == '{"stem": true}' and store.get_meta("missing", 7) == 7
    with store.reading():
        with store.reading():  # nested reads join the outer one
            assert store.generation() == snap.generation


def test_vocabulary(store):
    with store.transaction():
        store.apply_vocabulary({"alpha": 2, "beta": 1})
        store.apply_vocabulary({"beta": -1, "gamma": 0})
    assert store.vocabulary() == {"alpha": 2}


def test_vectors(store):
    _, ids = add_file(store, chunks=[Chunk("d", "A", "one"), Chunk("d", "", "two"), Chunk("d", "A", "one")])
    missing = sorted(store.chunks_missing_vectors("fp"), key=lambda item: item.text)
    assert [item.text for item in missing] == ["A\none", "two"]  # one per distinct text
    assert [item.chunk_ids for item in missing] == [(ids[0], ids[2]), (ids[1],)]  # with its chunks
    with store.transaction():
        store.put_vectors("fp", [item.text_hash for item in missing], np.eye(2, 3, dtype=np.float32))
        store.put_vectors("other", [missing[0][0]], np.ones((1, 3), dtype=np.float32))
    got_ids, matrix = store.chunk_vectors("fp")
    assert got_ids.tolist() == ids and matrix.shape == (3, 3) and matrix.dtype == np.float32
    assert store.count_vectors("fp") == 3 and store.chunks_missing_vectors("fp") == []
    # by id, without reading every vector (a reader beside a saved graph that lacks the newest)
    assert store.vector_chunk_ids("fp").tolist() == ids and store.vector_chunk_ids("other").tolist() != ids
    some = store.vectors_of("fp", [ids[2], ids[1], 10**9])
    assert sorted(some) == [ids[1], ids[2]] and np.array_equal(some[ids[2]], matrix[2])
    with store.transaction():
        store.keep_only_vectors_of("fp")
    assert store.count_vectors("other") == 0
    with store.transaction():
        store.delete_chunks(ids[:1] + ids[2:])
        assert store.drop_orphan_vectors() == 1
    assert store.chunk_vectors("fp")[0].tolist() == [ids[1]]


def test_a_write_that_changes_the_vectors_or_the_live_set_forgets_the_saved_graph(store):
    """kenning.sidefiles.ann: readers trust a saved graph only while the index's record of it stands."""
    _, ids = add_file(store, chunks=[Chunk("d", "A", "one"), Chunk("d", "", "two")])
    missing = store.chunks_missing_vectors("fp")
    changes = [
        lambda: store.put_vectors("fp", [missing[0].text_hash], np.ones((1, 3), dtype=np.float32)),
        lambda: store.set_live(store.read_snapshot().live),
        lambda: store.keep_only_vectors_of("fp"),
    ]
    for change in changes:  # and the record of the vectors it lacks (an embed run writes it again)
        with store.transaction():
            store.set_meta(VECTOR_GRAPH_META, "{}")
            store.set_meta(VECTOR_GRAPH_LACKS_META, "{}")
        assert store.get_meta(VECTOR_GRAPH_META) == store.get_meta(VECTOR_GRAPH_LACKS_META) == "{}"
        with store.transaction():
            change()
        assert store.get_meta(VECTOR_GRAPH_META) is store.get_meta(VECTOR_GRAPH_LACKS_META) is None


def test_metadata_filters(store):
    _, notes = add_file(
        store,
        "/n/a.md",
        "notes",
        [
            Chunk("a", "", "x", time=100.0, meta={"front_matter": {"status": "Final", "tags": ["a", "b"]}}),
            Chunk("a", "", "y", time=200.0, meta={"front_matter": {"status": "draft"}}),
        ],
    )
    add_file(store, "/c/b.py", "code", [Chunk("b", "", "z", time=150.0)], kind="code")
    facets = {f.path: f for f in store.source_facets()}
    assert facets["/c/b.py"].kind == "code" and facets["/n/a.md"].collection == "notes"
    notes_source = facets["/n/a.md"].id
    assert list(store.chunks_matching([notes_source], None, None, [])) == notes
    assert list(store.chunks_matching([notes_source], 150.0, None, [])) == notes[1:]
    assert list(store.chunks_matching([notes_source], None, 150.0, [])) == notes[:1]
    assert list(store.chunks_matching([notes_source], None, None, [("status", "final")])) == notes[:1]
    assert list(store.chunks_matching([notes_source], None, None, [("tags", "b")])) == notes[:1]
    assert list(store.chunks_matching([], None, None, [])) == []
    assert list(store.chunks_matching(None, None, None, [("status", "final")])) == notes[:1]


def test_metadata_filters_read_a_message_window_s_senders_and_conversation(store):
    window = {"conversation": "Family", "senders": ["Alice", "Bob"], "message_ids": ["1", "2"]}
    _, chats = add_file(
        store,
        "/chat/log.jsonl",
        "chats",
        [
            Chunk("Family", "", "Alice: hi\nBob: the airport", time=100.0, meta=window),
            Chunk("work", "", "Carol: late", time=200.0, meta={"conversation": "work", "senders": ["Carol"]}),
            Chunk("n", "", "x", meta={"front_matter": {"sender": "Carol"}}),  # front matter of that key too
        ],
        kind="messages",
    )
    for key in ("sender", "senders", "participant", "Sender"):
        assert list(store.chunks_matching(None, None, None, [(key, "bob")])) == chats[:1]
    assert list(store.chunks_matching(None, None, None, [("sender", "carol")])) == chats[1:]
    assert list(store.chunks_matching(None, None, None, [("conversation", "FAMILY")])) == chats[:1]
    both = [("sender", "alice"), ("conversation", "family")]
    assert list(store.chunks_matching(None, None, None, both)) == chats[:1]
    assert list(store.chunks_matching(None, 150.0, None, [("sender", "bob")])) == []
    assert list(store.chunks_matching(None, None, None, [("message_ids", "1")])) == []  # not a filter key


def test_a_date_range_sees_each_generation_s_chunks(store):
    """A date range is answered from the chunks' times held in memory for the current generation:
    a commit that adds, changes or removes chunks is seen by the next filtered search."""
    a, first = add_file(store, "/n/a.md", "notes", [Chunk("a", "", "x", time=100.0), Chunk("a", "", "y")])
    assert list(store.chunks_matching([a], 50.0, None, [])) == first[:1]  # an undated chunk never matches
    b, second = add_file(store, "/n/b.md", "notes", [Chunk("b", "", "z", time=120.0)])
    assert list(store.chunks_matching([a, b], 50.0, 150.0, [])) == [first[0], second[0]]
    assert list(store.chunks_matching([b], 50.0, 150.0, [])) == second  # a scope is kept
    assert list(store.chunks_matching([a, b], 100.0, 120.0, [])) == first[:1]  # since <= time < before
    assert list(store.chunks_matching(None, 100.0, None, [])) == [first[0], second[0]]  # None: every source
    assert list(store.chunks_matching(None, None, None, [])) == first + second
    for _ in range(2):  # the index's answer, then the times held in memory: the same, duplicates or not
        assert list(store.chunks_matching([b, b, b], 50.0, 150.0, [])) == second
    with store.transaction():
        store.delete_chunks(first)
    assert list(store.chunks_matching([a, b], None, 150.0, [])) == second


def test_an_index_without_the_time_index_gains_it_when_opened_for_writing(tmp_path):
    """The time index only speeds reads up: an index written before it existed keeps its schema
    version and gains the index the first time a kenning that knows it opens it writable."""
    store = SqliteStore(tmp_path / "ix")
    add_file(store, chunks=[Chunk("a", "", "x", time=100.0)])
    store.close()
    conn = sqlite3.connect(tmp_path / "ix" / DB_NAME)
    conn.execute("DROP INDEX chunks_by_time")
    conn.commit()
    conn.close()
    store = SqliteStore(tmp_path / "ix")
    names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "chunks_by_time" in names and store.get_meta("schema_version") == str(SCHEMA_VERSION)
    store.close()


def test_glossary_tables(store):
    with store.transaction():
        g = store.add_glossary_group("", "manual")
        c = store.add_glossary_term(g, "auth", "auth", "canonical", None, "manual", None)
        a = store.add_glossary_term(g, "Login", "login", "pending", "proper noun", "suggest", '{"n": 1}')
    assert [(x.id, x.scope, x.origin) for x in store.glossary_groups()] == [(g, "", "manual")]
    terms = store.glossary_terms()
    assert [t.id for t in terms] == [c, a] and terms[1].evidence == '{"n": 1}' and terms[1].protected
    with store.transaction():
        h = store.add_glossary_group("notes", "suggest")
        store.update_glossary_term(a, "alias")
        store.update_glossary_term(c, "alias", group_id=h)
        store.set_glossary_group_origin(h, "manual")
    by_id = {t.id: t for t in store.glossary_terms()}
    assert by_id[a].status == "alias" and by_id[c].group_id == h
    assert {x.id: x.origin for x in store.glossary_groups()}[h] == "manual"
    with store.transaction():
        store.delete_glossary_term(a)
        store.delete_glossary_group(g)
    assert [x.id for x in store.glossary_groups()] == [h] and [t.id for t in store.glossary_terms()] == [c]


def test_entity_postings_union_compact_and_clear(store):
    with store.transaction():
        store.add_entity_postings({"edmond dantes": ("Edmond Dantès", "name", BitMap([1, 2]))})
        store.add_entity_postings(
            {
                "edmond dantes": ("EDMOND DANTÈS", "name", BitMap([5])),
                "pharaon": ("Pharaon", "name", BitMap([2])),
            }
        )
    held = {p.key: p for p in store.entity_postings()}
    assert set(held["edmond dantes"].docs) == {1, 2, 5} and held["edmond dantes"].surface == "Edmond Dantès"
    with store.transaction():
        gone = store.compact_entities(BitMap([1, 5]))
    held = {p.key: p for p in store.entity_postings()}
    assert gone == 1 and set(held) == {"edmond dantes"} and set(held["edmond dantes"].docs) == {1, 5}
    with store.transaction():
        store.clear()
    assert store.entity_postings() == []


def test_clear_keeps_vectors_and_glossary(store):
    add_file(store, chunks=[Chunk("d", "", "text")])
    with store.transaction():
        store.add_glossary_group("", "manual")
        store.clear()
    assert store.counts()["chunks"] == 0 and store.sources() == [] and len(store.read_snapshot().live) == 0
    assert len(store.glossary_groups()) == 1


def add_together(store, path="/chat/log.jsonl", bodies=()):
    """A chat log's windows, written together as a run writes a file's chunks."""
    return add_file(store, path, "chat", [Chunk(path, "chat", body) for body in bodies], kind="messages")


def stored_blocks(store) -> int:
    with store.reading():
        return int(store._value("SELECT count(*) FROM text_blocks"))


# short bodies, repeated text, every kind of character, an empty one, and one too long to share a block
BODIES = [f"Ana: message {i} — naïve café ß 😀 \ud800 {'again ' * (i % 7)}" for i in range(120)]
BODIES[5] = ""
BODIES[60] = "long " * 5000


def test_bodies_written_together_are_stored_in_blocks_and_read_back_exactly(store):
    sid, ids = add_together(store, bodies=BODIES)
    assert 1 <= stored_blocks(store) < len(BODIES) // 10  # 16 KB blocks, not a row each
    rows = store.chunks_by_ids(ids)
    assert [rows[i].body for i in ids] == BODIES
    assert store.chunk_texts(ids[:3]) == [f"chat\n{b}" for b in BODIES[:3]]
    assert {cid: body for cid, _, body in store.iter_chunk_texts()} == dict(zip(ids, BODIES, strict=True))
    assert [r.body for r in store.chunks_of_doc("/chat/log.jsonl")] == BODIES
    assert [body for _, _, _, body, _ in store.iter_chunk_hashes()] == BODIES  # what `verify` reads


def test_a_block_goes_with_the_last_chunk_that_reads_it(store):
    sid, ids = add_together(store, bodies=BODIES[:40])
    other, _ = add_together(store, path="/chat/other.jsonl", bodies=BODIES[40:60])
    blocks = stored_blocks(store)
    with store.transaction():
        store.delete_chunks(ids[:-1])
    assert stored_blocks(store) == blocks and store.chunks_by_ids(ids[-1:])[ids[-1]].body == BODIES[39]
    with store.transaction():
        store.delete_chunks(ids[-1:])
    assert stored_blocks(store) == blocks - 1
    with store.transaction():
        store.delete_source(other)
    assert stored_blocks(store) == 0
    add_together(store, bodies=BODIES[:40])
    with store.transaction():
        store.clear()
    assert stored_blocks(store) == 0


def test_a_chunk_whose_document_is_its_file_reads_its_path_as_its_key(store):
    _, of_file = add_file(
        store, path="/notes/a.md", chunks=[Chunk("/notes/a.md", "A", "one"), Chunk("/notes/a.md", "A", "two")]
    )
    _, named = add_file(
        store, path="/corpus.jsonl", chunks=[Chunk("doc-7", "T", "seven"), Chunk("/notes/a.md", "U", "x")]
    )
    with store.reading():
        stored = dict(store._run("SELECT id, doc_key FROM chunks").fetchall())
    assert [stored[i] for i in of_file] == ["", ""] and [stored[i] for i in named] == ["doc-7", "/notes/a.md"]
    rows = store.chunks_by_ids([*of_file, *named])
    assert [rows[i].doc_key for i in [*of_file, *named]] == [
        "/notes/a.md",
        "/notes/a.md",
        "doc-7",
        "/notes/a.md",
    ]
    assert [h.doc_key for h in store.chunk_heads(of_file).values()] == ["/notes/a.md"] * 2
    # a key another file's chunk names, and a file's own chunks: both found, in file order
    assert [r.body for r in store.chunks_of_doc("/notes/a.md")] == ["one", "two", "x"]
    assert [r.body for r in store.chunks_of_doc("doc-7")] == ["seven"] and store.chunks_of_doc("") == []
    assert store.counts()["documents"] == 2


def test_a_chat_windows_message_ids_are_stored_once_and_read_back(store):
    plain = {
        "conversation": "c",
        "message_ids": ["m1", "m2"],
        "senders": ["Ana"],
        "messages": [["m1", 0, 1], ["m2", 0, 2]],
    }
    collapsed = {
        "conversation": "c",
        "message_ids": ["m1", "m2", "m3"],
        "messages": [["m1", 0, 1], ["m3", 0, 3]],
    }
    _, ids = add_file(
        store,
        path="/c.jsonl",
        chunks=[Chunk("/c.jsonl", "c", "x", meta=plain), Chunk("/c.jsonl", "c", "y", meta=collapsed)],
    )
    with store.reading():
        stored = dict(store._run("SELECT id, meta FROM chunks").fetchall())
    # the lines' own ids are not written twice; a line that stands for a run of repeats keeps them all
    assert "message_ids" not in stored[ids[0]] and "message_ids" in stored[ids[1]]
    rows = store.chunks_by_ids(ids)
    assert rows[ids[0]].meta == plain and rows[ids[1]].meta == collapsed
    groups = store.chunk_heads_and_groups(ids)[1]
    assert groups[ids[0]].message_ids == ["m1", "m2"] and groups[ids[1]].message_ids == ["m1", "m2", "m3"]


# ------------------------------------------------------------------------------------------ sqlite only
def test_an_older_schema_is_migrated_forward(tmp_path):
    store = SqliteStore(tmp_path / "ix")
    with store.transaction():
        store.add_glossary_group("", "manual")
    store.close()
    conn = sqlite3.connect(tmp_path / "ix" / DB_NAME)  # make it look like a version 3 index
    conn.execute("DROP TABLE glossary_terms")
    conn.execute("DROP TABLE glossary_groups")
    conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    store = open_store(tmp_path / "ix")
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION) and store.glossary_groups() == []
    store.close()


def test_a_newer_or_much_older_schema_is_refused(tmp_path):
    SqliteStore(tmp_path / "ix").close()
    conn = sqlite3.connect(tmp_path / "ix" / DB_NAME)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    with pytest.raises(StorageError, match="newer kenning"):
        SqliteStore(tmp_path / "ix")
    with pytest.raises(StorageError, match="newer kenning"):
        SqliteStore(tmp_path / "ix", rebuild_outdated=True)  # never thrown away silently
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="older kenning.*--force"):
        SqliteStore(tmp_path / "ix")
    SqliteStore(tmp_path / "ix", rebuild_outdated=True).close()  # --force rebuilds it
    assert SqliteStore(tmp_path / "ix").get_meta("schema_version") == str(SCHEMA_VERSION)


def test_no_index_is_a_clear_error(tmp_path):
    with pytest.raises(StorageError, match="no kenning index"):
        SqliteStore(tmp_path / "none", create=False)


def test_an_index_from_before_text_blocks_reads_as_it_is_and_writes_blocks_once_upgraded(
    tmp_path, monkeypatch
):
    store = SqliteStore(tmp_path / "ix")
    _, old = add_file(store, chunks=[Chunk("a", "A", "kept in its row")])
    store.close()
    conn = sqlite3.connect(tmp_path / "ix" / DB_NAME)  # make it look like a version 10 index
    conn.execute("DROP TABLE text_blocks")
    for column in ("block", "block_start", "block_end"):
        conn.execute(f"ALTER TABLE chunks DROP COLUMN {column}")
    conn.execute("UPDATE meta SET value='10' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    real_access = os.access  # a folder that cannot be written (root writes anywhere: marked so)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: mode != os.W_OK and real_access(p, mode, **kw))
    reader = SqliteStore(tmp_path / "ix")
    assert reader.read_only and reader.chunks_by_ids(old)[old[0]].body == "kept in its row"
    monkeypatch.setattr(os, "access", real_access)
    store = SqliteStore(tmp_path / "ix")
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    _, new = add_together(store, bodies=BODIES[:30])
    rows = store.chunks_by_ids([*old, *new])
    assert rows[old[0]].body == "kept in its row" and [rows[i].body for i in new] == BODIES[:30]
    assert stored_blocks(store) == 1
    store.close()
    with reader.reading():  # the reader opened before the upgrade reads the blocks written after it
        assert [reader.chunks_by_ids(new)[i].body for i in new] == BODIES[:30]
    reader.close()
