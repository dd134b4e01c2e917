"""discover(): which files get indexed, in what order, and why others are skipped."""

import os
from pathlib import Path

import pytest

from kenning.ingest import discover
from kenning.ingest.walk import Found


def touch(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rel_names(root: Path, results) -> list[str]:
    return [f.path.relative_to(root.resolve()).as_posix() for f in results if not (f.skip or f.error)]


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
    assert all(f.path.is_absolute() and f.skip is None and f.error is None for f in results)


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
        Found(inside_git.resolve()),
        Found((tree / "logo.png").resolve(), skip="binary extension"),
    ]
    # include/exclude still apply to files named directly.
    assert list(discover([tree / "b.md"], exclude=["*.md"])) == []
    assert list(discover([tree / "b.md"], include=["*.txt"])) == []


def test_missing_path_is_an_error(tmp_path: Path):
    missing = tmp_path / "nope.md"
    assert list(discover([missing])) == [Found(missing, error="no such file or folder")]


def test_relative_paths_are_resolved(tree: Path, monkeypatch):
    monkeypatch.chdir(tree)
    results = list(discover(["b.md", "."]))
    assert results[0] == Found((tree / "b.md").resolve())
    # b.md is not yielded a second time when the folder walk reaches it.
    assert [f.path.name for f in results].count("b.md") == 1
    assert len(results) == 5


def test_links_are_followed_only_inside_the_indexed_folders(tmp_path: Path):
    outside = tmp_path / "outside"
    touch(outside / "secret.txt")
    passwd = touch(tmp_path / "etc" / "passwd", "root:x:0:0\n")
    root = tmp_path / "root"
    touch(root / "own.txt")
    touch(root / "docs" / "guide.md")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "pw").symlink_to(passwd)
    (root / "loop").symlink_to(root, target_is_directory=True)  # a loop ends
    (root / "guide-again.md").symlink_to(root / "docs" / "guide.md")  # inside: followed, once
    (root / "docs-link").symlink_to(root / "docs", target_is_directory=True)
    results = list(discover([root]))
    assert rel_names(root, results) == ["docs/guide.md", "own.txt"]
    skipped = {f.path.name: f.skip for f in results if f.skip}
    assert set(skipped) == {"link", "pw"} and "outside the folders being indexed" in skipped["pw"]
    assert not any(f.path == passwd.resolve() and not f.skip for f in results)
    followed = [f.path.name for f in discover([root], follow_symlinks=True) if not f.skip]
    assert {"guide.md", "secret.txt", "passwd", "own.txt"} <= set(followed)


def test_ignore_files_work_as_git_and_ripgrep_read_them(tmp_path: Path):
    root = tmp_path / "repo"
    touch(root / ".gitignore", "*.log\n/out/\n!keep.log\n")
    touch(root / "app.log")
    touch(root / "keep.log")
    touch(root / "out" / "x.txt")
    touch(root / "src" / "out" / "y.txt")  # /out/ is anchored: this one stays
    touch(root / "src" / ".ignore", "generated.py\n")
    touch(root / "src" / "generated.py")
    touch(root / "src" / "main.py")
    touch(root / "notes" / ".kenningignore", "private/\n")
    touch(root / "notes" / "private" / "diary.md")
    touch(root / "notes" / "public.md")
    touch(root / "notes" / "deeper" / ".gitignore", "!*.log\n")
    touch(root / "notes" / "deeper" / "kept.log")  # a deeper file's rule wins
    assert rel_names(root, discover([root])) == [  # hidden files (.gitignore itself) are left out
        "keep.log",
        "notes/deeper/kept.log",
        "notes/public.md",
        "src/main.py",
        "src/out/y.txt",
    ]


def test_secrets_are_skipped_and_said_unless_asked_for(tmp_path: Path):
    root = tmp_path / "home"
    for rel in [".env", ".env.local", "id_rsa", "id_ed25519", "server.pem", "tls.key", ".netrc",
                ".aws/credentials", "notes.md", "id_rsa.pub"]:  # fmt: skip
        touch(root / rel, "SECRET=1\n")
    results = list(discover([root], hidden=True))
    assert rel_names(root, results) == ["id_rsa.pub", "notes.md"]
    skipped = sorted(f.path.relative_to(root.resolve()).as_posix() for f in results if f.skip)
    assert skipped == [".aws/credentials", ".env", ".env.local", ".netrc", "id_ed25519", "id_rsa",
                       "server.pem", "tls.key"]  # fmt: skip
    assert all("--include-secrets" in f.skip for f in results if f.skip)
    assert len(rel_names(root, discover([root], include_secrets=True, hidden=True))) == 10
    assert rel_names(root, discover([root])) == ["id_rsa.pub", "notes.md"]  # dotfiles: hidden anyway
    assert list(discover([root / ".env"]))[0].skip  # named directly: still refused unless asked


def test_a_thousand_folders_deep_is_walked(tmp_path: Path):
    deep = tmp_path / "d"
    path = deep
    path.mkdir()
    for _ in range(1000):  # os.makedirs itself recurses: one level at a time
        path = path / "x"
        path.mkdir()
    (path / "bottom.md").write_text("at the bottom\n")
    try:
        assert [f.path.name for f in discover([deep])] == ["bottom.md"]
    finally:  # shutil.rmtree recurses too: take it down one level at a time
        (path / "bottom.md").unlink()
        while path != tmp_path:
            path.rmdir()
            path = path.parent


def test_names_that_are_not_utf8_are_found(tmp_path: Path):
    root = tmp_path / "odd"
    root.mkdir()
    raw = os.path.join(os.fsencode(root), b"caf\xe9.txt")  # Latin-1, not UTF-8
    with open(raw, "wb") as fh:
        fh.write(b"menu\n")
    touch(root / "plain.txt")
    names = sorted(f.path.name for f in discover([root]))
    assert len(names) == 2 and "plain.txt" in names


def test_the_secret_patterns_as_one_expression_match_what_pathspec_matches():
    """`is_secret` searches the credential patterns as one regular expression; it must say what the
    patterns say through pathspec, for each pattern's own names and for their near misses."""
    import pathspec

    from kenning.ingest.walk import SECRET_PATTERNS, is_secret

    secrets = pathspec.GitIgnoreSpec.from_lines(SECRET_PATTERNS)
    assert all(p.include for p in secrets.patterns)  # no negation: any match is a secret
    names = []
    for pattern in SECRET_PATTERNS:
        plain = pattern.replace("**/", "").replace("*", "x")
        names += [plain, plain + "x", "x" + plain, plain + "/inner", plain.replace(".", "_")]
        names += [plain.replace("x", "x/y"), plain.replace("-", "_"), plain.upper()]
    paths = [p for name in names for p in (name, f"sub/dir/{name}", f"./{name}", f"/{name}", f".aws/{name}")]
    paths += ["notes.md", "env", ".env.local", "a/.envrc", "keys/server.pem.txt", ".kube/config.bak"]
    for path in paths:
        assert is_secret(path) == bool(secrets.match_file(path)), path
    assert is_secret("deep/.aws/credentials") and is_secret("x/.env") and not is_secret("notes.md")
