"""Front-matter conditions in SQLite: each (key, value) looked for in the chunk's metadata through
json_each (kenning.store.sql.filters runs them): in its front matter, and for the message keys
(kenning.store.records.MESSAGE_FACETS) in a message window's own metadata as well."""

from __future__ import annotations

from kenning.store.records import MESSAGE_FACETS, FrontMatterPairs
from kenning.store.sql import SqlFilters

_HAS_VALUE = (
    "EXISTS (SELECT 1 FROM json_each(c.meta, ?) WHERE lower(CAST(json_each.value AS TEXT)) = lower(?))"
)


class SqliteFilters(SqlFilters):
    """The MetadataFilters protocol."""

    def _front_matter_condition(self, meta: FrontMatterPairs) -> tuple[str, list]:
        conditions, params = [], []
        for key, value in meta:
            message_key = MESSAGE_FACETS.get(key.lower())
            if message_key is None:
                conditions.append(_HAS_VALUE)
                params.extend([f"$.front_matter.{key}", value])
            else:
                conditions.append(f"({_HAS_VALUE} OR {_HAS_VALUE})")
                params.extend([f"$.front_matter.{key}", value, f"$.{message_key}", value])
        return " AND ".join(conditions), params
