"""Scope filters in SQLite: document time and front-matter conditions run as SQL over the chunks
of the sources that pass the collection, kind and path scopes."""

from __future__ import annotations

from collections.abc import Sequence

from pyroaring import BitMap

from kenning.store.records import SourceFacets
from kenning.store.sqlite.connection import batches, marks


class SqliteFilters:
    """The MetadataFilters protocol."""

    conn: object

    def source_facets(self) -> list[SourceFacets]:
        return [SourceFacets(*r) for r in self.conn.execute("SELECT id, path, collection, kind FROM sources")]

    def chunks_matching(
        self,
        source_ids: Sequence[int],
        since: float | None,
        before: float | None,
        meta: Sequence[tuple[str, str]],
    ) -> BitMap:
        """Chunks of these sources whose time is in [since, before) and whose front matter has each
        (key, value) (a list value matches any of its items; case does not matter)."""
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
        ids = BitMap()
        for batch in batches(list(source_ids)):
            clause = " AND ".join([f"c.source_id IN ({marks(len(batch))})", *where])
            ids.update(
                r[0]
                for r in self.conn.execute(f"SELECT c.id FROM chunks c WHERE {clause}", [*batch, *params])
            )
        return ids
