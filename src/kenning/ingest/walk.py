"""Find the files to index under the paths a user gives, and nothing that should stay private.

- Walking is deterministic (sorted names, depth first) and iterative, so two runs see files in the
  same order and a tree nested thousands of folders deep is walked, not a RecursionError.
- Hidden files and folders (a name starting with '.') are left out inside walked folders, as ripgrep
  leaves them (`hidden` to include them); a file named directly is always read.
- `.gitignore`, `.ignore` and `.kenningignore` are honoured the way git and ripgrep honour them: each
  file applies to its folder and below, a deeper file's rules win, `!pattern` re-includes (pathspec's
  gitignore semantics). Tooling folders (.git, node_modules, build output...) are left out too.
- Secret-bearing files (SECRET_PATTERNS: .env files, private keys, certificates' keys, .netrc,
  credential stores) are skipped unless `include_secrets`; each skip is reported with its reason.
- A symbolic link is followed only when it resolves inside one of the folders being indexed (or with
  `follow_symlinks`): a link to /etc/passwd is never read. A loop of links ends, since every real
  folder is walked once.
- A path that does not exist or cannot be read is an error naming it, never a silent nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kenning.places.cachedir import is_tagged_cache

if TYPE_CHECKING:  # imported only when a walk meets an ignore file, so a run without one skips it
    import pathspec

IGNORE_FILES = (".gitignore", ".ignore", ".kenningignore")

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

# Files that carry credentials: never indexed unless asked for (`kenning index --include-secrets`).
SECRET_PATTERNS = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    "**/.aws/credentials",
    "**/.docker/config.json",
    "**/.kube/config",
    "credentials.json",
    "secrets.json",
    "secrets.yaml",
    "secrets.yml",
    # the same stores under the names people give copies of them
    "netrc",
    "npmrc",
    "pgpass",
    "pypirc",
    "git-credentials",
    "aws_credentials",
    "kubeconfig",
    "*.kubeconfig",
    "*.tfstate",
    "*.tfstate.backup",
    "service-account*.json",
    "service_account*.json",
    "*.ovpn",
)


CREDENTIALS_SKIP = "holds credentials (--include-secrets to index it)"


def _secret_regex(pattern: str) -> str:
    """One credential pattern as gitignore reads it (pathspec's GitIgnoreSpec, which
    tests/ingest/test_ingest_walk.py holds this to): a name at any depth, `*` any run within a name, a
    leading `**/` any folders; the path itself or a folder of that name."""
    name = pattern.removeprefix("**/")
    return "^(?:.+/)?" + "[^/]*".join(re.escape(part) for part in name.split("*")) + "(?:/|$)"


# the patterns as one regular expression: none is a negation, so a path is a secret when any
# matches, and one search over the alternatives costs a fraction of matching thirty patterns one by
# one for every path of a large tree
_SECRET_RE = re.compile("|".join(f"(?:{_secret_regex(p)})" for p in SECRET_PATTERNS))

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
        # virtual machines' disks, memory and snapshots
        ".qcow", ".qcow2", ".vmdk", ".vdi", ".vhd", ".vhdx", ".ova", ".hdd", ".vmem", ".vmsn", ".vmss",
        ".nvram", ".sparseimage", ".wim", ".swp",
        # compiled code and objects
        ".o", ".obj", ".a", ".lib", ".so", ".dylib", ".dll", ".exe", ".bin", ".elf", ".class", ".jar",
        ".war", ".ear", ".pyc", ".pyo", ".pyd", ".whl", ".egg", ".wasm", ".beam", ".dex", ".rlib",
        # fonts
        ".ttf", ".otf", ".woff", ".woff2", ".eot", ".pfb",
        # office and other binary documents kenning cannot read (DOCX and EPUB it can)
        ".doc", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".mobi",
        # databases, serialized data and model weights
        ".db", ".sqlite", ".sqlite3", ".mdb", ".parquet", ".feather", ".arrow", ".avro", ".npy",
        ".npz", ".pkl", ".pickle", ".h5", ".hdf5", ".onnx", ".pt", ".pth", ".ckpt", ".safetensors",
        ".gguf", ".db-wal", ".db-shm", ".sqlite-wal", ".sqlite-shm",
    }
)  # fmt: skip


class Found(NamedTuple):
    """A file the walk met: to index (skip and error None), skipped with a reason, or an error."""

    path: Path
    skip: str | None = None
    error: str | None = None


def path_key(path: Path | str) -> str:
    """How a path is written down in the index: its text, with bytes that are not UTF-8 (a file name
    from another system's encoding) as \\xNN, so it can be stored, shown and found again."""
    text = os.fspath(path)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# Files whose extension says binary but that a reader understands: macOS Messages' database
# (kenning.ingest.chat_imessage). Only the name is known here; its first bytes decide when it is read.
READABLE_BINARY_NAMES = frozenset({"chat.db"})


def is_binary_extension(path: Path | str) -> bool:
    """True when the file name alone says the content is not text (by the name's text: making a Path
    of each name would be a large share of walking a big tree)."""
    text = os.fspath(path)
    if os.path.splitext(text)[1].lower() not in BINARY_EXTENSIONS:
        return False
    return os.path.basename(text).lower() not in READABLE_BINARY_NAMES


def is_secret(rel: str) -> bool:
    """True for a path (relative to the walked root, '/' separated) that names a credentials file."""
    return _SECRET_RE.match(_posix_relative(rel)) is not None


def _posix_relative(rel: str) -> str:
    """A path as gitignore patterns read it: '/' between names, no leading '/' or './' (what
    pathspec's normalize_file makes of it)."""
    for sep in (os.sep, os.altsep):
        if sep and sep != "/":
            rel = rel.replace(sep, "/")
    if rel.startswith("/"):
        return rel[1:]
    return rel[2:] if rel.startswith("./") else rel


def _matches(patterns: Iterable[str], rel: str, name: str) -> bool:
    return any(fnmatch(rel, p) or fnmatch(name, p) for p in patterns)


def _default_excluded_dir(name: str) -> bool:
    return name in DEFAULT_EXCLUDED_DIRS or any(fnmatch(name, g) for g in DEFAULT_EXCLUDED_DIR_GLOBS)


class _IgnoreRules:
    """The ignore files met on the way down: (folder relative to the root, its compiled rules)."""

    def __init__(self, rules: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()):
        self.rules = rules

    def below(self, folder: Path, rel_folder: str) -> _IgnoreRules:
        lines: list[str] = []
        for name in IGNORE_FILES:
            try:
                lines.extend((folder / name).read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                continue
        if not lines:
            return self
        import pathspec

        return _IgnoreRules((*self.rules, (rel_folder, pathspec.GitIgnoreSpec.from_lines(lines))))

    def ignores(self, rel: str, is_dir: bool) -> bool:
        """The deepest file with a rule about this path decides (a `!` rule re-includes)."""
        for base, spec in reversed(self.rules):
            sub = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(sub + "/" if is_dir else sub)
            if result.include is not None:
                return bool(result.include)
        return False


class _Folder(NamedTuple):
    path: Path
    rel: str
    rules: _IgnoreRules


def discover(
    paths: Sequence[str | os.PathLike[str]],
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    include_secrets: bool = False,
    follow_symlinks: bool = False,
    hidden: bool = False,
) -> Iterator[Found]:
    """Every file under `paths`, each once, as Found (absolute, resolved path).

    Files named directly are always reported (a binary one as skipped, "binary extension") so the
    user learns why it was not indexed, and ignore files do not apply to them; inside walked folders,
    excluded directories, ignored paths and binary extensions are dropped silently, while secrets and
    links that lead outside are reported as skipped. Globs match the path relative to the walked root
    and the basename.
    """
    include = list(include or [])
    exclude = list(exclude or [])
    roots = [Path(raw).expanduser().absolute() for raw in paths]
    real_roots = [r.resolve() for r in roots if r.exists()]
    seen: set[Path] = set()

    def inside_roots(real: Path) -> bool:
        return any(real == root or root in real.parents for root in real_roots)

    for given in roots:
        try:
            st = given.stat()
        except FileNotFoundError:
            yield Found(given, error="no such file or folder")
            continue
        except OSError as exc:
            yield Found(given, error=f"cannot read ({exc.strerror or exc})")
            continue
        resolved = given.resolve()
        if os.path.isdir(given):
            walk = _Walk(resolved, include, exclude, include_secrets, follow_symlinks, hidden, inside_roots)
            for found in walk.files():
                if found.path not in seen or found.error:
                    seen.add(found.path)
                    yield found
        elif os.path.isfile(given):
            rel = given.as_posix()
            if include and not _matches(include, rel, given.name):
                continue
            if exclude and _matches(exclude, rel, given.name):
                continue
            if resolved in seen:
                continue
            seen.add(resolved)
            if is_binary_extension(given):
                yield Found(resolved, skip="binary extension")
            elif is_secret(given.name) and not include_secrets:
                yield Found(resolved, skip=CREDENTIALS_SKIP)
            else:
                yield Found(resolved)
        else:
            yield Found(resolved, skip=f"not a regular file (mode {st.st_mode:o})")


class _Walk:
    """One folder walked depth first in name order (a/x before b.md before c/y), without recursion."""

    def __init__(self, root, include, exclude, include_secrets, follow_symlinks, hidden, inside_roots):
        self.root = root
        self.hidden = hidden
        self.include, self.exclude = include, exclude
        self.include_secrets = include_secrets
        self.follow_symlinks = follow_symlinks
        self.inside_roots = inside_roots

    def files(self) -> Iterator[Found]:
        visited: set[tuple[int, int]] = set()
        stack: list[tuple[Iterator[os.DirEntry], _Folder]] = []
        opened = self._open(_Folder(self.root, "", _IgnoreRules()), visited)
        if isinstance(opened, Found):
            yield opened
            return
        if opened is not None:
            stack.append(opened)
        while stack:
            entries, folder = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            found = self._entry(folder.path, entry, folder.rel, folder.rules)
            if isinstance(found, _Folder):
                opened = self._open(found, visited)
                if isinstance(opened, Found):
                    yield opened
                elif opened is not None:
                    stack.append(opened)
            elif found is not None:
                yield found

    def _open(self, folder: _Folder, visited: set):
        """(its entries in name order, the folder with its ignore rules), None for a folder already
        walked (a loop of links), or a Found error when it cannot be read."""
        try:
            st = folder.path.stat()
            if (st.st_dev, st.st_ino) in visited:
                return None
            visited.add((st.st_dev, st.st_ino))
            with os.scandir(folder.path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            return Found(folder.path, error=f"cannot read folder ({exc.strerror or exc})")
        rules = folder.rules.below(folder.path, folder.rel)
        return iter(entries), _Folder(folder.path, folder.rel, rules)

    def _entry(self, folder: Path, entry: os.DirEntry, rel_folder: str, rules: _IgnoreRules):
        """A subfolder to walk, a Found, or None for what is silently left out."""
        rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
        path = folder / entry.name
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=True)
            is_file = not is_dir and entry.is_file(follow_symlinks=True)
        except OSError:
            return None  # vanished, or a name the system cannot stat: nothing to index
        if not (is_dir or is_file):
            return None  # sockets, fifos, devices, dangling links
        if entry.name.startswith(".") and not self.hidden:
            return None  # hidden files and folders, as ripgrep leaves them (--hidden to include)
        if is_link:
            real = path.resolve()
            if not self.follow_symlinks and not self.inside_roots(real):
                return Found(path, skip=f"link to {real}, outside the folders being indexed")
            path = real
        if is_dir:
            if _default_excluded_dir(entry.name) or rules.ignores(rel, True) or is_tagged_cache(path):
                return None
            if self.exclude and _matches(self.exclude, rel, entry.name):
                return None
            return _Folder(path, rel, rules)
        if is_binary_extension(entry.name) or rules.ignores(rel, False):
            return None
        if self.include and not _matches(self.include, rel, entry.name):
            return None
        if self.exclude and _matches(self.exclude, rel, entry.name):
            return None
        if is_secret(rel) and not self.include_secrets:
            return Found(path, skip=CREDENTIALS_SKIP)
        return Found(path)  # the root is resolved and links were resolved above: no need to again
