"""`kenning migrate`: a folder index to PostgreSQL and back, vectors included and never embedded
again, the same rankings at every step, counts compared, and a failed copy leaves nothing behind."""

import json

import pytest

from kenning import Index
from kenning.integrity.migrate import migrate
from kenning.store import StorageError, open_store
from kenning.surfaces.cli import main

NOTES = {
    "auth.md": "---\nstatus: final\ntags: [security, keys]\n---\n# Auth\n\nRotate the signing keys every "
    "quarter. Edmond Dantes keeps the login tokens.\n\n## Leaks\n\nA leaked token is revoked at once.\n",
    "backup.md": "# Backups\n\nRestore the nightly backup from cold storage. Edmond Dantes checks it.\n",
    "cars.md": "# Cars\n\nThe car needs new tyres and an oil change.\n",
}
QUERIES = ["rotate signing keys", "restore backup", "Edmond Dantes", "leaked tokens", "login"]


@pytest.fixture
def folder_index(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    with Index(tmp_path / "ix") as ix:
        ix.add([notes], substring_index=True)
        ix.embed()
        ix.glossary.add("auth", ["login", "sign-in"])
    return tmp_path / "ix"


def rankings(location):
    with Index(location) as ix:
        return [
            [(h.path, round(h.score, 9)) for h in ix.search(q, mode=mode, limit=5).hits]
            for q in QUERIES
            for mode in ("lexical", "dense", "hybrid")
        ]


def vectors(location):
    store = open_store(location, create=False)
    try:
        return {(h, fp): v.tobytes() for h, fp, v in store.iter_vectors()}
    finally:
        store.close()


def text_blocks(location) -> int:
    store = open_store(location, create=False)
    try:
        with store.reading():
            return int(store._value("SELECT count(*) FROM text_blocks"))
    finally:
        store.close()


def test_a_folder_to_postgres_and_back(folder_index, tmp_path, pg_url, monkeypatch):
    import kenning.models.embed as embed

    monkeypatch.setattr(embed.MiniLMEmbedder, "embed", lambda *a, **k: pytest.fail("embedded again"))
    there = migrate(str(folder_index), pg_url)
    assert there.ok and there.copied["chunks"] == 4 and there.copied["vectors"] == 4
    assert there.copied["glossary_terms"] == 3 and there.copied["substring_index"] is True
    back = tmp_path / "back"
    assert main(["migrate", "--from", pg_url, "--to", str(back), "--json"]) == 0
    monkeypatch.undo()
    expected = rankings(folder_index)
    assert all(expected[:3]) and rankings(pg_url) == expected and rankings(back) == expected
    assert vectors(pg_url) == vectors(folder_index) == vectors(back)
    assert text_blocks(pg_url) == text_blocks(folder_index) == text_blocks(back) == 1  # auth.md's two chunks
    assert main(["verify", "--store", pg_url, "--full"]) == 0
    assert main(["verify", "--index", str(back), "--full"]) == 0
    assert (back / "views" / "lengths.bin").is_file()  # its lexical arrays saved, as a write leaves them
    with Index(pg_url) as ix:  # the copy takes new files, with new ids after the copied ones
        assert ix.glossary.is_empty() is False
        extra = tmp_path / "more"
        extra.mkdir()
        (extra / "new.md").write_text("# New\n\nA brand new note about tyres.\n")
        ix.add([extra], collection="more")
        new = ix.search("brand new note", mode="lexical").hits[0].id
        assert new > max(h.id for q in QUERIES for h in ix.search(q, mode="lexical").hits)


def test_migrate_refuses_an_index_and_a_failed_copy_leaves_nothing(folder_index, tmp_path, pg_url, capsys):
    assert migrate(str(folder_index), pg_url).ok
    with pytest.raises(StorageError, match="already holds an index"):
        migrate(str(folder_index), pg_url)
    target = tmp_path / "half"

    def interrupt(stage, done, total):
        if stage == "segments":
            raise KeyboardInterrupt  # as if Ctrl-C came halfway through the copy

    with pytest.raises(KeyboardInterrupt):
        migrate(pg_url, str(target), progress=interrupt)
    store = open_store(target, create=False)
    assert store.counts()["chunks"] == 0 and list(store.iter_vectors()) == []
    store.close()
    assert migrate(pg_url, str(target)).ok  # and the empty destination takes the copy afterwards
    assert main(["migrate", "--from", str(tmp_path / "nothing"), "--to", str(tmp_path / "x")]) != 0
    assert "no kenning index" in capsys.readouterr().err
    report = json.loads(json.dumps(migrate(str(target), str(tmp_path / "again")).to_dict()))
    assert report["ok"] and report["checks"]["chunks"] == [4, 4]
