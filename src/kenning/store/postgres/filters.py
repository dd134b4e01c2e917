"""Front-matter conditions in PostgreSQL, as indexed SQL (kenning.store.sql.filters runs them).

Time bounds use the (source_id, time) index. Front-matter conditions use a GIN index over `facets`:
each chunk's front matter with every scalar value written as folded text and every value as a list
(`{"status": ["final"], "tags": ["a", "b"]}`), so "front matter key has value v, or a list holding v,
whatever the case" is one containment test, `facets @> {"key": ["v"]}`, which the index answers.
"""

from __future__ import annotations

import json

from kenning.store.records import MESSAGE_FACETS, FrontMatterPairs
from kenning.store.sql import SqlFilters


def _folded(value) -> str | None:
    """A front-matter scalar as filters compare it: text, lower case; None for nested values."""
    if isinstance(value, dict | list) or value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value)
    # jsonb refuses NUL and unpaired surrogates: they can never be typed into a filter anyway
    return text.lower().replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def facets_of(meta: dict) -> str:
    """The jsonb text of a chunk's folded front matter (see the module docstring), with a message
    window's senders and conversation under the message keys (kenning.store.records.MESSAGE_FACETS)."""
    front = meta.get("front_matter") if isinstance(meta, dict) else None
    out: dict[str, list[str]] = {}
    for key, value in (front or {}).items() if isinstance(front, dict) else ():
        values = [v for v in map(_folded, value if isinstance(value, list) else [value]) if v is not None]
        if values:
            out[_folded(str(key))] = values
    for key, source in MESSAGE_FACETS.items() if isinstance(meta, dict) else ():
        value = meta.get(source)
        values = [v for v in map(_folded, value if isinstance(value, list) else [value]) if v is not None]
        if values:
            out[key] = list(dict.fromkeys([*out.get(key, []), *values]))
    return json.dumps(out)


class PostgresFilters(SqlFilters):
    """The MetadataFilters protocol, and the `facets` column it keeps beside each chunk."""

    def _front_matter_condition(self, meta: FrontMatterPairs) -> tuple[str, list]:
        wanted: dict[str, list[str]] = {}
        for key, value in meta:
            wanted.setdefault(_folded(key), []).append(_folded(value))
        return "c.facets @> ?::jsonb", [json.dumps(wanted)]

    def _filter_columns(self, meta: str) -> dict:
        return {"facets": facets_of(json.loads(meta))}
