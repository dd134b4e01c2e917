"""Scope filters in SQLite: document time and front-matter conditions run as SQL over the chunks
of the sources that pass the collection, kind and path scopes (front matter through json_each)."""

from __future__ import annotations

from collections.abc import Sequence

from pyroaring import BitMap

from kenning.store.sql import SqlFilters


class SqliteFilters(SqlFilters):
    """The MetadataFilters protocol."""

    def chunks_matching(
        self,
        source_ids: Sequence[int],
        since: float | None,
        before: float | None,
        meta: Sequence[tuple[str, str]],
    ) -> BitMap:
        where, params = [], []
        if since is not None:
            where.append("c.time >= ?")
            params.append(since)
        if before is not None:
            where.append("c.time < ?")
            params.append(before)
        for key, value in meta:
            where.append(
                "EXISTS (SELECT 1 FROM json_each(c.meta, ?)"
                " WHERE lower(CAST(json_each.value AS TEXT)) = lower(?))"
            )
            params.extend([f"$.front_matter.{key}", value])
        clause = " AND ".join(["{}", *where])
        rows = self._rows_in(
            f"SELECT c.id FROM chunks c WHERE {clause}", "c.source_id", list(source_ids), params
        )
        return BitMap(r[0] for r in rows)
