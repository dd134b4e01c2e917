"""What a write reports: IndexReport (an `add` or a removal), EmbedReport (an `embed`), and paths
shown as a person reads them."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kenning.ingest.walk import CREDENTIALS_SKIP, path_key


def display_path(path: str | Path) -> str:
    """A path as a person wants to read it: relative to the working directory when inside it (bytes
    that are not UTF-8 in a file name shown as \\xNN)."""
    text, cwd = os.fspath(path), os.getcwd()
    inside = cwd.rstrip(os.sep) + os.sep  # by its text, as Path.relative_to does, without its objects
    if text == cwd:
        text = "."
    elif text.startswith(inside):
        text = text[len(inside) :]
    return path_key(text)


@dataclass
class IndexReport:
    """What one `Index.add` run did."""

    files_seen: int = 0  # files the walk found
    files_indexed: int = 0  # new or changed files, read and indexed
    files_unchanged: int = 0  # files whose content had not changed since they were indexed
    files_removed: int = 0  # files taken out of the index (gone from disk, or their collection removed)
    chunks_added: int = 0
    chunks_kept: int = 0  # chunks of changed files the index held already (same content), kept
    chunks_removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): not indexed, by design
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why): could not be indexed
    missing: list[str] = field(default_factory=list)  # paths named on the command line that failed
    warnings: list[str] = field(default_factory=list)
    merged_segments: bool = False  # the run merged the index's segments
    substring_indexed: int = 0  # chunks already stored, put in the substring index when it was turned on
    seconds: float = 0.0
    generation: int = 0  # the index's generation after the run's commit

    def merge(self, other: IndexReport) -> None:
        """Add another run's counts to this one (several collections indexed by one command)."""
        for name, value in other.__dict__.items():
            if isinstance(value, bool):
                setattr(self, name, getattr(self, name) or value)
            elif isinstance(value, int | float) and name != "generation":
                setattr(self, name, getattr(self, name) + value)
            elif isinstance(value, list):
                getattr(self, name).extend(value)
        self.generation = other.generation

    def to_dict(self) -> dict[str, Any]:
        """The report as data (what `kenning index --json` prints)."""
        d = dict(self.__dict__)
        d["skipped"] = [{"path": p, "reason": r} for p, r in self.skipped]
        d["errors"] = [{"path": p, "error": e} for p, e in self.errors]
        return d

    def skip_reasons(self) -> dict[str, int]:
        """How many files were skipped for each reason (for the summary line)."""
        reasons: dict[str, int] = {}
        for _, reason in self.skipped:
            key = "link outside the indexed folders" if reason.startswith("link to ") else reason
            key = "past a size limit" if "limit" in reason else key
            key = CREDENTIALS_SKIP if reason.startswith("holds credentials") else key
            reasons[key] = reasons.get(key, 0) + 1
        return reasons


ProgressCallback = Callable[[str, int, int], None]


@dataclass
class EmbedReport:
    """What one `Index.embed` run did."""

    model: str = ""
    backend: str = ""
    total: int = 0
    embedded: int = 0
    remaining: int = 0  # still without a vector (a run with `limit` leaves the rest for the next)
    seconds: float = 0.0
    per_second: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The report as data."""
        return dict(self.__dict__)
