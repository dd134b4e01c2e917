"""Where remote models are reached: only ever from the user, never from an index.

An index records which model made its vectors (backend, model name, dimension, fingerprint) and
nothing about where that model is served. If it recorded a URL, anyone who hands you an index folder
(or can write to one) would receive your API key with every query. So the base URL of a remote
backend comes from the user alone, in this order:

1. the spec the user gives (`--embedder openai:MODEL@URL`, `--rerank ...`, or the Python keyword);
2. the environment: `KENNING_OPENAI_URL` (else `OPENAI_BASE_URL`, as the OpenAI SDK reads it) and
   `KENNING_OLLAMA_URL` (else `OLLAMA_HOST`, as Ollama's clients read it);
3. the user's config file, outside every index and project: `$KENNING_CONFIG`, else
   `$XDG_CONFIG_HOME/kenning/config.toml`, else `~/.config/kenning/config.toml`:

       [endpoints]
       openai = "https://api.openai.com/v1"
       ollama = "http://localhost:11434"

A model folder (a sentence-transformers model, which loading would run) comes from the user alone
too: `--embedder st:DIR`, else `KENNING_EMBEDDER`, else `embedder = "st:DIR"` in that config file.

A project's `kenning.toml` cannot name an endpoint or a model either: a cloned repository is not
the user.
Keys are read from the environment only (KENNING_EMBED_API_KEY, KENNING_RERANK_API_KEY,
OPENAI_API_KEY), never from a file kenning writes.
"""

from __future__ import annotations

import os
from pathlib import Path

REMOTE_BACKENDS = ("openai", "ollama")
ENDPOINT_ENVS = {
    "openai": ("KENNING_OPENAI_URL", "OPENAI_BASE_URL"),
    "ollama": ("KENNING_OLLAMA_URL", "OLLAMA_HOST"),
}


class EndpointError(ValueError):
    """A remote model the user has not said where to reach, or a user config that cannot be read."""


def user_config_path() -> Path:
    """The user's own kenning config file (it may not exist)."""
    explicit = os.environ.get("KENNING_CONFIG", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    return Path(base) / "kenning" / "config.toml"


def user_endpoint(backend: str) -> str | None:
    """The base URL the user configured for a remote backend, or None when they configured none."""
    for name in ENDPOINT_ENVS.get(backend, ()):
        value = os.environ.get(name, "").strip()
        if value:
            return _with_scheme(value)
    path = user_config_path()
    endpoints = _user_config().get("endpoints", {})
    if not isinstance(endpoints, dict):
        raise EndpointError(f"{path}: [endpoints] must be a table of backend = URL")
    value = endpoints.get(backend)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise EndpointError(f"{path}: endpoints.{backend} must be a URL string")
    return _with_scheme(value.strip())


def user_embedder() -> str | None:
    """The embedder spec the user set for indexes whose model kenning cannot rebuild from the index
    alone (a sentence-transformers folder): $KENNING_EMBEDDER, else `embedder` in the user config."""
    value = os.environ.get("KENNING_EMBEDDER", "").strip()
    if value:
        return value
    value = _user_config().get("embedder")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise EndpointError(f"{user_config_path()}: embedder must be a spec string, as st:DIR")
    return value.strip()


def not_configured(backend: str, model: str) -> str:
    """What to tell a user whose index needs a remote model they have not said where to reach."""
    envs = " or ".join(ENDPOINT_ENVS[backend])
    return (
        f"this index's vectors come from {backend} model {model!r}, and kenning never takes a model's "
        f"address from an index: give --embedder {backend}:{model}@URL, set {envs}, or add "
        f'[endpoints] {backend} = "URL" to {user_config_path()}'
    )


def _user_config() -> dict:
    """The user's config file as a table ({} when there is none)."""
    path = user_config_path()
    import tomllib  # only when the environment does not answer (others skip its import)

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise EndpointError(f"{path}: cannot read the user config ({exc})") from exc


def _with_scheme(value: str) -> str:
    """OLLAMA_HOST is often written host:port; a URL needs its scheme."""
    return value if "://" in value else f"http://{value}"
