"""The SQLite schema, under one version number, and the forward migrations between versions.

Tables:
- `meta`: schema version, analyzer settings, the `live` bitmap, the commit generation and time.
- `sources`: one row per indexed file (path, size, mtime, content hash) for incremental re-indexing.
- `chunks`: the retrievable pieces with their raw text and provenance. Ids are never reused.
- `text_blocks`: the bodies of chunks written together, compressed in blocks; a chunk's row names
  its block and byte range, or holds its body itself (kenning.store.text_blocks).
- `segments` + `postings`: immutable inverted-index segments, with per-field term frequencies and
  token positions; each segment carries a checksum of all it holds (kenning.store.checksum).
  Deleting a chunk only removes it from the `live` bitmap; merges drop dead postings. `postings`
  is a rowid table: its rows are large (a common term's ids run to tens of kilobytes), and SQLite
  appends such rows to a rowid table at about three times the rate of a WITHOUT ROWID one, whose
  every page split rebalances its neighbours, and looks them up faster too (8.7 against 13.8 us a
  row on a 20k-chunk segment). Indexes written with the older WITHOUT ROWID table read the same.
  A segment's short rows are kept many to a row of `posting_packs` instead, keyed by their first
  term (kenning.store.sqlite.packs): a term is in one or the other.
- `embeddings`: one vector per (hash of the embedded text, embedder fingerprint).
- `vocabulary`: folded surface words with document frequencies, for spelling suggestions.
- `glossary_groups` + `glossary_terms`: the curated alias groups.
- `entities`: one roaring bitmap of chunk ids per entity key, for the entity graph.
- `substrings` (optional, `kenning index --substring-index`): an FTS5 trigram table over every
  chunk's casefolded text, for the substring signal (kenning.store.sqlite.substrings).

A newer kenning migrates an older index forward in one transaction; an index written by a newer
kenning than this one is refused with a message that says so.
"""

from __future__ import annotations

import numpy as np

from kenning.store.checksum import posting_digest, segment_checksum
from kenning.store.compact import decode_segment, unpack_frequencies, unpack_ids, unpack_positions

SCHEMA_VERSION = 12
READS_UNCHANGED_FROM = 10  # an index of this version or later reads without migrating (read-only)
OLDEST_MIGRATABLE = 3  # versions before this one changed the layout of the postings: rebuild them

TABLES = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    collection TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    indexed_at REAL NOT NULL,
    n_chunks INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    doc_key TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    start_line INTEGER,
    end_line INTEGER,
    page INTEGER,
    time REAL,
    meta TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    text_hash TEXT NOT NULL DEFAULT '',
    block INTEGER,
    block_start INTEGER,
    block_end INTEGER
);
CREATE TABLE IF NOT EXISTS text_blocks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    first_chunk INTEGER NOT NULL,
    last_chunk INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks(source_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_key);
CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks(time, source_id);
CREATE TABLE IF NOT EXISTS segments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    n_docs INTEGER NOT NULL,
    doc_ids BLOB NOT NULL,
    title_lens BLOB NOT NULL,
    body_lens BLOB NOT NULL,
    checksum TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS embeddings (
    text_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (text_hash, fingerprint)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vocabulary (word TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS postings (
    segment_id INTEGER NOT NULL,
    term TEXT NOT NULL,
    ids BLOB NOT NULL,
    tf_title BLOB NOT NULL,
    tf_body BLOB NOT NULL,
    pos_title BLOB NOT NULL,
    pos_body BLOB NOT NULL,
    PRIMARY KEY (segment_id, term)
);
CREATE TABLE IF NOT EXISTS posting_packs (
    segment_id INTEGER NOT NULL,
    first_term TEXT NOT NULL,
    last_term TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (segment_id, first_term)
);
"""
    + """
CREATE TABLE IF NOT EXISTS glossary_groups (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL DEFAULT '',
    origin TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS glossary_terms (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    group_id INTEGER NOT NULL,
    surface TEXT NOT NULL,
    key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('canonical', 'alias', 'pending', 'rejected')),
    protected TEXT,
    origin TEXT NOT NULL,
    evidence TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    UNIQUE (group_id, key)
);
CREATE INDEX IF NOT EXISTS glossary_terms_by_key ON glossary_terms(key);
CREATE TABLE IF NOT EXISTS entities (
    key TEXT PRIMARY KEY,
    surface TEXT NOT NULL,
    kind TEXT NOT NULL,
    docs BLOB NOT NULL
) WITHOUT ROWID;
"""
)


# indexes that only speed reads up: created when a kenning that knows them opens an index it may write
# (an older kenning keeps them up to date, as SQLite does; an index that cannot be written reads the
# same without them), so they need no new schema version
READ_INDEXES = {"chunks_by_time": "CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks(time, source_id)"}


def statements(script: str) -> list[str]:
    return [s for s in script.split(";") if s.strip()]


def _v3_to_v4(execute) -> None:
    """Version 4 puts the glossary tables under the schema version (version 3 created them lazily,
    on the first glossary write): create them where they are missing. Nothing else changed."""
    for statement in statements(TABLES):
        if "glossary" in statement:
            execute(statement)


def _v4_to_v5(execute) -> None:
    """Version 5 gives every segment a checksum (kenning.store.checksum), computed here for the
    segments an older kenning wrote."""
    if "checksum" not in {row[1] for row in execute("PRAGMA table_info(segments)")}:
        execute("ALTER TABLE segments ADD COLUMN checksum TEXT NOT NULL DEFAULT ''")
    segments = execute("SELECT id, n_docs, doc_ids, title_lens, body_lens FROM segments").fetchall()
    for seg_id, *stored in segments:
        rows = execute(
            "SELECT term, ids, tf_title, tf_body, pos_title, pos_body FROM postings WHERE segment_id=?",
            (seg_id,),
        )
        digests = [(term, posting_digest(term, *_unpack_row(*blobs))) for term, *blobs in rows]
        segment = decode_segment(seg_id, stored)
        columns = (segment.doc_ids, segment.title_lens, segment.body_lens)
        execute("UPDATE segments SET checksum=? WHERE id=?", (segment_checksum(*columns, digests), seg_id))


def _v5_to_v6(execute) -> None:
    """Version 6 adds the entity postings; the next `kenning index` extracts the chunks' entities
    (the writer notices that no extractor version is recorded)."""
    for statement in statements(TABLES):
        if "entities" in statement:
            execute(statement)


def _v6_to_v7(execute) -> None:
    """Version 7 may hold the optional substring index, which every chunk write must keep in step:
    nothing changes in an older index, but a kenning that does not know the table must not write to
    an index that has it, so the version moves on."""


def _v7_to_v8(execute) -> None:
    """Version 8 writes chunk bodies compressed with zstd, which a kenning that knows only zlib
    cannot read: nothing changes in an older index (its zlib bodies still read), but the version
    moves on so an older kenning refuses the index instead of failing on its bodies."""


def _v8_to_v9(execute) -> None:
    """Version 9 stores a segment whose chunk ids run without a gap as its first and last id
    (kenning.store.compact.pack_doc_ids), which an older kenning would read as two ids: nothing
    changes in an older index (explicit ids still read), but the version moves on."""


def _v9_to_v10(execute) -> None:
    """Version 10 packs a segment's short posting rows (kenning.store.sqlite.packs), which an older
    kenning would not find: the older segments keep their rows (they read the same), the table is
    created, and the version moves on."""
    for statement in statements(TABLES):
        if "posting_packs" in statement:
            execute(statement)


def _v10_to_v11(execute) -> None:
    """Version 11 stores the bodies of chunks written together in compressed blocks, which an older
    kenning would read as empty: the columns and the table are added (the bodies already stored
    stay in their rows and read the same), and the version moves on."""
    columns = {row[1] for row in execute("PRAGMA table_info(chunks)")}
    for column in ("block", "block_start", "block_end"):
        if column not in columns:
            execute(f"ALTER TABLE chunks ADD COLUMN {column} INTEGER")
    for statement in statements(TABLES):
        if "text_blocks" in statement:
            execute(statement)


def _v11_to_v12(execute) -> None:
    """Version 12 packs a posting row's chunk ids by their gaps (kenning.store.compact.pack_ids) and
    keeps positions below 256 in one byte each, which an older kenning would read as damaged: nothing
    changes in an older index (its rows still read), but the version moves on."""


def _unpack_row(ids, tf_title, tf_body, pos_title, pos_body) -> tuple:
    """A stored posting row's arrays, in whichever width each column was written (.compact)."""
    ids = unpack_ids(ids, (tf_title, tf_body))
    tft, tfb = unpack_frequencies(tf_title, len(ids)), unpack_frequencies(tf_body, len(ids))
    return (
        ids,
        tft,
        tfb,
        unpack_positions(pos_title, int(tft.sum(dtype=np.int64))),
        unpack_positions(pos_body, int(tfb.sum(dtype=np.int64))),
    )


# from version -> a step to the next version
MIGRATIONS = {
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
    9: _v9_to_v10,
    10: _v10_to_v11,
    11: _v11_to_v12,
}
