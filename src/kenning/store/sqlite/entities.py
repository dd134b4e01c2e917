"""Entity postings in SQLite: one row per entity key, its chunk ids as a serialised roaring bitmap.

Writes union new chunk ids into the stored bitmap, so adding files touches only the entities they
hold. Deleted chunks are masked by the live bitmap at read time (ids are never reused) and dropped
for good by `compact_entities`, which the writer runs when it merges segments.
"""

from __future__ import annotations

from pyroaring import BitMap

from kenning.store.records import EntityPosting


class SqliteEntities:
    """The EntityTables protocol over the `entities` table."""

    conn: object

    def entity_postings(self) -> list[EntityPosting]:
        return [
            EntityPosting(key, surface, kind, BitMap.deserialize(docs))
            for key, surface, kind, docs in self.conn.execute("SELECT key, surface, kind, docs FROM entities")
        ]

    def add_entity_postings(self, added: dict[str, tuple[str, str, BitMap]]) -> None:
        """Union chunk ids into each entity's bitmap (a new entity keeps its first surface form)."""
        self._require_txn()
        keys = list(added)
        stored: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            stored.update(self.conn.execute(f"SELECT key, docs FROM entities WHERE key IN ({marks})", part))
        rows = []
        for key, (surface, kind, docs) in added.items():
            merged = BitMap.deserialize(stored[key]) | docs if key in stored else docs
            rows.append((key, surface, kind, merged.serialize()))
        self.conn.executemany(
            "INSERT INTO entities(key, surface, kind, docs) VALUES (?,?,?,?) "
            "ON CONFLICT(key) DO UPDATE SET docs = excluded.docs",
            rows,
        )

    def compact_entities(self, live: BitMap) -> int:
        """Drop dead chunk ids from every bitmap and entities left with none; returns how many went."""
        self._require_txn()
        gone, rows = [], []
        for key, docs in self.conn.execute("SELECT key, docs FROM entities").fetchall():
            bitmap = BitMap.deserialize(docs)
            kept = bitmap & live
            if not kept:
                gone.append((key,))
            elif len(kept) != len(bitmap):
                rows.append((kept.serialize(), key))
        self.conn.executemany("DELETE FROM entities WHERE key = ?", gone)
        self.conn.executemany("UPDATE entities SET docs = ? WHERE key = ?", rows)
        return len(gone)

    def clear_entities(self) -> None:
        self._require_txn()
        self.conn.execute("DELETE FROM entities")
