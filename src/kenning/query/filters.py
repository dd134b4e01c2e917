"""Scopes and filters: which chunks a search may return.

Filters resolve to a roaring bitmap of allowed chunk ids that the funnel intersects with the
candidates, so they are counted there like any other stage. Resolved bitmaps are cached per index
generation, since the same filters are typically used for many queries.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pyroaring import BitMap

# the kinds of file a search may be limited to (kenning.ingest.detect_kind names them)
KINDS = ("markdown", "code", "pdf", "html", "docx", "epub", "notebook", "messages", "beir", "text")
DEFAULT_COLLECTION = "default"
_RELATIVE = re.compile(r"^(\d+)\s*([hdwmy])$")


class FilterError(ValueError):
    """A filter value that cannot be read; the message names the option and the value."""


EARLIEST = datetime(1, 1, 1, tzinfo=UTC).timestamp()


def parse_time(value: str, option: str, now: datetime | None = None) -> float:
    """ISO date/datetime (UTC unless it says otherwise), or a relative age like 7d, 12h, 2w, 6m, 1y."""
    text = value.strip()
    m = _RELATIVE.match(text)
    if m:
        amount, unit = int(m.group(1)), m.group(2)
        days = {"h": amount / 24, "d": amount, "w": 7 * amount, "m": 30 * amount, "y": 365 * amount}[unit]
        try:
            return ((now or datetime.now(UTC)) - timedelta(days=days)).timestamp()
        except OverflowError:  # an age older than the calendar (99999999d): every date is after it
            return EARLIEST
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise FilterError(f"{option} {value!r}: expected a date like 2026-01-31, or an age like 7d") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def parse_meta(pairs: list[str] | tuple[str, ...], name: str = "meta") -> tuple[tuple[str, str], ...]:
    """KEY=VALUE pairs; an error names the setting as `name` (`--meta` on the command line)."""
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not re.fullmatch(r"[\w.-]+", key.strip()):
            raise FilterError(f"{name} {pair!r}: expected KEY=VALUE (front matter key, e.g. status=draft)")
        out.append((key.strip(), value.strip()))
    return tuple(out)


@dataclass(frozen=True)
class Filters:
    collections: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    since: float | None = None
    before: float | None = None
    meta: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        for kind in self.kinds:
            if kind not in KINDS:
                raise FilterError(f"type {kind!r}: choose from {', '.join(KINDS)}")
        if self.since is not None and self.before is not None and self.since >= self.before:
            raise FilterError("since must be earlier than before")

    @classmethod
    def parse(
        cls,
        collections=(),
        paths=(),
        kinds=(),
        since: str | None = None,
        before: str | None = None,
        meta: dict | list | tuple = (),
        prefix: str = "",
    ) -> Filters:
        """Filters as a person writes them: ages or dates as text, metadata as KEY=VALUE or a dict.
        Errors name the setting as `prefix` + its name (`--since` on the command line)."""
        pairs = [f"{k}={v}" for k, v in meta.items()] if isinstance(meta, dict) else list(meta or ())
        return cls(
            collections=tuple(collections or ()),
            paths=tuple(paths or ()),
            kinds=tuple(kinds or ()),
            since=parse_time(since, f"{prefix}since") if since else None,
            before=parse_time(before, f"{prefix}before") if before else None,
            meta=parse_meta(pairs, f"{prefix}meta"),
        )

    def is_empty(self) -> bool:
        return not (self.collections or self.paths or self.kinds or self.meta) and (
            self.since is None and self.before is None
        )

    def describe(self) -> list[str]:
        parts = []
        if self.collections:
            parts.append("collection " + " or ".join(self.collections))
        if self.paths:
            parts.append("path " + " or ".join(self.paths))
        if self.kinds:
            parts.append("type " + " or ".join(self.kinds))
        if self.since is not None:
            parts.append("since " + datetime.fromtimestamp(self.since, UTC).isoformat(timespec="seconds"))
        if self.before is not None:
            parts.append("before " + datetime.fromtimestamp(self.before, UTC).isoformat(timespec="seconds"))
        parts.extend(f"{k}={v}" for k, v in self.meta)
        return parts

    def to_dict(self) -> dict:
        return {
            "collections": list(self.collections),
            "paths": list(self.paths),
            "kinds": list(self.kinds),
            "since": self.since,
            "before": self.before,
            "meta": dict(self.meta),
        }


def path_matches(path: str, pattern: str) -> bool:
    """The one meaning of a path glob on every surface (search filters, multi-get; CLI, HTTP, MCP,
    web, Python): an absolute glob (or one starting with ~) matches the whole indexed path; a
    relative one matches its end at a folder boundary, that is, relative to the folders the index
    covers (`docs/*.md` finds ROOT/docs/a.md), never to the folder a server happens to run in. As
    in fnmatch, `*` also crosses folders."""
    pattern = pattern.strip()
    if pattern.startswith("~"):
        pattern = os.path.expanduser(pattern)
    if os.path.isabs(pattern):
        return path == pattern or fnmatch.fnmatchcase(path, pattern)
    pattern = pattern.removeprefix("./")
    return path == pattern or fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, "*/" + pattern)


def _path_matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(path_matches(path, p) for p in patterns)


def resolve(filters: Filters, store) -> BitMap:
    """The ids of chunks that pass every filter (call inside store.reading())."""
    if not (filters.collections or filters.kinds or filters.paths):  # no scope: every source
        return store.chunks_matching(None, filters.since, filters.before, filters.meta)
    allowed_sources = [
        source.id
        for source in store.source_facets()
        if (not filters.collections or source.collection in filters.collections)
        and (not filters.kinds or source.kind in filters.kinds)
        and (not filters.paths or _path_matches(source.path, filters.paths))
    ]
    if not allowed_sources:
        return BitMap()
    return store.chunks_matching(allowed_sources, filters.since, filters.before, filters.meta)
