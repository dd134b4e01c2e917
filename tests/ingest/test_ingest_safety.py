"""Nothing lost silently, nothing private indexed: the write path on real folders built here."""

import json
import os
from pathlib import Path

from kenning import Index
from kenning.surfaces.cli import main


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def docs(ix: Index) -> set[str]:
    return {Path(s.path).name for s in ix.store.sources()}


def test_a_folder_that_cannot_be_read_keeps_what_it_gave_and_fails_loudly(tmp_path, capsys):
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nalpha notes\n")
    ix = str(tmp_path / "ix")
    assert run(capsys, "index", notes, "--index", ix, "-q", "--no-embed")[0] == 0
    notes.rename(tmp_path / "elsewhere")  # unmounted, renamed, or mistyped
    code, out, err = run(capsys, "index", notes, "--index", ix, "-q", "--no-embed")
    assert code == 1 and "cannot read" in err and "notes" in err and "1 failed" in out
    with Index(ix) as index:
        assert docs(index) == {"a.md"}  # still there
        assert index.search("alpha", mode="lexical").hits
    code, out, err = run(
        capsys, "index", tmp_path / "notez", tmp_path / "elsewhere", "--index", ix, "-q", "--no-embed"
    )
    assert code == 1 and "notez" in err and "indexed 1 file(s)" in out


def test_one_bad_file_never_aborts_the_run(tmp_path, monkeypatch, capsys):
    root = tmp_path / "mixed"
    write(root / "good.md", "# Good\n\nfine words\n")
    write(root / "gone.md", "# Gone\n\nvanishes mid-run\n")
    write(root / "locked.md", "# Locked\n\nno permission\n")
    odd = os.path.join(os.fsencode(root), b"caf\xe9 menu.txt")  # a Latin-1 name, not UTF-8
    with open(odd, "wb") as fh:
        fh.write(b"espresso and croissants\n")
    real_open = os.open

    def opening(path, flags, *args, **kwargs):  # how kenning.ingest.limits opens a file to read it
        name = os.path.basename(os.fsdecode(path))
        if name == "gone.md":
            raise FileNotFoundError(2, "No such file or directory")
        if name == "locked.md":
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    ix = str(tmp_path / "ix")
    code, out, err = run(capsys, "index", root, "--index", ix, "-q", "--no-embed", "--json")
    report = json.loads(out)
    assert code == 0 and report["files_indexed"] == 2
    failed = {Path(e["path"]).name: e["error"] for e in report["errors"]}
    assert set(failed) == {"gone.md", "locked.md"} and "permission denied" in failed["locked.md"].lower()
    with Index(ix) as index:
        hit = index.search("espresso", mode="lexical").hits[0]
        assert hit.path.endswith("caf\\xe9 menu.txt")  # stored and shown, bytes as \xNN
        assert index.get(hit.path)[0].body.startswith("espresso")
    code, out, _ = run(capsys, "index", root, "--index", ix, "-q", "--no-embed")
    assert "indexed 2 file(s), 2 unchanged" not in out and "2 failed" in out  # reported again, by name
    with Index(ix) as index:
        assert docs(index) >= {"good.md"}  # failing files did not remove anything


def test_every_chunk_of_a_changed_file_takes_its_new_time(tmp_path):
    path = write(tmp_path / "n" / "plan.md", "# One\n\nfirst section\n\n# Two\n\nsecond section\n")
    os.utime(path, (1_600_000_000, 1_600_000_000))
    ix = Index(tmp_path / "ix")
    ix.add([tmp_path / "n"])
    path.write_text("# One\n\nfirst section\n\n# Two\n\nsecond section, edited\n")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    report = ix.add([tmp_path / "n"])
    assert report.chunks_kept == 1  # the unchanged section keeps its id...
    times = {row.title: row.time for row in ix.get(str(path))}
    assert times == {"One": 1_700_000_000, "Two": 1_700_000_000}  # ...and takes the new time
    os.utime(path, (1_800_000_000, 1_800_000_000))  # same bytes, newer time
    ix.add([tmp_path / "n"])
    assert {row.time for row in ix.get(str(path))} == {1_800_000_000}
    ix.close()


