"""A streaming read replica (pg_basebackup from the same binaries), searched with --store and a
read-only URL: it sees every committed write, and refuses to be written with a clear message.

The primary waits for the replica to apply each commit (synchronous_standby_names = '*', and the
writer's connection asks synchronous_commit = remote_apply in its URL), so "committed" means
"visible on the replica" and the test needs no sleeping."""

import os

import psycopg
import pytest

from kenning import Index
from kenning.store import StorageError
from kenning.store.postgres import parse_location


@pytest.fixture(scope="module")
def primary_and_replica():
    from pg_server import start_replica, start_server

    if os.environ.get("KENNING_TEST_PG_URL"):
        pytest.skip("a replica is started from a server these tests started, not from $KENNING_TEST_PG_URL")
    primary = start_server()
    replica = None
    try:
        replica = start_replica(primary)
        with psycopg.connect(parse_location(primary.url()).conninfo, autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            admin.execute("SELECT pg_reload_conf()")
        yield primary, replica
    finally:
        if replica:
            replica.stop()
        primary.stop()


def test_the_replica_sees_every_commit_and_refuses_writes(tmp_path, primary_and_replica):
    primary, replica = primary_and_replica
    schema = "team"
    writer_url = primary.url(schema) + "&options=-csynchronous_commit%3Dremote_apply"
    reader_url = replica.url(schema)
    notes = tmp_path / "notes"
    notes.mkdir()
    with Index(writer_url) as writer:
        for n in range(5):
            (notes / f"n{n}.md").write_text(f"# Note {n}\n\nquokka number{n} lives here.\n")
            writer.add([notes])  # one commit
            with Index(reader_url, create=False) as reader:
                hits = reader.search("quokka", mode="lexical", limit=50).hits
                assert len(hits) == n + 1
                assert reader.search(f"number{n}", mode="lexical").hits
        (notes / "n0.md").unlink()
        writer.add([notes])
        writer.embed()
    with Index(reader_url, create=False) as reader:
        assert len(reader.search("quokka", mode="lexical", limit=50).hits) == 4
        assert reader.search("where does the quokka live", mode="hybrid").hits
        assert reader.status()["generation"] > 0
        with pytest.raises(StorageError, match="read-only replica"):
            reader.add([notes])


def test_a_lost_connection_is_made_again(tmp_path):
    """A long-lived process (kenning serve) outlives a server restart: the search after it connects
    again instead of failing, and so does the next write."""
    from pg_server import start_server

    if os.environ.get("KENNING_TEST_PG_URL"):
        pytest.skip("restarts a server these tests started, not the one $KENNING_TEST_PG_URL gives")
    server = start_server()
    try:
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("# A\n\nThe wombat digs a burrow.\n")
        with Index(server.url("kept")) as index:
            index.add([notes])
            assert index.search("wombat", mode="lexical").hits
            server.restart()
            assert index.search("wombat burrow", mode="lexical").hits
            (notes / "b.md").write_text("# B\n\nA second wombat.\n")
            index.add([notes])
            assert len(index.search("wombat", mode="lexical").hits) == 2
    finally:
        server.stop()
