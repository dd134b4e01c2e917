"""Entity postings in PostgreSQL: one row per entity key, its chunk ids as a serialised roaring
bitmap; writes union new ids in, `compact_entities` drops dead ones when segments merge."""

from __future__ import annotations

from pyroaring import BitMap

from kenning.store.records import EntityPosting


class PostgresEntities:
    """The EntityTables protocol over the `entities` table."""

    conn: object

    def entity_postings(self) -> list[EntityPosting]:
        return [
            EntityPosting(key, surface, kind, BitMap.deserialize(bytes(docs)))
            for key, surface, kind, docs in self.conn.execute("SELECT key, surface, kind, docs FROM entities")
        ]

    def add_entity_postings(self, added: dict[str, tuple[str, str, BitMap]]) -> None:
        """Union chunk ids into each entity's bitmap (a new entity keeps its first surface form)."""
        self._require_txn()
        stored = dict(
            self.conn.execute("SELECT key, docs FROM entities WHERE key = ANY(%s)", (list(added),)).fetchall()
        )
        rows = []
        for key, (surface, kind, docs) in added.items():
            merged = BitMap.deserialize(bytes(stored[key])) | docs if key in stored else docs
            rows.append((key, surface, kind, merged.serialize()))
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO entities(key, surface, kind, docs) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (key) DO UPDATE SET docs = excluded.docs",
                rows,
            )

    def compact_entities(self, live: BitMap) -> int:
        self._require_txn()
        gone, rows = [], []
        for key, docs in self.conn.execute("SELECT key, docs FROM entities").fetchall():
            bitmap = BitMap.deserialize(bytes(docs))
            kept = bitmap & live
            if not kept:
                gone.append(key)
            elif len(kept) != len(bitmap):
                rows.append((kept.serialize(), key))
        if gone:
            self.conn.execute("DELETE FROM entities WHERE key = ANY(%s)", (gone,))
        with self.conn.cursor() as cur:
            cur.executemany("UPDATE entities SET docs = %s WHERE key = %s", rows)
        return len(gone)

    def clear_entities(self) -> None:
        self._require_txn()
        self.conn.execute("DELETE FROM entities")
