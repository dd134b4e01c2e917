"""Scope filters in any SQL store: each source's facets, and the chunks of the sources that pass
the collection, kind and path scopes whose time and front matter match, as one SQL condition over
`chunks`. How a front-matter condition is written is each engine's (`_front_matter_condition`)."""

from __future__ import annotations

from collections.abc import Sequence

from pyroaring import BitMap

from kenning.store.records import FrontMatterPairs, SourceFacets
from kenning.store.sql.documents import plain_ids
from kenning.store.sql.statements import SqlStatements


class SqlFilters(SqlStatements):
    """The MetadataFilters protocol; an engine supplies `_front_matter_condition`."""

    def source_facets(self) -> list[SourceFacets]:
        return [SourceFacets(*r) for r in self._run("SELECT id, path, collection, kind FROM sources")]

    def chunks_matching(
        self, source_ids: Sequence[int], since: float | None, before: float | None, meta: FrontMatterPairs
    ) -> BitMap:
        query, params = self.matching_query(since, before, meta)
        return BitMap(r[0] for r in self._rows_in(query, "c.source_id", plain_ids(source_ids), params))

    def matching_query(
        self, since: float | None, before: float | None, meta: FrontMatterPairs
    ) -> tuple[str, list]:
        """The SQL of a scope filter, `{}` standing for the source condition, and the parameters
        after that condition's: conditions the table's indexes answer (tests/store/test_postgres_store.py
        reads a plan)."""
        where, params = ["{}"], []
        if since is not None:
            where.append("c.time >= ?")
            params.append(since)
        if before is not None:
            where.append("c.time < ?")
            params.append(before)
        if meta:
            condition, values = self._front_matter_condition(meta)
            where.append(condition)
            params.extend(values)
        return f"SELECT c.id FROM chunks c WHERE {' AND '.join(where)}", params

    def _front_matter_condition(self, meta: FrontMatterPairs) -> tuple[str, list]:
        """A condition on chunk `c` that its front matter has each (key, value) (a list value
        matches any of its items; case does not matter), and its parameters."""
        raise NotImplementedError

    def _filter_columns(self, meta: str) -> dict:
        """Columns an engine keeps beside each chunk for its filter index, from the chunk's metadata
        (JSON text), as column -> value; none by default."""
        return {}
