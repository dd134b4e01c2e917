"""The PostgreSQL schema: the same tables as the embedded store, in one PostgreSQL schema per index.

Postings, segments and vectors hold exactly what the embedded store holds (the postings in the
same packed columns, kenning.store.compact), so BM25 statistics, the funnel and explain are
computed by the same code on the same numbers and rankings match the embedded engine.

Kept ready for distribution across servers (Citus-style hash distribution, or partitioning):
- `chunks` is keyed by (source_id, id), so it can be distributed by document (`source_id`);
- `postings` by (segment_id, term), distributed by segment; `embeddings` by (text_hash, fingerprint);
- no foreign keys and no unique constraint that leaves out those columns; chunk ids come from a
  sequence, never from a scan of the table;
- the small tables (meta, sources, segments, vocabulary, glossary, entities) can be reference tables.
See docs/postgres.md.
"""

from __future__ import annotations

SCHEMA_VERSION = 3
# what each version adds to the one before, run in order on an older index opened for writing
# (2: chunk bodies in compressed blocks, kenning.store.text_blocks; the bodies stored before stay
# in their rows and read the same; 3: posting rows' chunk ids packed by their gaps and positions
# below 256 in one byte each (kenning.store.compact), which an older kenning would read as damaged:
# no statement, the rows stored before read the same)
UPGRADES = {
    2: (
        "ALTER TABLE chunks ADD COLUMN IF NOT EXISTS block bigint",
        "ALTER TABLE chunks ADD COLUMN IF NOT EXISTS block_start integer",
        "ALTER TABLE chunks ADD COLUMN IF NOT EXISTS block_end integer",
        "CREATE TABLE IF NOT EXISTS text_blocks (id bigserial PRIMARY KEY, first_chunk bigint NOT NULL,"
        " last_chunk bigint NOT NULL, data bytea NOT NULL)",
    ),
    3: (),
}

# statements run in order inside the index's own schema (search_path); {schema} is validated
TABLES = """
CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value bytea, is_text boolean NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    id bigserial PRIMARY KEY,
    path text UNIQUE NOT NULL,
    collection text NOT NULL DEFAULT '',
    kind text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    content_hash text NOT NULL,
    indexed_at double precision NOT NULL,
    n_chunks integer NOT NULL DEFAULT 0
);
CREATE SEQUENCE IF NOT EXISTS chunk_ids;
CREATE TABLE IF NOT EXISTS chunks (
    id bigint NOT NULL DEFAULT nextval('chunk_ids'),
    source_id bigint NOT NULL,
    ordinal integer NOT NULL,
    doc_key text NOT NULL,
    title bytea NOT NULL,
    body bytea NOT NULL,
    start_line integer,
    end_line integer,
    page integer,
    time double precision,
    meta text NOT NULL,
    facets jsonb NOT NULL DEFAULT '{}',
    content_hash text NOT NULL,
    text_hash text NOT NULL,
    block bigint,
    block_start integer,
    block_end integer,
    PRIMARY KEY (source_id, id)
);
CREATE TABLE IF NOT EXISTS text_blocks (
    id bigserial PRIMARY KEY,
    first_chunk bigint NOT NULL,
    last_chunk bigint NOT NULL,
    data bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_id ON chunks(id);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_key);
CREATE INDEX IF NOT EXISTS chunks_by_text ON chunks(text_hash);
CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks(source_id, time);
CREATE INDEX IF NOT EXISTS chunks_by_time_alone ON chunks(time);
CREATE INDEX IF NOT EXISTS chunks_by_facet ON chunks USING gin (facets jsonb_path_ops);
CREATE TABLE IF NOT EXISTS segments (
    id bigserial PRIMARY KEY,
    created double precision NOT NULL,
    n_docs integer NOT NULL,
    doc_ids bytea NOT NULL,
    title_lens bytea NOT NULL,
    body_lens bytea NOT NULL,
    checksum text NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS postings (
    segment_id bigint NOT NULL,
    term text COLLATE "C" NOT NULL,
    ids bytea NOT NULL,
    tf_title bytea NOT NULL,
    tf_body bytea NOT NULL,
    pos_title bytea NOT NULL,
    pos_body bytea NOT NULL,
    PRIMARY KEY (segment_id, term)
);
CREATE TABLE IF NOT EXISTS embeddings (
    text_hash text NOT NULL,
    fingerprint text NOT NULL,
    vector vector NOT NULL,
    PRIMARY KEY (text_hash, fingerprint)
);
CREATE TABLE IF NOT EXISTS vocabulary (word text COLLATE "C" PRIMARY KEY, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS glossary_groups (
    id bigserial PRIMARY KEY,
    scope text NOT NULL DEFAULT '',
    origin text NOT NULL,
    created double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS glossary_terms (
    id bigserial PRIMARY KEY,
    group_id bigint NOT NULL,
    surface text NOT NULL,
    key text NOT NULL,
    status text NOT NULL CHECK (status IN ('canonical', 'alias', 'pending', 'rejected')),
    protected text,
    origin text NOT NULL,
    evidence text,
    created double precision NOT NULL,
    updated double precision NOT NULL,
    UNIQUE (group_id, key)
);
CREATE INDEX IF NOT EXISTS glossary_terms_by_key ON glossary_terms(key);
CREATE TABLE IF NOT EXISTS entities (
    key text COLLATE "C" PRIMARY KEY,
    surface text NOT NULL,
    kind text NOT NULL,
    docs bytea NOT NULL
)
"""

# every table of an index: what `size_on_disk` counts and `engine_problems` looks for
ALL_TABLES = (
    "meta",
    "sources",
    "chunks",
    "text_blocks",
    "segments",
    "postings",
    "embeddings",
    "vocabulary",
    "glossary_groups",
    "glossary_terms",
    "entities",
    "substrings",
)


def statements() -> list[str]:
    return [s.strip() for s in TABLES.split(";") if s.strip()]
