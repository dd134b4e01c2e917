"""Front-matter conditions in SQLite: each (key, value) looked for in the chunk's metadata through
json_each (kenning.store.sql.filters runs them)."""

from __future__ import annotations

from kenning.store.records import FrontMatterPairs
from kenning.store.sql import SqlFilters


class SqliteFilters(SqlFilters):
    """The MetadataFilters protocol."""

    def _front_matter_condition(self, meta: FrontMatterPairs) -> tuple[str, list]:
        conditions, params = [], []
        for key, value in meta:
            conditions.append(
                "EXISTS (SELECT 1 FROM json_each(c.meta, ?)"
                " WHERE lower(CAST(json_each.value AS TEXT)) = lower(?))"
            )
            params.extend([f"$.front_matter.{key}", value])
        return " AND ".join(conditions), params
