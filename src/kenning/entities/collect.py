"""Entities into the index: the writer hands each new chunk to an EntityCollector, which extracts its
entities and, at the end of the write, unions them into the stored posting bitmaps."""

from __future__ import annotations

from pyroaring import BitMap

from kenning.entities.extract import EXTRACTOR_VERSION, GlossaryMatcher, extract
from kenning.store.records import own_text

META_KEY = "entity_extractor"
BATCH = 500


def glossary_matcher(store) -> GlossaryMatcher:
    """Every glossary group that has a canonical term, with its canonical and alias members."""
    groups: dict[int, list] = {}
    canonical: dict[int, str] = {}
    for term in store.glossary_terms():
        if term.status == "canonical":
            canonical[term.group_id] = term.surface
        if term.status in ("canonical", "alias"):
            groups.setdefault(term.group_id, []).append(term.surface)
    return GlossaryMatcher({canonical[g]: members for g, members in groups.items() if g in canonical})


class EntityCollector:
    def __init__(self, store):
        self.store = store
        self.matcher = glossary_matcher(store)
        self.added: dict[str, list] = {}

    def add(self, chunk_id: int, body: str, meta: dict | None) -> None:
        self.add_extracted(chunk_id, extract(body, meta, self.matcher or None))

    def add_extracted(self, chunk_id: int, found: dict[str, tuple[str, str]]) -> None:
        """Record one chunk's entities as `extract` gave them (key -> (surface, kind))."""
        for key, (surface, kind) in found.items():
            entry = self.added.get(key)
            if entry is None:
                entry = self.added[key] = [surface, kind, BitMap()]
            elif entry[0].isupper() and not surface.isupper():
                entry[0] = surface  # "Curie" reads better than a heading's "CURIE"
            entry[2].add(chunk_id)

    def refresh_if_stale(self, live: BitMap) -> bool:
        """When the stored entities come from other extraction rules (or none: an index from before
        the graph), extract every live chunk again. Returns whether it did."""
        if self.store.get_meta(META_KEY) == str(EXTRACTOR_VERSION):
            return False
        self.store.clear_entities()
        ids = list(live)
        for start in range(0, len(ids), BATCH):
            for cid, row in self.store.chunks_by_ids(ids[start : start + BATCH]).items():
                self.add(cid, own_text(row.title, row.body), row.meta)
        self.store.set_meta(META_KEY, str(EXTRACTOR_VERSION))
        return True

    def flush(self) -> None:
        if self.added:
            self.store.add_entity_postings({k: (s, kind, docs) for k, (s, kind, docs) in self.added.items()})
            self.added.clear()
        self.store.set_meta(META_KEY, str(EXTRACTOR_VERSION))
