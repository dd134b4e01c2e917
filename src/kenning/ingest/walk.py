"""Find the files to index under the paths a user gives.

Walking is deterministic (sorted names) so two runs over the same tree see files in the same order,
and it never follows symlinked directories, which could loop or escape the tree the user named.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path

# Directories that hold tooling state, dependencies or build output rather than the user's writing.
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "dist",
        "build",
        "target",
        "_build",
        ".next",
        ".kenning",
        ".idea",
        ".vscode",
        ".eggs",
    }
)
DEFAULT_EXCLUDED_DIR_GLOBS = ("*.egg-info",)

# Extensions whose content is not text worth indexing; checked before reading any bytes.
BINARY_EXTENSIONS = frozenset(
    {
        # images
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".ico", ".icns", ".webp", ".heic",
        ".heif", ".avif", ".psd", ".raw", ".cr2", ".nef", ".xcf",
        # audio and video
        ".mp3", ".wav", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".wma", ".aiff", ".mid",
        ".mp4", ".m4v", ".mkv", ".avi", ".mov", ".wmv", ".webm", ".flv", ".mpg", ".mpeg", ".3gp",
        # archives and disk images
        ".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".lz4", ".lzma", ".7z", ".rar", ".cab",
        ".iso", ".dmg", ".img", ".deb", ".rpm", ".apk", ".msi",
        # compiled code and objects
        ".o", ".obj", ".a", ".lib", ".so", ".dylib", ".dll", ".exe", ".bin", ".elf", ".class", ".jar",
        ".war", ".ear", ".pyc", ".pyo", ".pyd", ".whl", ".egg", ".wasm", ".beam", ".dex", ".rlib",
        # fonts
        ".ttf", ".otf", ".woff", ".woff2", ".eot", ".pfb",
        # office and other binary documents
        ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".epub", ".mobi",
        # databases, serialized data and model weights
        ".db", ".sqlite", ".sqlite3", ".mdb", ".parquet", ".feather", ".arrow", ".avro", ".npy",
        ".npz", ".pkl", ".pickle", ".h5", ".hdf5", ".onnx", ".pt", ".pth", ".ckpt", ".safetensors",
        ".gguf",
    }
)  # fmt: skip


def is_binary_extension(path: Path | str) -> bool:
    """True when the file name alone says the content is not text."""
    return Path(path).suffix.lower() in BINARY_EXTENSIONS


def _matches(patterns: Iterable[str], rel: str, name: str) -> bool:
    return any(fnmatch(rel, p) or fnmatch(name, p) for p in patterns)


def _default_excluded_dir(name: str) -> bool:
    return name in DEFAULT_EXCLUDED_DIRS or any(fnmatch(name, g) for g in DEFAULT_EXCLUDED_DIR_GLOBS)


def discover(
    paths: list[str | Path],
    include: list[str] | None = None,
    exclude: list[str] | None = None,
) -> Iterator[tuple[Path, str | None]]:
    """Yield (absolute resolved path, skip reason or None) for every file under `paths`.

    Files named directly are always reported (a binary one with reason "binary extension") so the
    user learns why it was not indexed; inside walked folders, excluded directories and binary
    extensions are dropped silently. Globs match the path relative to the walked root and the
    basename. Each resolved file is yielded at most once.
    """
    include = list(include or [])
    exclude = list(exclude or [])
    seen: set[Path] = set()

    def emit(path: Path, reason: str | None) -> Iterator[tuple[Path, str | None]]:
        if path not in seen:
            seen.add(path)
            yield path, reason

    for raw in paths:
        given = Path(raw).expanduser()
        resolved = given.resolve()
        if not given.exists():
            yield from emit(resolved, "not found")
        elif given.is_dir():
            yield from _walk(resolved, include, exclude, emit)
        elif given.is_file():
            rel = given.as_posix()
            if include and not _matches(include, rel, given.name):
                continue
            if exclude and _matches(exclude, rel, given.name):
                continue
            yield from emit(resolved, "binary extension" if is_binary_extension(given) else None)
        else:
            yield from emit(resolved, "not a regular file")


def _walk(root: Path, include: list[str], exclude: list[str], emit) -> Iterator[tuple[Path, str | None]]:
    """Depth-first in name order, so a/x comes before b.md before c/y."""

    def visit(folder: Path, rel_folder: str) -> Iterator[tuple[Path, str | None]]:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield from emit(folder, f"unreadable directory ({exc.strerror or exc})")
            return
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
            except OSError:
                continue
            if is_dir:
                if _default_excluded_dir(entry.name) or (exclude and _matches(exclude, rel, entry.name)):
                    continue
                yield from visit(folder / entry.name, rel)
            elif is_file:
                if is_binary_extension(entry.name):
                    continue
                if include and not _matches(include, rel, entry.name):
                    continue
                if exclude and _matches(exclude, rel, entry.name):
                    continue
                yield from emit((folder / entry.name).resolve(), None)

    yield from visit(root, "")
