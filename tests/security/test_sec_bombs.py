"""Small files made to cost a reader far more than their size are skipped or read within bounds,
each named with its reason; the run goes on, commits, and stays within a memory bound."""

import os
import resource
import subprocess
import sys

import hostile_files as hf
import pytest

from kenning.ingest import IngestError, parse_file
from kenning.ingest.limits import FileSkipped

ENTRY = [sys.executable, "-m", "kenning.surfaces.entry"]
RSS_BOUND_MB = 1024


def test_a_yaml_alias_bomb_is_refused_and_the_body_kept(tmp_path):
    parsed = parse_file(hf.yaml_alias_bomb(tmp_path))
    assert any("front matter" in w and "ignored" in w for w in parsed.warnings), parsed.warnings
    assert "body of the alias bomb" in parsed.chunks[0].body


def test_front_matter_has_a_size_bound(tmp_path):
    path = tmp_path / "big.md"
    path.write_text("---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(2000)) + "---\n\nbody text\n")
    parsed = parse_file(path)
    assert any("over 64 KB" in w for w in parsed.warnings)
    assert parsed.chunks and parsed.chunks[0].body.strip() == "body text"


def test_deeply_nested_front_matter_is_a_warning(tmp_path):
    path = tmp_path / "deep.md"
    path.write_text("---\nk: " + "[" * 20_000 + "]" * 20_000 + "\n---\n\nbody text\n")
    parsed = parse_file(path)
    assert any("front matter" in w for w in parsed.warnings) and parsed.chunks


def test_a_zip_bomb_docx_is_skipped_without_inflating(tmp_path):
    path = hf.docx_zip_bomb(tmp_path, expanded_mb=256)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(FileSkipped, match="inflates past"):
        parse_file(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KB


def test_a_docx_of_a_million_members_is_skipped_from_its_end_record(tmp_path):
    with pytest.raises(FileSkipped, match="members"):
        parse_file(hf.docx_many_members(tmp_path, members=20_000))


def test_a_docx_with_a_document_type_is_refused(tmp_path):
    import zipfile

    path = tmp_path / "entities.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "word/document.xml", '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">]><d>&a;</d>'
        )
    with pytest.raises(IngestError, match="document type"):
        parse_file(path)


def test_a_sparse_file_is_skipped_unread(tmp_path):
    path = hf.sparse_file(tmp_path)
    with pytest.raises(FileSkipped, match="over the 64 MiB limit"):
        parse_file(path)


def test_binary_is_told_from_the_first_block(tmp_path):
    """A 60 MB file under the size limit whose first block holds a NUL is refused before the rest
    is read."""
    path = hf.sparse_file(tmp_path, size=60 << 20, name="data.txt")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(IngestError, match="NUL byte at offset 0"):
        parse_file(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 30 * 1024  # KB


def test_a_fifo_is_not_waited_for(tmp_path):
    with pytest.raises(FileSkipped, match="not a regular file"):
        parse_file(hf.fifo(tmp_path))


def test_a_heading_only_html_page_is_indexed(tmp_path):
    parsed = parse_file(hf.headings_only_html(tmp_path))
    text = " ".join(c.title + " " + c.body for c in parsed.chunks)
    assert "Quarterly signing key rotation" in text and "Revocation of leaked tokens" in text


def test_a_file_with_no_text_says_so(tmp_path):
    path = tmp_path / "empty.html"
    path.write_text("<html><head><script>var x = 1;</script></head><body>   </body></html>")
    parsed = parse_file(path)
    assert parsed.chunks == [] and any("no text found" in w for w in parsed.warnings)


def test_long_pieces_keep_their_line_numbers():
    """A chunk cut into pieces (kenning.ingest.chunk.bounded, which now counts newlines piece by
    piece instead of from the start for each) keeps each piece's first and last line."""
    from kenning.ingest.chunk import Chunk, bounded

    lines = [("word " * (50 + 37 * (i % 7))).strip() for i in range(400)]
    body = "\n".join(lines)
    pieces = bounded([Chunk("t", body, "d", 10, 409)], 1000)
    assert len(pieces) > 20
    offset = 0
    for piece in pieces:
        at = body.index(piece.body, offset)
        assert piece.start_line == 10 + body.count("\n", 0, at)
        assert piece.end_line == piece.start_line + piece.body.rstrip("\n").count("\n")
        offset = at + len(piece.body)


def test_the_hostile_corpus_is_indexed_within_bounds(tmp_path):
    """Every bomb in one folder: `kenning index` skips or bounds each, names each, commits the rest,
    and its peak memory stays under RSS_BOUND_MB."""
    hf.write_all(tmp_path / "hostile")
    (tmp_path / "hostile" / "ok.md").write_text("# Fine\n\nAn ordinary note about quarterly rotation.\n")
    env = {**os.environ, "KENNING_NO_SERVER": "1"}
    code = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=900); "
        "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); "
        "print('RSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); "
        "sys.exit(p.returncode)"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "prlimit",
            f"--as={6 << 30}",
            *ENTRY,
            "index",
            "hostile",
            "--index",
            "ix",
            "--no-embed",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert done.returncode == 0, out
    rss = int(out.rsplit("RSS ", 1)[1].split()[0])
    assert rss < RSS_BOUND_MB, f"peak RSS {rss} MB"
    for name in ("bomb.docx", "members.docx", "notes.txt"):
        assert f"skipped: hostile/{name}" in out, out
    assert "laughs.md: front matter" in out
    search = subprocess.run(
        [*ENTRY, "search", "quarterly rotation", "--index", "ix", "--mode", "lexical", "--format", "files"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    files = search.stdout.split()
    assert any(f.endswith("ok.md") for f in files) and any(f.endswith("outline.html") for f in files)
    assert not any("machine." in f for f in files)
    print(f"hostile corpus: peak RSS {rss} MB")
