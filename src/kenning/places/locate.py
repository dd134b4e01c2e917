"""Finding the index a command works on, with the standard library only (the warm-server client
imports this without loading the engine).

Like git finds its repository: --index; else the nearest of a `.kenning/` index or a kenning.toml
that names one, walking up from the current folder; else $KENNING_INDEX; else `./.kenning`. A
kenning.toml comes with whatever repository holds it, so the index it names counts only inside its
own folder."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

CONFIG_NAME = "kenning.toml"
DEFAULT_INDEX_NAME = ".kenning"


def find_config(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def locate_index(
    flag: str | os.PathLike | None,
    start: Path | None = None,
    config_path: Path | None = None,
    config_index: Path | None = None,
) -> Path:
    """The index folder (see the module docstring). `config_path`/`config_index` are the nearest
    kenning.toml and the index it names, when the caller has read it already."""
    if flag:
        return str(flag) if _is_url(flag) else Path(flag)
    here = (start or Path.cwd()).resolve()
    if config_path is None:
        config_path = find_config(here)
        config_index = _named_index(config_path) if config_path else None
    for folder in (here, *here.parents):
        if config_path is not None and config_path.parent == folder and config_index is not None:
            return config_index
        if (folder / DEFAULT_INDEX_NAME / "index.db").is_file():
            return folder / DEFAULT_INDEX_NAME
    if os.environ.get("KENNING_INDEX"):
        return Path(os.environ["KENNING_INDEX"])
    if config_index is not None:
        return config_index
    return Path(DEFAULT_INDEX_NAME)


def _named_index(config_path: Path) -> Path | None:
    try:
        data = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None  # the full settings loader reports a broken file; here it only names no index
    return inside_project(config_path.parent, data["index"]) if "index" in data else None


def inside_project(base: Path, value) -> Path | None:
    """`value` resolved against a project folder (links followed), or None when it leads outside it:
    a project's kenning.toml names only paths inside its own folder (kenning.api.settings)."""
    root = base.resolve()
    resolved = (root / str(value)).resolve()
    return resolved if resolved == root or resolved.is_relative_to(root) else None


def _is_url(flag) -> bool:
    """A server store's URL (kenning.store.is_server_url; not imported here: this module is imported
    by every command before anything else)."""
    return isinstance(flag, str) and flag.lower().startswith(("postgresql://", "postgres://"))
