"""The PostgreSQL store end to end, on a real PostgreSQL 18 + pgvector started for the tests
(tests/pg_server.py, or $KENNING_TEST_PG_URL): the same rankings and explanations as the embedded
store, the command line, hostile input, and the clear errors."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import psycopg
import pytest
from locations import SHARED_DATA

from kenning import Index
from kenning.store import StorageError, open_store
from kenning.store.compact import unpack_frequencies
from kenning.store.postgres import SCHEMA_VERSION

CRANFIELD = SHARED_DATA / "cranfield"


def beir_subset(root: Path, n_docs: int, n_queries: int) -> tuple[Path, list[str]]:
    """The first documents and queries of cranfield, as one BEIR corpus file."""
    lines = (CRANFIELD / "corpus.jsonl").read_text().splitlines()[:n_docs]
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    queries = [
        json.loads(q)["text"] for q in (CRANFIELD / "queries.jsonl").read_text().splitlines()[:n_queries]
    ]
    return root / "corpus.jsonl", queries


def ranking(index, query, mode, **kw):
    response = index.search(query, mode=mode, limit=10, **kw)
    return [(hit.doc_key, round(hit.score, 9)) for hit in response.hits], response


@pytest.mark.skipif(not CRANFIELD.is_dir(), reason="needs ../shared/data/cranfield beside the checkout")
def test_rankings_and_explanations_match_the_embedded_store(tmp_path, pg_url):
    corpus, queries = beir_subset(tmp_path / "beir", 160, 25)
    with Index(tmp_path / "ix") as embedded, Index(pg_url) as server:
        for index in (embedded, server):
            report = index.add([corpus])
            assert report.chunks_added == 160 and not report.errors
            index.embed()
        assert server.status()["chunks"] == embedded.status()["chunks"] == 160
        for query in queries:
            for mode in ("lexical", "dense", "hybrid"):
                mine, response = ranking(server, query, mode, explain=mode == "lexical")
                theirs, expected = ranking(embedded, query, mode, explain=mode == "lexical")
                assert mine == theirs, (query, mode)
                if mode == "lexical":  # the funnel and every term's contribution, the same numbers
                    mine_d, theirs_d = response.to_dict(), expected.to_dict()
                    mine_d["funnel"].pop("timings_ms"), theirs_d["funnel"].pop("timings_ms")
                    assert mine_d["funnel"] == theirs_d["funnel"]
                    assert [h["explain"] for h in mine_d["hits"]] == [h["explain"] for h in theirs_d["hits"]]


def test_files_change_and_go_as_in_the_embedded_store(tmp_path, pg_url):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    (notes / "b.md").write_text("# Tyres\n\nThe car needs new tyres.\n")
    with Index(pg_url) as index:
        index.add([notes])
        assert [h.path.endswith("a.md") for h in index.search("signing keys", mode="lexical").hits] == [True]
        (notes / "a.md").write_text("# Keys\n\nKeys are rotated by the release pipeline now.\n")
        (notes / "b.md").unlink()
        report = index.add([notes])
        assert report.files_removed == 1
        assert index.search("signing", mode="lexical").hits == []
        assert index.search("release pipeline", mode="lexical").hits
        assert index.search("tyres", mode="lexical").hits == []
        assert index.status()["sources"] == 1


def test_hostile_text_and_queries_are_data_not_sql(tmp_path, pg_url):
    """Whatever a document or a query holds goes to the server as a parameter: it is stored and read
    back exactly, and no table is touched (NUL and unpaired surrogates: the store contract)."""
    hostile = "# x'); DROP TABLE chunks; --\n\nRobert'); DELETE FROM sources; -- said \\ % _ $1 ? \u00e9\n"
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "drop.md").write_text(hostile, encoding="utf-8")
    with Index(pg_url) as index:
        report = index.add([folder])
        assert not report.errors, report.errors
        for query in ("Robert'); DELETE FROM sources; --", "%", "_", "$1", "\\", "'; SELECT pg_sleep(5); --"):
            index.search(query, mode="lexical")
        hits = index.search("robert", mode="lexical").hits
        assert len(hits) == 1
        chunk = index.store.chunks_by_ids([hits[0].id])[hits[0].id]
        assert chunk.body.strip() == hostile.strip() and chunk.title == "x'); DROP TABLE chunks; --"
        assert index.status()["sources"] == 1 and index.status()["chunks"] == 1


def test_clear_errors_and_no_password_in_them(tmp_path, pg_server):
    with pytest.raises(StorageError, match="no kenning index in schema 'absent'"):
        open_store(pg_server.url("absent"), create=False)
    with pytest.raises(StorageError, match="not a plain lower-case name"):
        open_store(pg_server.url("Bad;Name"))
    with pytest.raises(StorageError) as caught:
        open_store("postgresql://kenning:s3cret@127.0.0.1:1/db?schema=x", create=True)
    assert "cannot connect" in str(caught.value) and "s3cret" not in str(caught.value)


def test_the_command_line_takes_a_store_url(tmp_path, pg_url):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    run = lambda *args, **env: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "kenning.surfaces.entry", *args], capture_output=True, text=True, cwd=tmp_path
    )
    indexed = run("index", str(notes), "--store", pg_url, "--no-embed", "--json")
    assert indexed.returncode == 0, indexed.stderr
    found = run("search", "signing keys", "--store", pg_url, "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert len(hits) == 1 and hits[0]["path"].endswith("a.md")
    status = json.loads(run("status", "--store", pg_url, "--json").stdout)
    assert status["index"].startswith("postgresql://") and status["chunks"] == 1


def _superuser(url):
    import psycopg

    from kenning.store.postgres import parse_location

    conn = psycopg.connect(parse_location(url).conninfo, autocommit=True)
    if not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
        conn.close()
        pytest.skip(
            "the server given by $KENNING_TEST_PG_URL is not reached as a superuser: no roles to make"
        )
    return conn


@pytest.mark.parametrize("setup", ["may create schemas", "owns a schema made for it"])
def test_a_role_with_only_the_privileges_the_readme_lists(tmp_path, pg_server, setup):
    """README, "On PostgreSQL": CONNECT on the database and CREATE on it (or a schema of its own), with
    pgvector installed once by an administrator. Without pgvector kenning says who must install it;
    with it, such a role indexes, embeds and searches."""
    import psycopg

    from kenning.store.postgres import parse_location

    admin = _superuser(pg_server.url())
    tag = f"{'c' if setup.startswith('may') else 'o'}{abs(hash(str(tmp_path))) % 10**8}"
    role, database, schema = f"role_{tag}", f"db_{tag}", f"s_{tag}"
    admin.execute(f'CREATE ROLE "{role}" LOGIN')
    admin.execute(f'CREATE DATABASE "{database}"')
    admin.execute(f'GRANT CONNECT ON DATABASE "{database}" TO "{role}"')
    base = parse_location(pg_server.url()).conninfo
    in_db = psycopg.connect(base.rsplit("/", 1)[0] + f"/{database}", autocommit=True)
    if setup == "may create schemas":
        admin.execute(f'GRANT CREATE ON DATABASE "{database}" TO "{role}"')
    else:
        in_db.execute(f'CREATE SCHEMA "{schema}" AUTHORIZATION "{role}"')
    url = base.rsplit("/", 1)[0].replace("://kenning@", f"://{role}@") + f"/{database}?schema={schema}"
    with pytest.raises(StorageError, match="ask an administrator to run `CREATE EXTENSION vector;`"):
        open_store(url)
    in_db.execute("CREATE EXTENSION vector")  # the administrator's one step
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    with Index(url) as index:
        assert not index.add([notes]).errors
        index.embed()
        assert index.search("signing keys", mode="hybrid").hits
    flags = admin.execute(
        "SELECT rolsuper OR rolcreatedb OR rolcreaterole FROM pg_roles WHERE rolname = %s", (role,)
    ).fetchone()
    assert flags == (False,)
    in_db.close()
    admin.close()


def test_an_index_from_before_text_blocks_serves_a_role_that_may_not_alter_it(tmp_path, pg_server):
    """An index an older kenning made (schema 1, bodies in their rows) and a role granted only to read
    and write its rows: kenning cannot upgrade it, so it reads and writes it as it is; once its owner
    upgrades it, the role's long-lived process reads the bodies written in blocks."""
    from kenning.store.postgres import parse_location

    admin = _superuser(pg_server.url())
    role = f"rows_{abs(hash(str(tmp_path))) % 10**8}"
    owner_url = pg_server.url()
    schema = owner_url.rsplit("schema=", 1)[1]
    open_store(owner_url).close()
    conninfo = parse_location(owner_url).conninfo
    with psycopg.connect(conninfo, autocommit=True) as owner:  # as an older kenning left it
        owner.execute(f'SET search_path TO "{schema}"')
        owner.execute("DROP TABLE text_blocks")
        owner.execute("ALTER TABLE chunks DROP COLUMN block, DROP COLUMN block_start, DROP COLUMN block_end")
        owner.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        owner.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        for grant in ("SELECT, INSERT, UPDATE, DELETE ON TABLES", "USAGE, SELECT, UPDATE ON SEQUENCES"):
            owner.execute(f'GRANT {grant.replace(" ON ", " ON ALL ")} IN SCHEMA "{schema}" TO "{role}"')
            owner.execute(f'ALTER DEFAULT PRIVILEGES IN SCHEMA "{schema}" GRANT {grant} TO "{role}"')
    role_url = owner_url.replace("://kenning@", f"://{role}@")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Keys\n\nRotate the signing keys.\n\n## Old\n\nRetire the old keys.\n")
    with Index(role_url) as served:
        assert served.store.text_blocks is False  # not upgraded: the role may not alter the tables
        assert not served.add([notes]).errors
        assert [r.body.split("\n")[-1] for r in served.get(str(notes / "a.md"))][-1] == "Retire the old keys."
        with psycopg.connect(conninfo) as owner:  # written as an older kenning writes: it may read them too
            keys = owner.execute(f'SELECT doc_key FROM "{schema}".chunks').fetchall()
            assert keys == [(str(notes / "a.md"),)] * 2
            rows = owner.execute(f'SELECT ids, tf_body, pos_body FROM "{schema}".postings').fetchall()
            assert rows and all(len(ids) % 4 == 0 for ids, _, _ in rows)  # ids four bytes each, not packed
            counts = [int(unpack_frequencies(bytes(tf), len(ids) // 4).sum()) for ids, tf, _ in rows]
            assert [len(pos) for _, _, pos in rows] == [2 * n for n in counts]  # positions two bytes each
        (notes / "b.md").write_text("# Tyres\n\nChange the tyres.\n\n## Oil\n\nChange the oil too.\n")
        with Index(owner_url) as owned:  # the owner's kenning upgrades it, then writes blocks
            assert owned.store.get_meta("schema_version") == str(SCHEMA_VERSION)
            assert not owned.add([notes]).errors
        assert served.get(str(notes / "b.md"))[-1].body.endswith("Change the oil too.")
        assert served.search("oil", mode="lexical").hits[0].snippet
    with psycopg.connect(conninfo, autocommit=True) as owner:  # back to schema 1, then a forced rebuild
        owner.execute(f'SET search_path TO "{schema}"')
        owner.execute("DROP TABLE text_blocks")
        owner.execute("ALTER TABLE chunks DROP COLUMN block, DROP COLUMN block_start, DROP COLUMN block_end")
        owner.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with Index(role_url) as kept:
        assert kept.store.text_blocks is False
        assert not kept.add([notes], force=True).errors
        assert kept.get(str(notes / "b.md"))[-1].body.endswith("Change the oil too.")
    admin.close()


def test_a_restored_index_is_not_read_through_blocks_held_from_before(tmp_path, pg_url):
    """Block ids come again when a schema is restored from a backup (its sequences go back with
    it): a long-lived process that held a block of that id reads the restored one, not its own."""
    from kenning.store.postgres import parse_location

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# One\n\nalpha text.\n\n## Two\n\nbeta text.\n")
    schema = pg_url.rsplit("schema=", 1)[1]
    with Index(pg_url) as served:
        served.add([notes])
        (notes / "a.md").write_text("# One\n\ngamma text.\n\n## Two\n\ndelta text.\n")
        served.add([notes])  # the later generation the backup lacks
        assert served.get(str(notes / "a.md"))[-1].body.endswith("delta text.")
        with psycopg.connect(parse_location(pg_url).conninfo, autocommit=True) as db:  # the restore
            db.execute(f'SET search_path TO "{schema}"')
            db.execute(
                "UPDATE text_blocks SET data = %s",
                (zstd_frame("# One\n\nalpha text.\n## Two\n\nbeta text.\n"),),
            )
            db.execute("UPDATE meta SET value = '1' WHERE key = 'generation'")
            db.execute(
                "UPDATE chunks SET block = (SELECT min(id) FROM text_blocks), block_start = 0, block_end = 19"
            )
        assert served.get(str(notes / "a.md"))[0].body == "# One\n\nalpha text.\n"


def zstd_frame(text: str) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(text.encode())


@pytest.mark.skipif(not CRANFIELD.is_dir(), reason="needs ../shared/data/cranfield beside the checkout")
def test_dense_search_through_pgvector_hnsw(tmp_path, pg_url, monkeypatch):
    """Above the HNSW threshold the writer has the server build a pgvector HNSW index and searches use
    it (nothing loaded, nothing built in the process): on a small corpus it finds what exact search
    finds, filters still hold, and the funnel names the method."""
    from kenning.query.filters import Filters
    from kenning.sidefiles import ann
    from kenning.signals.dense import ServerDenseView

    monkeypatch.setattr(ann, "HNSW_THRESHOLD", 100)
    monkeypatch.setattr(ServerDenseView, "CACHE", 30)  # the cache of read vectors fills and restarts
    corpus, queries = beir_subset(tmp_path / "beir", 160, 25)
    other = tmp_path / "other"
    other.mkdir()
    (other / "wing.md").write_text("# Wings\n\nThe lift of a swept wing in a propeller slipstream.\n")
    with Index(tmp_path / "ix") as embedded, Index(pg_url) as server:
        for index in (embedded, server):
            index.add([corpus])
            index.add([other], collection="other")
            index.embed()
        assert server.store.vector_index_ready(server.embedding_model()["fingerprint"])
        monkeypatch.setattr(ann, "HNSW_THRESHOLD", 10**9)  # the folder index: exact search
        expected = [[h.doc_key for h in embedded.search(q, mode="dense", limit=10).hits] for q in queries]
        monkeypatch.setattr(ann, "HNSW_THRESHOLD", 100)
        same = 0
        for query, exact in zip(queries, expected, strict=True):
            response = server.search(query, mode="dense", limit=10, explain=True)
            assert response.funnel.channels["dense"]["graph"] == "server"
            same += [h.doc_key for h in response.hits] == exact
        assert same >= 0.95 * len(queries)
        view = ServerDenseView(
            server.store, server.embedding_model()["fingerprint"], server.lexical.view().live_mask, 384
        )
        with server.store.reading():
            first, overlapping = view._rows(np.arange(0, 20)), view._rows(np.arange(10, 45))
        assert np.array_equal(first[10:], overlapping[:10]) and len(view._vectors) <= 35
        only = server.search("wing slipstream lift", mode="dense", filters=Filters(collections=("other",)))
        assert [h.path for h in only.hits] == [str(other / "wing.md")]


def test_filters_are_conditions_the_indexes_answer(tmp_path, pg_url):
    """Front-matter and date filters run as SQL the chunk table's indexes serve (a GIN containment
    and a (source, time) b-tree), not as a scan: the plan names them when scans are priced out."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\nstatus: Final\ntags: [x, y]\n---\n# A\n\nalpha text\n")
    with Index(pg_url) as index:
        index.add([notes])
        sid = index.store.sources()[0].id
        store = index.store
        store.conn.execute("SET enable_seqscan = off")
        for args, used in (
            (([sid], None, None, [("status", "final")]), "chunks_by_facet"),
            (([sid], 0.0, 2e9, []), "chunks_by_time"),
        ):
            query, params = store.matching_query(*args[1:])
            # the condition alone, without the source list (which the planner may prefer to serve)
            alone = store.dialect.sql("SELECT c.id FROM chunks c WHERE " + query.split(" AND ", 1)[1])
            plan = "\n".join(r[0] for r in store.conn.execute("EXPLAIN " + alone, params))
            assert used in plan, plan
            assert list(store.chunks_matching(*args))  # and the condition matches the chunk
        assert not store.chunks_matching([sid], None, None, [("status", "draft")])
