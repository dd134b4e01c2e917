"""discover(): which files get indexed, in what order, and why others are skipped."""

import os
from pathlib import Path

import pytest

from kenning.ingest import discover


def touch(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rel_names(root: Path, results) -> list[str]:
    return [p.relative_to(root.resolve()).as_posix() for p, reason in results if reason is None]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    for rel in [
        "b.md",
        "a/z.txt",
        "a/inner/deep.py",
        "c.txt",
        ".git/config",
        "node_modules/pkg/index.js",
        "__pycache__/m.txt",
        "build/out.txt",
        "pkg.egg-info/PKG-INFO",
        "sub/.venv/lib.py",
        ".kenning/state.txt",
        "logo.png",
        "a/archive.zip",
        "drafts/old.md",
    ]:
        touch(root / rel)
    return root


def test_default_excludes_and_sorted_order(tree: Path):
    results = list(discover([tree]))
    assert rel_names(tree, results) == [
        "a/inner/deep.py",
        "a/z.txt",
        "b.md",
        "c.txt",
        "drafts/old.md",
    ]
    # Everything found in a walk is absolute and resolved; silently skipped files are not reported.
    assert all(p.is_absolute() and reason is None for p, reason in results)


def test_include_and_exclude_globs(tree: Path):
    md_only = rel_names(tree, discover([tree], include=["*.md"]))
    assert md_only == ["b.md", "drafts/old.md"]

    # Excluding a directory by name drops everything under it; relative-path globs work too.
    no_drafts = rel_names(tree, discover([tree], exclude=["drafts"]))
    assert no_drafts == ["a/inner/deep.py", "a/z.txt", "b.md", "c.txt"]
    no_a_txt = rel_names(tree, discover([tree], exclude=["a/*.txt"]))
    assert no_a_txt == ["a/inner/deep.py", "b.md", "c.txt", "drafts/old.md"]

    both = rel_names(tree, discover([tree], include=["*.md", "*.py"], exclude=["old.md"]))
    assert both == ["a/inner/deep.py", "b.md"]


def test_named_files_bypass_default_excludes(tree: Path):
    inside_git = tree / ".git" / "config"
    results = list(discover([inside_git, tree / "logo.png"]))
    assert results == [
        (inside_git.resolve(), None),
        ((tree / "logo.png").resolve(), "binary extension"),
    ]
    # include/exclude still apply to files named directly.
    assert list(discover([tree / "b.md"], exclude=["*.md"])) == []
    assert list(discover([tree / "b.md"], include=["*.txt"])) == []


def test_missing_path_reported(tmp_path: Path):
    missing = tmp_path / "nope.md"
    assert list(discover([missing])) == [(missing.resolve(), "not found")]


def test_relative_paths_are_resolved(tree: Path, monkeypatch):
    monkeypatch.chdir(tree)
    results = list(discover(["b.md", "."]))
    assert results[0] == ((tree / "b.md").resolve(), None)
    # b.md is not yielded a second time when the folder walk reaches it.
    assert [p.name for p, _ in results].count("b.md") == 1
    assert len(results) == 5


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinked_directories_not_followed(tmp_path: Path):
    outside = tmp_path / "outside"
    touch(outside / "secret.txt")
    root = tmp_path / "root"
    touch(root / "own.txt")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    results = list(discover([root]))
    assert [p.name for p, _ in results] == ["own.txt"]
