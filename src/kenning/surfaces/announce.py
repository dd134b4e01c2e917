"""Where a running `kenning serve` tells the command line it is there, and how the command line
checks that the announcement is the user's own. Standard library only: the warm-server client reads
this before the engine loads.

An index folder is not the user's: a cloned repository may commit a `.kenning/` with a planted
`serve.json` (a pid of 0 passes `kill(0, 0)`), and anything the command line then forwarded to it
(the query, the working folder, settings) would go to an address the repository chose. So the
announcement lives in a per-user runtime folder that only this user can write: `$XDG_RUNTIME_DIR/
kenning/` when that is a private folder of this user's, else `<tmp>/kenning-<uid>/`, created 0700 and
refused unless it is a real folder (not a link) owned by this user with no group or other access.
It is named by a hash of the index folder's absolute path, and it is used only when:

- it is a regular file owned by this user, mode 0600, of a few hundred bytes;
- it names this index folder;
- its pid is a live process other than this one, above 1, and (where /proc exists) that process's
  command line is a kenning server's;
- its URL is http on a loopback address (127.0.0.1, ::1, localhost) with a port.

Anything else: no server, and the command runs in its own process. The announcement also lists the
environment variables the server takes from a forwarded command (its search settings, as
KENNING_K1): the client forwards those and no other (kenning.surfaces.client).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

MAX_BYTES = 8192  # an announcement is a pid, a URL, a token, a path and a few dozen setting names
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def runtime_dir(create: bool = False) -> Path | None:
    """This user's private runtime folder for kenning (None when none is safe to use)."""
    base = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if base and _private_dir(Path(base)):
        folder = Path(base) / "kenning"
    else:
        folder = Path(tempfile.gettempdir()) / f"kenning-{os.getuid()}"
    if create:
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            return None
    return folder if _private_dir(folder) else None


def announcement_path(index_dir: Path, create: bool = False) -> Path | None:
    """Where the server of `index_dir` announces itself (None when no private folder is usable)."""
    folder = runtime_dir(create)
    if folder is None:
        return None
    digest = hashlib.sha256(os.path.realpath(index_dir).encode("utf-8", "surrogateescape"))
    return folder / f"serve-{digest.hexdigest()[:32]}.json"


def write_announcement(
    index_dir: Path, pid: int, url: str, local_token: str, settings: list[str] = ()
) -> Path | None:
    """Announce a server of `index_dir`, readable by this user only; None when it cannot be.
    `settings`: the environment variables the server takes from a forwarded command."""
    path = announcement_path(index_dir, create=True)
    if path is None:
        return None
    data = {
        "pid": pid,
        "url": url,
        "local_token": local_token,
        "index": os.path.realpath(index_dir),
        "settings": sorted(settings),
    }
    tmp = path.with_suffix(f".{pid}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)
    return path


def remove_announcement(index_dir: Path, pid: int) -> None:
    """Take back this process's announcement (another server's is left alone)."""
    path = announcement_path(index_dir)
    if path is not None and (read_announcement(index_dir, check_process=False) or {}).get("pid") == pid:
        path.unlink(missing_ok=True)


def read_announcement(index_dir: Path, check_process: bool = True) -> dict | None:
    """The announcement of a live server of `index_dir` that passes every check in the module
    docstring, or None."""
    path = announcement_path(index_dir)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        raw = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw[:MAX_BYTES].decode("utf-8")) if len(raw) <= MAX_BYTES else None
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("index") != os.path.realpath(index_dir):
        return None
    pid, url, token = data.get("pid"), data.get("url"), data.get("local_token")
    if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(token, str) or not token:
        return None
    if not isinstance(url, str) or not _loopback_url(url):
        return None
    settings = data.setdefault("settings", [])
    if not isinstance(settings, list) or not all(isinstance(name, str) for name in settings):
        return None
    if check_process and not _live_server(pid):
        return None
    return data


def _private_dir(folder: Path) -> bool:
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def _loopback_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return parts.scheme == "http" and parts.hostname in LOOPBACK and port is not None and port > 0


def _live_server(pid: int) -> bool:
    """A live process other than this one, above init, that runs kenning's server where that can be
    seen (/proc)."""
    if pid <= 1 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except (OSError, OverflowError):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not Path("/proc/self").exists():
        return True  # no /proc here: the owner, mode and pid checks stand alone
    try:
        words = cmdline.read_bytes()[:65536].split(b"\0")
    except OSError:
        return False
    return any(b"kenning" in w for w in words) and b"serve" in words
