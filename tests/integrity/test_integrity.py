"""`kenning verify` finds damage nobody else would (a flipped byte inside a row), and `kenning repair`
rebuilds from the files, keeping sound vectors and the glossary, and loses nothing: the damaged index
stays beside the new one."""

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from kenning import Index
from kenning.store import StorageError
from kenning.store.compact import pack_ids
from kenning.store.sqlite import packs
from kenning.store.sqlite.connection import DB_NAME
from kenning.store.sqlite.schema import SCHEMA_VERSION
from kenning.surfaces.cli import main

NOTES = {
    "keys.md": "# Keys\n\nrotate the signing keys every quarter\n",
    "backup.md": "# Backups\n\nrestore the nightly backup from cold storage\n",
    "deploy.md": "# Deploys\n\nroll the deploy back when the canary fails\n",
}


@pytest.fixture
def built(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in NOTES.items():
        (docs / name).write_text(text)
    index = tmp_path / "ix"
    with Index(index) as ix:
        ix.add([docs])
        ix.glossary.add("backup", ["snapshot"])
    return docs, index


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def flip(path: Path, needle: bytes, offset: int = 0) -> None:
    """Flip one bit of the first occurrence of `needle` in a file, as a failing disk would."""
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at >= 0, needle
    data[at + offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_sound_index_verifies(built, capsys):
    _, index = built
    code, out, _ = run(capsys, "verify", "--index", index, "--full")
    assert code == 0 and out.startswith(f"ok: {index} is sound")
    code, out, _ = run(capsys, "verify", "--index", index, "--json")
    report = json.loads(out)
    assert report["ok"] and report["checked"]["chunks"] == 3 and report["checked"]["segments"] >= 1


def test_a_flipped_byte_in_a_postings_list_is_found_and_repaired(built, capsys):
    docs, index = built
    with sqlite3.connect(index / DB_NAME) as conn:
        blob = conn.execute("SELECT data FROM posting_packs ORDER BY length(data) DESC").fetchone()[0]
    pack = packs.Pack(blob)
    ids = pack_ids(np.arange(1, 4, dtype="<u4").tobytes())  # a term in all three chunks: ids 1, 2, 3
    row = next(k for k in range(len(pack.terms)) if pack.row(k)[1] == ids)
    at = pack.column_start(row)  # where the row's ids are, in the pack
    assert blob[at : at + len(ids)] == ids
    flip(index / DB_NAME, blob, offset=at + 1)  # its first id read as 0: a row that still decodes
    assert sqlite3.connect(index / DB_NAME).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    code, out, err = run(capsys, "verify", "--index", index)
    assert code == 1 and "checksum mismatch" in out and "kenning repair" in err
    code, out, err = run(capsys, "repair", "--index", index, "--no-embed")
    assert code == 0 and "3 file(s) indexed again" in out and "2 glossary term(s) kept" in out
    assert run(capsys, "verify", "--index", index, "--full")[0] == 0
    aside = [p for p in index.parent.iterdir() if p.name.startswith("ix.damaged-")]
    assert len(aside) == 1 and (aside[0] / DB_NAME).exists()  # nothing thrown away
    with Index(index) as ix:
        assert ix.search("signing keys", mode="lexical").hits[0].path.endswith("keys.md")
        assert "snapshot" in json.dumps(ix.glossary.groups())
        assert ix.search("snapshot", mode="lexical").hits[0].path.endswith("backup.md")  # expands


def test_a_flipped_byte_in_a_chunks_text_is_found(built, capsys):
    _, index = built
    flip(index / DB_NAME, b"rotate the signing keys")
    code, out, _ = run(capsys, "verify", "--index", index)
    assert code == 1 and "its text changed after it was written" in out


@pytest.mark.parametrize(
    "evidence", ["{", '{"a":' + "[" * 200_000 + "]" * 200_000 + "}"], ids=["cut", "deep"]
)
def test_a_glossary_term_whose_evidence_is_not_json_is_named_and_repaired(built, capsys, evidence):
    # JSON nested past Python's stack raises RecursionError, which the listings once let through
    docs, index = built
    with sqlite3.connect(index / DB_NAME) as conn:
        conn.execute("UPDATE glossary_terms SET evidence = ? WHERE surface = 'snapshot'", (evidence,))
    code, out, err = run(capsys, "glossary", "ls", "--index", index)
    assert code != 0 and "Traceback" not in err and "evidence" in err and "kenning repair" in err
    code, out, _ = run(capsys, "verify", "--index", index)
    assert code == 1 and "evidence is not the JSON kenning writes" in out
    code, out, _ = run(capsys, "repair", "--index", index, "--no-embed")
    assert code == 0 and "2 glossary term(s) kept" in out  # the term stays, its evidence does not
    assert run(capsys, "verify", "--index", index)[0] == 0
    code, out, _ = run(capsys, "glossary", "ls", "--index", index)
    assert code == 0 and "snapshot" in out


def chat_index(tmp_path) -> Path:
    """An index of one chat log, whose windows share one text block."""
    chat = tmp_path / "chat"
    chat.mkdir()
    lines = [
        json.dumps(
            {"id": f"m{i}", "sender": "Ana", "timestamp": 1_700_000_000 + 60 * i, "text": f"note {i} {w}"}
        )
        for i, w in enumerate(["rotate keys", "restore backup", "canary deploy"] * 20)
    ]
    (chat / "log.jsonl").write_text("\n".join(lines) + "\n")
    index = tmp_path / "ix"
    with Index(index) as ix:
        ix.add([chat])
    return index


def test_a_flipped_byte_in_a_block_of_texts_is_found_and_named(tmp_path, capsys):
    index = chat_index(tmp_path)
    conn = sqlite3.connect(index / DB_NAME)
    (data,) = conn.execute("SELECT data FROM text_blocks").fetchone()  # the file's windows share one block
    conn.close()
    flip(index / DB_NAME, data[len(data) // 2 : len(data) // 2 + 12])
    code, out, _ = run(capsys, "verify", "--index", index)
    assert code == 1 and "its text changed after it was written" in out
    with Index(index) as ix, pytest.raises(StorageError, match=r"chunk \d+'s stored text is damaged"):
        _ = ix.search("rotate keys", mode="lexical").hits[0].snippet


def test_a_block_no_chunk_reads_and_a_chunk_outside_its_blocks_range_are_named(tmp_path, capsys):
    index = chat_index(tmp_path)
    assert run(capsys, "verify", "--index", index, "--full")[0] == 0
    with sqlite3.connect(index / DB_NAME) as conn:
        conn.execute(
            "INSERT INTO text_blocks(first_chunk, last_chunk, data) SELECT 1, 1, data FROM text_blocks"
        )
    code, out, _ = run(capsys, "verify", "--index", index, "--full")
    assert code == 1 and "1 block(s) of text that no chunk reads" in out
    with sqlite3.connect(index / DB_NAME) as conn:
        conn.execute("DELETE FROM text_blocks WHERE id = (SELECT max(id) FROM text_blocks)")
        conn.execute("UPDATE text_blocks SET first_chunk = first_chunk + 2")
    code, out, _ = run(capsys, "verify", "--index", index, "--full")
    assert code == 1 and "2 chunk(s) outside the range of the text block they read" in out


def test_damaged_vectors_are_found_dropped_and_made_again(built, capsys):
    _, index = built
    with Index(index) as ix:
        ix.embed()
        fingerprint = ix.embedding_model()["fingerprint"]
    with sqlite3.connect(index / DB_NAME) as conn:
        text_hash, blob = conn.execute("SELECT text_hash, vector FROM embeddings LIMIT 1").fetchone()
        broken = np.frombuffer(blob, dtype=np.float32).copy()
        broken[0] += 0.5
        conn.execute(
            "UPDATE embeddings SET vector=? WHERE text_hash=? AND fingerprint=?",
            (broken.tobytes(), text_hash, fingerprint),
        )
        other = conn.execute("SELECT text_hash FROM embeddings WHERE text_hash != ? LIMIT 1", (text_hash,))
        conn.execute("UPDATE embeddings SET vector=? WHERE text_hash=?", (b"\x00" * 10, other.fetchone()[0]))
    code, out, _ = run(capsys, "verify", "--index", index)
    assert code == 1 and "not unit length" in out and "not a list of float32 numbers" in out
    code, out, _ = run(capsys, "repair", "--index", index, "--json")
    report = json.loads(out)
    assert report["vectors_dropped"] == 2 and report["vectors_kept"] == 1 and report["vectors_embedded"] == 2
    assert run(capsys, "verify", "--index", index)[0] == 0


def test_an_empty_or_truncated_database_is_an_error_and_repair_needs_the_folders(built, capsys):
    docs, index = built
    db = index / DB_NAME
    original = db.read_bytes()
    for damaged in (b"", original[: len(original) // 3]):
        db.write_bytes(damaged)
        for wal in index.glob(f"{DB_NAME}-*"):
            wal.unlink()
        code, _, err = run(capsys, "search", "keys", "--index", index)
        assert code == 2 and "Traceback" not in err and err.startswith("kenning: error:")
        assert db.read_bytes() == damaged  # never replaced by a fresh empty index
        code, out, err = run(capsys, "verify", "--index", index)
        assert code in (1, 2) and "Traceback" not in out + err
    code, _, err = run(capsys, "repair", "--index", index)
    assert code == 2 and "kenning repair --from PATH" in err
    code, out, _ = run(capsys, "repair", "--index", index, "--from", docs, "--no-embed")
    assert code == 0 and "3 file(s) indexed again" in out
    assert run(capsys, "verify", "--index", index)[0] == 0


def test_an_index_from_before_checksums_is_migrated_and_verifies(built, capsys, monkeypatch):
    docs, index = built
    monkeypatch.setattr(packs, "PACK_ROW_BYTES", -1)  # written as then: every term a row of its own
    with Index(index) as ix:
        ix.add([docs], force=True)
    with sqlite3.connect(index / DB_NAME) as conn:
        conn.execute("ALTER TABLE segments DROP COLUMN checksum")
        conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    code, out, _ = run(capsys, "verify", "--index", index)
    assert code == 0, out
    with sqlite3.connect(index / DB_NAME) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
            SCHEMA_VERSION
        )


def test_a_newer_index_is_refused_by_every_command(built, capsys):
    _, index = built
    with sqlite3.connect(index / DB_NAME) as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    for command in (["search", "keys"], ["verify"], ["status"]):
        code, _, err = run(capsys, *command, "--index", index)
        assert code == 2 and "written by a newer kenning" in err
    with pytest.raises(StorageError, match="newer kenning"):
        Index(index)


def test_a_posting_of_a_chunk_its_segment_does_not_hold_is_named():
    """The membership check goes by binary search over the segment's ascending ids (np.isin sorted
    them again for every row: over 20 minutes at 1M chunks): ids below, between and above the
    segment's ids are caught, ids it holds pass."""
    from kenning.integrity.verify import _all_held, _posting_problem
    from kenning.store.records import SegmentPostings

    docs = np.array([3, 5, 6, 9, 20], dtype=np.uint32)
    assert _all_held(np.array([3, 6, 20], dtype=np.uint32), docs)
    for foreign in ([2, 5], [5, 7], [9, 21], [4]):
        assert not _all_held(np.array(foreign, dtype=np.uint32), docs), foreign
    ones = np.ones(2, np.uint16)
    row = SegmentPostings(
        "t", np.array([5, 8], np.uint32), ones, ones, np.zeros(2, np.uint32), np.zeros(2, np.uint32)
    )
    assert _posting_problem(row, docs) == "lists chunks its segment does not hold"
    row = row._replace(ids=np.array([5, 9], np.uint32))
    assert _posting_problem(row, docs) is None


def test_a_repair_removes_what_killed_repairs_left_and_keeps_a_running_one_s(built, capsys):
    """A repair stopped by a signal leaves its fresh index (`NAME.repairing-PID`) behind; the next
    repair removes those whose process is gone, and says so, and leaves a live one's alone."""
    import os

    docs, index = built
    dead = index.parent / "ix.repairing-99999999"  # past any pid this system gives
    alive = index.parent / f"ix.repairing-{os.getppid()}"
    other = index.parent / "ixx.repairing-99999999"  # another index's: not ours to touch
    for folder in (dead, alive, other):
        folder.mkdir()
        (folder / DB_NAME).write_bytes(b"partial")
    code, out, _ = run(capsys, "repair", "--index", index, "--no-embed", "--json", "--force")
    assert code == 0 and "removed ix.repairing-99999999" in json.loads(out)["notes"][0]
    assert not dead.exists() and alive.exists() and other.exists()
