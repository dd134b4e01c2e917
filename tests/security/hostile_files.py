"""Small files built to cost a reader far more than their size: written by the tests, never committed.
Each writer puts one file into `folder` and returns its path."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def yaml_alias_bomb(folder: Path) -> Path:
    """Markdown whose front matter is a billion-laughs alias bomb: 9 levels of 9 references, under a
    kilobyte, 9**9 strings if anything expands it."""
    lines = ["---", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines += ["title: laughs", "---", "", "# Body", "", "The body of the alias bomb note is still text."]
    path = folder / "laughs.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def docx_zip_bomb(folder: Path, expanded_mb: int = 1024) -> Path:
    """A .docx whose word/document.xml inflates from about a megabyte to `expanded_mb` MB."""
    path = folder / "bomb.docx"
    head = b'<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    block = b"A" * (1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            member.write(head)
            for _ in range(expanded_mb):
                member.write(block)
            member.write(tail)
    return path


def docx_many_members(folder: Path, members: int = 200_000) -> Path:
    """A .docx with a huge number of tiny members (a central directory that costs memory)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("word/document.xml", b"<w:document/>")
        for i in range(members):
            archive.writestr(f"x/{i}", b"")
    path = folder / "members.docx"
    path.write_bytes(buffer.getvalue())
    return path


def sparse_file(folder: Path, size: int = 2 << 30, name: str = "notes.txt") -> Path:
    """A file that claims `size` bytes (a hole: no disk used) of zeros, with a text name."""
    path = folder / name
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def vm_images(folder: Path) -> list[Path]:
    """Disk images by their usual names, with text-looking first bytes."""
    out = []
    for suffix in (".qcow2", ".vmdk", ".vdi", ".vhd", ".vhdx", ".ova"):
        path = folder / f"machine{suffix}"
        path.write_bytes(b"plain looking text\n" * 100)
        out.append(path)
    return out


def long_line(folder: Path, mb: int = 40) -> Path:
    """A text file of `mb` MB with no newline at all."""
    path = folder / "one-line.txt"
    word = b"lorem ipsum dolor sit amet "
    with open(path, "wb") as fh:
        for _ in range(mb * (1 << 20) // len(word)):
            fh.write(word)
    return path


def deep_json(folder: Path, depth: int = 200_000) -> list[Path]:
    """A notebook and a message log nested far deeper than any parser's recursion allows."""
    nb = folder / "deep.ipynb"
    nb.write_text("[" * depth + "]" * depth)
    log = folder / "deep.jsonl"
    log.write_text('{"text": ' + "[" * depth + "]" * depth + ', "timestamp": 1}\n')
    return [nb, log]


def deep_html(folder: Path, depth: int = 100_000) -> Path:
    path = folder / "deep.html"
    path.write_text("<div>" * depth + "deep text" + "</div>" * depth)
    return path


def headings_only_html(folder: Path) -> Path:
    path = folder / "outline.html"
    path.write_text(
        "<html><head><title>Outline</title></head><body>"
        "<h1>Quarterly signing key rotation</h1><h2>Revocation of leaked tokens</h2></body></html>"
    )
    return path


def fifo(folder: Path) -> Path:
    """A named pipe: a reader that opens it waits forever for a writer."""
    import os

    path = folder / "pipe.md"
    os.mkfifo(path)
    return path


def write_all(folder: Path) -> dict[str, list[Path]]:
    """Every hostile file above in `folder`; by name."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "yaml_alias_bomb": [yaml_alias_bomb(folder)],
        "docx_zip_bomb": [docx_zip_bomb(folder)],
        "docx_many_members": [docx_many_members(folder)],
        "sparse_file": [sparse_file(folder)],
        "vm_images": vm_images(folder),
        "long_line": [long_line(folder)],
        "deep_json": deep_json(folder),
        "deep_html": [deep_html(folder)],
        "headings_only_html": [headings_only_html(folder)],
        "fifo": [fifo(folder)],
    }
