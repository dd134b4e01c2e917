"""The entity graph of one index generation: entity postings, significance-weighted edges, and the
one-hop walk that turns a query's entities into per-chunk mass.

Edges are weighted by significance, not by co-occurrence: of n live chunks, A is in a, B in b, both
in k. Under independence k would be about a*b/n, so

    z = (k - ab/n) / sqrt((ab/n)(1 - a/n)(1 - b/n))
    relatedness = tanh(sign(z) * ln(1 + |z|) / 3)          in [-1, 1]

log-compressed so z = 10 and z = 100 stay apart, squashed into [-1, 1]; negative means the two avoid
each other, and is clamped to 0 when it boosts. A hub entity that is everywhere co-occurs with
everything, but no more than chance says it should, so its edges stay weak, where Jaccard (k / (a + b
- k), still available) would rate a hub that covers its partner perfectly.

The walk: the query's entities are seeds at 1.0; each passes decay * weight to its top neighbours, and
a neighbour reached from several seeds takes the largest, never the sum, so a hub shared by every seed
cannot add up to dominance. A chunk's mass is the sum of the activations of the entities it holds,
divided by the largest mass, so it lies in [0, 1].
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap

from kenning.analysis.analyzer import fold
from kenning.kernels.arrays import unique_counts

MAX_NGRAM = 4
SCORINGS = ("relatedness", "jaccard")
_WORD = re.compile(r"[^\W\d_]+|\d+")


def relatedness(n: int, a: int, b: int, k: int) -> float:
    """Significance of A and B sharing k of n chunks, in [-1, 1] (0 when it cannot be told)."""
    if n <= 0 or a <= 0 or b <= 0:
        return 0.0
    expected = a * b / n
    variance = expected * (1 - a / n) * (1 - b / n)
    if variance <= 0:
        return 0.0
    z = (k - expected) / math.sqrt(variance)
    return math.tanh(math.copysign(math.log1p(abs(z)), z) / 3)


def jaccard(a: int, b: int, k: int) -> float:
    union = a + b - k
    return k / union if union > 0 else 0.0


@dataclass
class Edge:
    key: str
    surface: str
    a: int
    b: int
    k: int
    z: float
    weight: float  # the edge weight that boosts: relatedness clamped at 0, or Jaccard

    def to_dict(self) -> dict:
        return {
            "entity": self.key,
            "surface": self.surface,
            "a": self.a,
            "b": self.b,
            "k": self.k,
            "z": self.z,
            "weight": self.weight,
        }


@dataclass
class Activation:
    """An entity the walk reached: how strongly, and how (a seed, or which seed through which edge)."""

    key: str
    surface: str
    weight: float
    seed: str | None = None  # None for a seed itself
    edge: float | None = None

    def to_dict(self) -> dict:
        out = {"entity": self.key, "surface": self.surface, "activation": round(self.weight, 4)}
        if self.seed is not None:
            out.update({"via": self.seed, "edge_weight": round(self.edge or 0.0, 4)})
        return out


@dataclass
class Walk:
    seeds: list[Activation] = field(default_factory=list)
    reached: dict[str, Activation] = field(default_factory=dict)  # seeds and neighbours, by key

    def to_dict(self) -> dict:
        return {
            "entities": [a.to_dict() for a in self.seeds],
            "neighbours": [a.to_dict() for a in self.reached.values() if a.seed is not None],
        }


class EntityGraph:
    """Entity postings of one generation, restricted to live chunks, with a chunk -> entities index."""

    def __init__(self, postings, live: BitMap):
        self.keys: list[str] = []
        self.surfaces: list[str] = []
        self.kinds: list[str] = []
        self.docs: list[BitMap] = []
        for p in postings:
            docs = p.docs & live
            if docs:
                self.keys.append(p.key)
                self.surfaces.append(p.surface)
                self.kinds.append(p.kind)
                self.docs.append(docs)
        self.index = {k: i for i, k in enumerate(self.keys)}
        self.n = len(live)
        self.max_id = int(live.max()) if live else 0
        # chunk -> entity ids, as CSR arrays (built once per generation)
        lengths = np.array([len(d) for d in self.docs], dtype=np.int64)
        owners = np.repeat(np.arange(len(self.docs), dtype=np.int64), lengths)
        chunks = (
            np.concatenate([np.frombuffer(d.to_array(), dtype=np.uint32) for d in self.docs])
            if self.docs
            else np.zeros(0, dtype=np.uint32)
        )
        order = np.argsort(chunks, kind="stable")
        self._entity_of = owners[order]
        self._starts = np.searchsorted(chunks[order], np.arange(self.max_id + 2))
        self._neighbours: dict[tuple[str, str], list[Edge]] = {}

    @classmethod
    def load(cls, store, live: BitMap) -> EntityGraph:
        return cls(store.entity_postings(), live)

    def __len__(self) -> int:
        return len(self.keys)

    def df(self, key: str) -> int:
        i = self.index.get(key)
        return len(self.docs[i]) if i is not None else 0

    def entities_of(self, chunk_id: int) -> list[str]:
        if chunk_id > self.max_id:
            return []
        lo, hi = self._starts[chunk_id], self._starts[chunk_id + 1]
        return [self.keys[i] for i in self._entity_of[lo:hi].tolist()]

    # ------------------------------------------------------------------------------- edges
    def neighbours(self, key: str, top: int | None = 8, scoring: str = "relatedness") -> list[Edge]:
        """The entity's neighbours by edge weight, strongest first (only positive weights); the
        entity's own parts and longer forms are the same name, not neighbours."""
        if scoring not in SCORINGS:
            raise ValueError(f"unknown edge scoring {scoring!r}: choose {' or '.join(SCORINGS)}")
        i = self.index.get(key)
        if i is None:
            return []
        cached = self._neighbours.get((key, scoring))
        if cached is None:
            cached = self._edges(i, scoring)
            self._neighbours[(key, scoring)] = cached
        return cached if top is None else cached[:top]

    def _edges(self, i: int, scoring: str) -> list[Edge]:
        chunks = np.frombuffer(self.docs[i].to_array(), dtype=np.uint32).astype(np.int64)
        spans = [self._entity_of[self._starts[c] : self._starts[c + 1]] for c in chunks.tolist()]
        together = np.concatenate(spans) if spans else np.zeros(0, dtype=np.int64)
        ids, counts = unique_counts(together)
        a = len(self.docs[i])
        words = set(self.keys[i].split())
        edges = []
        for j, k in zip(ids.tolist(), counts.tolist(), strict=True):
            other = set(self.keys[j].split())
            if j == i or other <= words or words <= other:
                continue  # a part or a longer form of the same name ("gogh", "van gogh")
            b = len(self.docs[j])
            z = _z(self.n, a, b, k)
            if scoring == "jaccard":
                weight = jaccard(a, b, k)
            else:
                weight = max(0.0, relatedness(self.n, a, b, k))
            if weight > 0:
                edges.append(Edge(self.keys[j], self.surfaces[j], a, b, k, z, weight))
        edges.sort(key=lambda e: (-e.weight, e.key))
        return edges

    # ------------------------------------------------------------------------------- query time
    def resolve(self, text: str, name_like=None) -> list[str]:
        """The entities a query names, by sliding n-grams longest first (up to 4 words): each word
        belongs to at most one entity. `name_like(key)` may refuse a one-word match (a word that is an
        entity only where it happens to be capitalised)."""
        words = self.resolve_words(text)
        found: list[str] = []
        i = 0
        while i < len(words):
            for size in range(min(MAX_NGRAM, len(words) - i), 0, -1):
                key = " ".join(words[i : i + size])
                if key in self.index and (size > 1 or name_like is None or name_like(key)):
                    if key not in found:
                        found.append(key)
                    i += size
                    break
            else:
                i += 1
        return found

    @staticmethod
    def resolve_words(text: str) -> list[str]:
        return [fold(w) for w in _WORD.findall(text)]

    def similar(self, text: str, limit: int = 5) -> list[str]:
        """Entities that contain the text's words, most chunks first (for "did you mean")."""
        words = set(self.resolve_words(text))
        if not words:
            return []
        hits = [k for k in self.keys if words & set(k.split())]
        return sorted(hits, key=lambda k: (-self.df(k), k))[:limit]

    def walk(self, seeds: list[str], top: int = 8, decay: float = 0.5, scoring: str = "relatedness") -> Walk:
        walk = Walk()
        for key in seeds:
            seed = Activation(key, self.surfaces[self.index[key]], 1.0)
            walk.seeds.append(seed)
            walk.reached[key] = seed
        for key in seeds:
            for edge in self.neighbours(key, top, scoring):
                weight = decay * edge.weight
                held = walk.reached.get(edge.key)
                if held is None or (held.seed is not None and weight > held.weight):
                    walk.reached[edge.key] = Activation(edge.key, edge.surface, weight, key, edge.weight)
        return walk

    def mass(self, walk: Walk) -> np.ndarray:
        """Per chunk id, the summed activation of the entities it holds, over the largest: [0, 1]."""
        out = np.zeros(self.max_id + 1)
        for key, act in walk.reached.items():
            ids = np.frombuffer(self.docs[self.index[key]].to_array(), dtype=np.uint32)
            out[ids] += act.weight
        top = out.max() if len(out) else 0.0
        return out / top if top > 0 else out


def _z(n: int, a: int, b: int, k: int) -> float:
    expected = a * b / n if n else 0.0
    variance = expected * (1 - a / n) * (1 - b / n) if n else 0.0
    return (k - expected) / math.sqrt(variance) if variance > 0 else 0.0
