"""A seal on the files this user's kenning wrote beside an index, so that a file someone else wrote
is never handed to a native loader.

The saved HNSW graph (kenning.sidefiles.ann) is opened by usearch, memory-mapped, and walked in C: a
graph file with a flipped byte can crash the process, and a crafted one could do worse. Its stamp
and the index's record of it are in the index folder too, so whoever hands over an index can make
them agree. What they cannot make is the seal: an HMAC, under a key only this user
can read, of the file's identity on this machine (device, inode, size, modification time) and its
stamp. A copied, cloned, unpacked or rewritten file has another identity, so its seal fails and
kenning searches the vectors exactly instead (the next write saves a sealed graph again). The
lengths file (kenning.sidefiles.lengths_file) is sealed the same way; an unsealed one is not used and
the arrays are built from the segments.

Every side file is read through `read_regular`: a FIFO, a device or a symlink planted in its place is
never opened (a FIFO would block the reader forever, /dev/zero would never end).

The key is 32 random bytes in `$XDG_STATE_HOME/kenning/seal.key` (else `~/.local/state/...`), made
on first use with mode 0600 and used only when it is a regular file owned by this user that nobody
else can read. Where no key can be kept, nothing is sealed and no saved graph is trusted.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

KEY_BYTES = 32


def key_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(base) / "kenning" / "seal.key"


@functools.cache
def _key(path: Path) -> bytes | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(KEY_BYTES))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
                return None
            key = fh.read(KEY_BYTES + 1)
    except OSError:
        return None
    return key if len(key) == KEY_BYTES else None


def seal(path: Path, text: str) -> str | None:
    """The seal of the file at `path` as it is now, with `text` (its stamp); None without a key."""
    key = _key(key_path())
    if key is None:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # a symlink, FIFO or device is nobody's file to seal
    message = f"{text}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}".encode(
        "utf-8", "surrogateescape"
    )
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def is_sealed(path: Path, text: str, given) -> bool:
    """Whether `given` is the seal this user's kenning made of the file at `path` with `text`."""
    if not isinstance(given, str):
        return False
    expected = seal(path, text)
    return expected is not None and hmac.compare_digest(expected, given)


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file at `path` when it holds at most `limit` of them; None for a
    missing file, a symlink, a FIFO, a device, or a larger file. Never blocks and never follows a
    link: the index folder may hold anything in the place of kenning's own files."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = fh.read(limit + 1)
    return data if len(data) <= limit else None
