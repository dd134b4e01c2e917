"""What scope filters read from any SQL store: each source's facets. Chunk conditions
(`chunks_matching`) are each engine's own, over the index it keeps for them."""

from __future__ import annotations

from kenning.store.records import SourceFacets
from kenning.store.sql.statements import SqlStatements


class SqlFilters(SqlStatements):
    """The MetadataFilters protocol's shared part; an engine adds `chunks_matching`."""

    def source_facets(self) -> list[SourceFacets]:
        return [SourceFacets(*r) for r in self._run("SELECT id, path, collection, kind FROM sources")]

    def _filter_columns(self, meta: str) -> dict:
        """Columns an engine keeps beside each chunk for its filter index, from the chunk's metadata
        (JSON text), as column -> value; none by default."""
        return {}
