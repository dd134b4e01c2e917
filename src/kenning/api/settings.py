"""Project configuration: `kenning.toml`, found by walking up from the working directory.

    index = ".kenning"                 # relative to the file
    [search]                           # defaults for `kenning search` and `kenning eval`
    limit = 10
    k1 = 0.9
    strict = false
    mode = "hybrid"                    # lexical, dense, hybrid
    fusion = "norm"                    # rrf, norm, blend, rerank; w_dense = 1.0, ...
    [collections.notes]                # `kenning index` with no paths indexes every collection
    paths = ["notes"]
    include = ["*.md"]
    exclude = ["drafts/*"]
    [glossary]
    scope = "notes"                    # default scope of `kenning glossary add`

Precedence, highest first: command-line flags, then environment (KENNING_<KNOB> such as KENNING_K1
or KENNING_STRICT), then this file, then kenning's defaults. The index itself is found as git finds
a repository (resolve_index_dir): --index, then the nearest `.kenning/` or kenning.toml `index`
walking up from the current folder, then KENNING_INDEX, then `./.kenning`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from kenning.lexical.bm25 import Bm25Params
from kenning.places.locate import locate_index
from kenning.search.fusion import fusion_knobs


def search_keys() -> dict[str, str]:
    """Every search setting a flag, the environment or kenning.toml may set, with its type: the BM25
    knobs, the fusion knobs and every registered signal's weight and knobs."""
    keys = {f.name: str(f.type) for f in fields(Bm25Params)}
    keys |= {name: type(default).__name__ for name, (default, _help) in fusion_knobs().items()}
    return keys | {"limit": "int", "strict": "bool", "mode": "str", "fusion": "str"}


class ConfigError(ValueError):
    """A config file that cannot be used; names the file and the key."""


@dataclass
class CollectionConfig:
    name: str
    paths: list[Path]
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)


@dataclass
class Config:
    path: Path | None = None
    index: Path | None = None
    search: dict[str, Any] = field(default_factory=dict)
    collections: dict[str, CollectionConfig] = field(default_factory=dict)
    glossary_scope: str | None = None


def _convert(value: Any, kind: str, where: str) -> bool | int | float | str:
    kind = str(kind)
    try:
        if "bool" in kind:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if "int" in kind:
            return int(value)
        if "float" in kind:
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {value!r} is not a valid {kind}") from exc


def _store_url(value: object, path: Path) -> str:
    """A config file's `store`: a postgresql:// URL without a password (the password belongs in
    PGPASSWORD or ~/.pgpass, never in a file kenning reads settings from)."""
    from urllib.parse import urlsplit

    from kenning.store import is_server_url

    url = str(value)
    if not is_server_url(url):
        raise ConfigError(f"{path}: store = {url!r} is not a postgresql:// URL")
    if urlsplit(url).password is not None:
        raise ConfigError(
            f"{path}: store holds a password; remove it and put it in PGPASSWORD or ~/.pgpass instead"
        )
    return url


def _inside_project(base: Path, value: object, path: Path, key: str) -> Path:
    """A path a project file names, resolved (links followed); only inside the project's own folder.

    A kenning.toml comes with a cloned repository: naming the user's home as a collection would read
    their files into an index the repository controls, and naming another index would write into it.
    Paths elsewhere are the user's to give: --index, KENNING_INDEX or paths on the command line."""
    from kenning.places.locate import inside_project

    resolved = inside_project(base, value)
    if resolved is None:
        raise ConfigError(
            f"{path}: {key} = {str(value)!r} is outside the project folder {base.resolve()}; a project "
            "file names only paths inside its folder (give others on the command line, or --index)"
        )
    return resolved


def load_config(path: Path | None) -> Config:
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    base = path.parent
    config = Config(path=path)
    if "store" in data:
        raise ConfigError(
            f"{path}: a project file cannot name a server store (a cloned repository would choose where "
            "your files go): give --store URL, set KENNING_STORE, or put store = URL in your own "
            "~/.config/kenning/config.toml"
        )
    unknown = set(data) - {"index", "search", "collections", "glossary"}
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    if "index" in data:
        config.index = _inside_project(base, data["index"], path, "index")
    keys = search_keys()
    for key, value in (data.get("search") or {}).items():
        if key not in keys:
            raise ConfigError(f"{path}: [search] {key} is not a search setting ({', '.join(keys)})")
        config.search[key] = _convert(value, keys[key], f"{path}: [search] {key}")
    for name, spec in (data.get("collections") or {}).items():
        if not isinstance(spec, dict) or not spec.get("paths"):
            raise ConfigError(f"{path}: [collections.{name}] needs paths = [...]")
        config.collections[name] = CollectionConfig(
            name,
            [_inside_project(base, p, path, f"[collections.{name}] paths") for p in spec["paths"]],
            [str(g) for g in spec.get("include", [])],
            [str(g) for g in spec.get("exclude", [])],
        )
    scope = (data.get("glossary") or {}).get("scope")
    config.glossary_scope = str(scope) if scope is not None else None
    return config


def resolve_index_dir(flag: str | None, config: Config, start: Path | None = None) -> Path | str:
    """Which index a command works on: --index DIR or --store URL; else $KENNING_STORE; else the
    user config's `store`; else the folder found as git finds its repository (kenning.places.locate)."""
    if not flag:
        store = os.environ.get("KENNING_STORE", "").strip() or user_store()
        if store:
            return store
    return locate_index(flag, start, config.path, config.index) if config.path else locate_index(flag, start)


def user_store() -> str | None:
    """The server store named in the user's own config file (`store = "postgresql://..."` in
    ~/.config/kenning/config.toml, kenning.models.endpoints.user_config_path), or None.

    Only the user names a server: a project's kenning.toml cannot, as it cannot name a model
    endpoint, since a cloned repository would otherwise send your files to a server of its choosing."""
    from kenning.models.endpoints import user_config_path

    path = user_config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the user config ({exc})") from exc
    return _store_url(data["store"], path) if "store" in data else None


def resolve_search(flags: dict[str, Any], config: Config) -> dict[str, Any]:
    """Each search setting from the first place that sets it: flag, environment, file, default."""
    out: dict[str, Any] = {}
    for key, kind in search_keys().items():
        if flags.get(key) is not None:
            out[key] = flags[key]
        elif (env := os.environ.get(f"KENNING_{key.upper()}")) is not None:
            out[key] = _convert(env, kind, f"KENNING_{key.upper()}")
        elif key in config.search:
            out[key] = config.search[key]
    return out
