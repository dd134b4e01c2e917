"""The folders this user indexed into each index, kept in the user's own state folder.

A writing call from an agent or the web page (`kenning serve --allow-write`, `kenning mcp
--allow-write`) may index only inside folders the user already indexed into that index. The index's
own rows cannot say which those are: an index folder may come from anyone, and a source row naming
`/home/you/.ssh/known_hosts` would open `~/.ssh` to an agent. So every `Index.add` records its
folders where only this user writes, `$XDG_STATE_HOME/kenning/roots/` (else `~/.local/state/...`),
in one small JSON file per index, named by a hash of the index's real path (or its store's
location). An index handed over has no record: writing calls are refused until the user indexes
into it once.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from kenning.sidefiles.seal import read_regular

MAX_ROOTS = 1000  # the record keeps the most recent folders; more are not what an agent writes into
MAX_BYTES = 1 << 20


def roots_file(index_location: str) -> Path:
    base = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    digest = hashlib.sha256(index_location.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(base) / "kenning" / "roots" / f"{digest}.json"


def index_location(directory: Path | None, location: str) -> str:
    """What names an index here: its folder's real path, else its store's location."""
    return os.path.realpath(directory) if directory is not None else location


def remembered(index_location: str) -> list[Path]:
    """The folders this user indexed into the index (none when there is no readable record)."""
    raw = read_regular(roots_file(index_location), MAX_BYTES)
    try:
        data = json.loads(raw) if raw is not None else None
    except ValueError:
        return []
    if not isinstance(data, dict) or data.get("index") != index_location:
        return []
    if not isinstance(data.get("roots"), list):
        return []
    return [Path(r) for r in data["roots"] if isinstance(r, str) and os.path.isabs(r)]


def remember(index_location: str, paths: Iterable[str | os.PathLike[str]]) -> None:
    """Add the folders of `paths` (a folder itself, a file's parent) to the index's record. Best
    effort: a state folder that cannot be written leaves writing calls refused, nothing else."""
    folders = []
    for path in paths:
        real = Path(os.path.realpath(Path(path).expanduser()))
        folders.append(str(real if real.is_dir() else real.parent))
    known = [str(r) for r in remembered(index_location)]
    roots = list(dict.fromkeys([*folders, *known]))[:MAX_ROOTS]
    if roots == known:
        return
    target = roots_file(index_location)
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"index": index_location, "roots": roots}, fh)
        os.replace(tmp, target)
    except OSError:
        pass