def test_document_ids_and_chunk_ids_never_mix(tmp_path):
    lines = [
        {"_id": "3", "title": "three", "text": "the third document"},
        {"_id": "1", "title": "one", "text": "the first document"},
        {"_id": "2", "title": "two", "text": "the second document"},
        {"_id": "1", "title": "one again", "text": "a duplicate id"},
    ]
    corpus = write(tmp_path / "corpus.jsonl", "\n".join(json.dumps(d) for d in lines))
    ix = Index(tmp_path / "ix")
    report = ix.add([corpus])
    assert any("duplicate _id '1' (first on line 2)" in w for w in report.warnings)
    assert [r.title for r in ix.get("1")] == ["one"]  # the document with _id 1, not chunk 1
    chunk_one = ix.get("chunk:1")[0]
    assert chunk_one.id == 1 and chunk_one.title == "three"  # chunk 1 is the first line's document
    assert ix.get("#2")[0].id == 2 and ix.get(2)[0].id == 2
    assert ix.get("chunk:999") == [] and ix.get("nothing-here") == []
    ix.close()


def test_secrets_and_outside_links_never_reach_the_index(tmp_path, capsys):
    home = tmp_path / "home"
    write(home / "notes.md", "# Notes\n\nthe api key lives elsewhere\n")
    write(home / "project" / ".env", "API_KEY=sk-live-123\n")
    write(home / "project" / "deploy.key", "-----BEGIN PRIVATE KEY-----\n")
    write(home / "project" / "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    passwd = write(tmp_path / "etc" / "passwd", "root:x:0:0:root:/root:/bin/bash\n")
    (home / "pw").symlink_to(passwd)
    ix = str(tmp_path / "ix")
    code, out, err = run(capsys, "index", home, "--index", ix, "-q", "--no-embed", "--hidden")
    assert code == 0 and "3 skipped" not in out and "4 skipped" in out
    assert "skipped: " in err and "id_ed25519: holds credentials (--include-secrets" in err  # by name
    assert "holds credentials" in out and "link outside the indexed folders" in out
    with Index(ix) as index:
        assert docs(index) == {"notes.md"}
        for word in ("OPENSSH", "bash", "123"):
            assert not index.search(word, mode="lexical").hits, word
        assert index.get(str(passwd)) == []
    code, out, _ = run(
        capsys, "index", home, "--index", ix, "-q", "--no-embed", "--hidden", "--include-secrets"
    )
    with Index(ix) as index:
        assert {".env", "deploy.key", "id_ed25519"} <= docs(index) and "passwd" not in docs(index)


def test_pathological_sizes_stay_bounded(tmp_path):
    from kenning.ingest import ChunkOptions, parse_file

    one_line = write(tmp_path / "one-line.txt", ("word " * 1_000_000))  # 5 MB, no newline
    parsed = parse_file(one_line)
    assert len(parsed.chunks) > 600 and max(len(c.body) for c in parsed.chunks) <= ChunkOptions().max_chars
    assert "".join(c.body for c in parsed.chunks) == one_line.read_text()  # nothing lost between pieces
    no_space = write(tmp_path / "blob.txt", "x" * 100_000)
    assert [len(c.body) for c in parse_file(no_space).chunks] == [8000] * 12 + [4000]
    corpus = write(tmp_path / "corpus.jsonl", json.dumps({"_id": "big", "text": "lorem ipsum " * 10_000}))
    chunks = parse_file(corpus).chunks
    assert len(chunks) > 1 and {c.doc_key for c in chunks} == {"big"}  # still one document


def test_embedders_read_at_most_their_window():
    from kenning.models.embed.base import window
    from kenning.models.embed.minilm import MiniLMEmbedder

    text = "alpha   beta\n\ngamma " * 200_000  # 4 MB
    cut = window(text, 1000)
    assert len(cut) == 1000 and cut.startswith("alpha beta gamma alpha")
    huge, head = MiniLMEmbedder().embed([text, text[: 101 * 256 * 2]])
    assert float(huge @ head) > 0.9999  # the model reads the same first 256 tokens either way


def test_an_index_kept_inside_the_folder_it_indexes_is_not_read_back(tmp_path, capsys):
    (tmp_path / "notes.md").write_text("# Launch\nFriday.\n")
    tool_cache = tmp_path / "build"
    tool_cache.mkdir()
    (tool_cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (tool_cache / "generated.md").write_text("# Launch\ngenerated copy\n")
    index_dir = tmp_path / "ix"
    for _ in range(2):  # the second run walks over the index written (with its WAL) by the first
        assert main(["index", str(tmp_path), "--index", str(index_dir), "--no-embed", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith("indexed 0 file(s), 1 unchanged, 0 skipped, 0 failed")
    assert (index_dir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    ix = Index(index_dir)
    assert [Path(h.path).name for h in ix.search("launch", mode="lexical").hits] == ["notes.md"]
    ix.close()
