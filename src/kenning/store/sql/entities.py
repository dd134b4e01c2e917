"""Entity postings in any SQL store: one row per entity key, its chunk ids as a serialised roaring
bitmap.

Writes union new chunk ids into the stored bitmap, so adding files touches only the entities they
hold. Deleted chunks are masked by the live bitmap at read time (ids are never reused) and dropped
for good by `compact_entities`, which the writer runs when it merges segments.
"""

from __future__ import annotations

from pyroaring import BitMap

from kenning.store.errors import IndexDamaged, decoding
from kenning.store.records import EntityPosting
from kenning.store.sql.statements import SqlStatements


class SqlEntities(SqlStatements):
    """The EntityTables protocol over the `entities` table."""

    def entity_postings(self) -> list[EntityPosting]:
        return [
            EntityPosting(key, surface, kind, _stored_bitmap(docs))
            for key, surface, kind, docs in self._run("SELECT key, surface, kind, docs FROM entities")
        ]

    def add_entity_postings(self, added: dict[str, tuple[str, str, BitMap]]) -> None:
        self._require_txn()
        stored = dict(self._rows_in("SELECT key, docs FROM entities WHERE {}", "key", list(added)))
        rows = []
        for key, (surface, kind, docs) in added.items():
            merged = _stored_bitmap(stored[key]) | docs if key in stored else docs
            rows.append((key, surface, kind, merged.serialize()))
        self._run_many(
            "INSERT INTO entities(key, surface, kind, docs) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET docs = excluded.docs",
            rows,
        )

    def compact_entities(self, live: BitMap) -> int:
        self._require_txn()
        gone, rows = [], []
        for key, docs in self._run("SELECT key, docs FROM entities").fetchall():
            bitmap = _stored_bitmap(docs)
            kept = bitmap & live
            if not kept:
                gone.append(key)
            elif len(kept) != len(bitmap):
                rows.append((kept.serialize(), key))
        self._run_in("DELETE FROM entities WHERE {}", "key", gone)
        self._run_many("UPDATE entities SET docs = ? WHERE key = ?", rows)
        return len(gone)

    def clear_entities(self) -> None:
        self._require_txn()
        self._run("DELETE FROM entities")


def _stored_bitmap(docs) -> BitMap:
    """An entity's chunks as stored: a serialised roaring bitmap, never text or a number (bytes(7)
    would make seven zero bytes, bytes("x") raise TypeError), else the index is damaged."""
    if not isinstance(docs, (bytes, bytearray, memoryview)):
        raise IndexDamaged(f"an entity's chunks are stored as a {type(docs).__name__}, not bytes")
    with decoding("an entity's chunks"):
        return BitMap.deserialize(bytes(docs))
