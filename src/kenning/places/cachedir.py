"""Cache folders, tagged by the Cache Directory Tagging convention (https://bford.info/cachedir/).

A folder holding a CACHEDIR.TAG that starts with the signature line is regenerable output. kenning
tags its own index folders so, and the walk leaves every tagged folder out: an index kept inside the
folder it indexes is never read back as documents, and backup tools skip it too.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHEDIR_TAG = "CACHEDIR.TAG"
CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"


def is_tagged_cache(folder: Path) -> bool:
    """True for a folder tagged as a cache (a kenning index, a build cache)."""
    try:
        with open(folder / CACHEDIR_TAG, "rb") as tag:
            return tag.read(len(CACHEDIR_SIGNATURE)) == CACHEDIR_SIGNATURE.encode()
    except OSError:
        return False


def tag_as_cache(folder: Path) -> None:
    """Tag a folder kenning keeps an index in; a read-only folder simply stays untagged."""
    tag = folder / CACHEDIR_TAG
    if tag.exists():
        return
    try:
        tag.write_text(
            f"{CACHEDIR_SIGNATURE}\n# This folder is a kenning search index; `kenning index` rebuilds it.\n"
            "# See https://bford.info/cachedir/\n",
            encoding="utf-8",
        )
    except OSError:
        pass


def user_cache(name: str) -> Path:
    """kenning's folder `name` in the user's cache: `$XDG_CACHE_HOME/kenning/NAME`, else
    `~/.cache/kenning/NAME` (eval indexes, prepared models)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "kenning" / name
