"""`MODEL@BASE_URL`: the one parser of the model specs that embedders and rerankers share.

MODEL may contain ':' (Ollama tags such as nomic-embed-text:latest); the base URL is what follows the
first '@' that starts an http:// or https:// URL.
"""

from __future__ import annotations

import re

_URL_AT = re.compile(r"@(?=https?://)", re.IGNORECASE)


def split_model_url(text: str, backend: str) -> tuple[str, str | None]:
    """(model, base URL or None) from `MODEL[@BASE_URL]` (after `backend:`); ValueError says what is
    wrong with it."""
    text = text.strip()
    match = _URL_AT.search(text)
    if match:
        model, url = text[: match.start()].strip(), text[match.end() :].strip()
    elif "@" in text:
        raise ValueError("the base URL after '@' must start with http:// or https://")
    else:
        model, url = text, None
    if not model:
        raise ValueError(f"give the model name, as {backend}:MODEL[@BASE_URL]")
    return model, url
