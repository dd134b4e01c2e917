"""Scope filters in PostgreSQL, as indexed SQL conditions.

Time bounds use the (source_id, time) index. Front-matter conditions use a GIN index over `facets`:
each chunk's front matter with every scalar value written as folded text and every value as a list
(`{"status": ["final"], "tags": ["a", "b"]}`), so "front matter key has value v, or a list holding v,
whatever the case" is one containment test, `facets @> {"key": ["v"]}`, which the index answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyroaring import BitMap

from kenning.store.sql import SqlFilters


def _folded(value) -> str | None:
    """A front-matter scalar as filters compare it: text, lower case; None for nested values."""
    if isinstance(value, dict | list) or value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value)
    # jsonb refuses NUL and unpaired surrogates: they can never be typed into a filter anyway
    return text.lower().replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def facets_of(meta: dict) -> str:
    """The jsonb text of a chunk's folded front matter (see the module docstring)."""
    front = meta.get("front_matter") if isinstance(meta, dict) else None
    out = {}
    for key, value in (front or {}).items() if isinstance(front, dict) else ():
        values = [v for v in map(_folded, value if isinstance(value, list) else [value]) if v is not None]
        if values:
            out[_folded(str(key))] = values
    return json.dumps(out)


class PostgresFilters(SqlFilters):
    """The MetadataFilters protocol, and the `facets` column it keeps beside each chunk."""

    def chunks_matching(
        self,
        source_ids: Sequence[int],
        since: float | None,
        before: float | None,
        meta: Sequence[tuple[str, str]],
    ) -> BitMap:
        query, params = matching_query(source_ids, since, before, meta)
        return BitMap(r[0] for r in self.conn.execute(query, params))

    def _filter_columns(self, meta: str) -> dict:
        return {"facets": facets_of(json.loads(meta))}


def matching_query(source_ids, since, before, meta) -> tuple[str, list]:
    """The SQL of a scope filter and its parameters: conditions the table's indexes answer
    (tests/test_postgres_store.py reads its plan)."""
    where, params = ["source_id = ANY(%s)"], [[int(s) for s in source_ids]]
    if since is not None:
        where.append("time >= %s")
        params.append(since)
    if before is not None:
        where.append("time < %s")
        params.append(before)
    wanted: dict[str, list[str]] = {}
    for key, value in meta:
        wanted.setdefault(_folded(key), []).append(_folded(value))
    if wanted:
        where.append("facets @> %s::jsonb")
        params.append(json.dumps(wanted))
    return f"SELECT id FROM chunks WHERE {' AND '.join(where)}", params
