"""The entity graph of one index generation: entity postings, significance-weighted edges, and the
one-hop walk that turns a query's entities into per-chunk mass.

Building it settles what extraction (kenning.entities.extract) could not decide one chunk at a time:
- a word that only opened sentences where it was seen (OPENING keys) is a name only if the corpus
  shows it capitalised inside a sentence too, in at least OPENER_INSIDE as many chunks ("Hello",
  "Happily" are not; "Dantès" is); a run it opens is kept then too, or when the word is (nearly)
  never written in lower case;
- a one-word name that the corpus mostly writes in lower case is a common word that a heading or
  a title capitalised ("Diary", "Letter", "Castle"): dropped, when the index can say how many
  chunks hold the word at all (`word_chunks`);
- a full name and a part of it that is not ambiguous are one entity ("Edmond Dantès", "Dantès",
  "Edmond"): a part joins the full name when the full names holding it nest in one another, or one
  of them holds ALIAS_DOMINANCE of their chunks ("Harker" stays apart: Jonathan and Mina share it).
  The entity's key is its most frequent full name; every member key resolves to it.

Edges are weighted by significance, not by co-occurrence: of n live chunks, A is in a, B in b, both
in k. The 2x2 table of chunks (both, A only, B only, neither) gives Dunning's log-likelihood ratio
G2 = 2 * sum(observed * ln(observed / expected)), whose signed root behaves like a z score for large
counts but does not reward one sighting (a = 33, b = 1, k = 1 gives a z of 7.5 and a root G2 of 2.6),
so

    r = sign(k - ab/n) * sqrt(G2)
    relatedness = tanh(sign(r) * ln(1 + |r|) / 3)          in [-1, 1]

log-compressed so r = 10 and r = 100 stay apart, squashed into [-1, 1]; negative means the two avoid
each other. An edge's weight clamps it at 0 and shrinks it by k / (k + SHRINK), so that three
sightings of "Hamlet", all beside Dracula, do not outrank sixty of Arthur beside Lucy; pairs seen
together in fewer than MIN_TOGETHER chunks are not edges. On the labelled partners of 20 entities of
Dracula (benchmarks/graph_eval.py) the shrink lifts precision@10 from 0.75 to 0.85, and any SHRINK
from 2 to 20 gives 0.84 to 0.86.

A hub entity that is everywhere co-occurs with everything, but no more than chance says it should,
so its edges stay weak, where Jaccard (k / (a + b - k), still available) would rate a hub that
covers its partner perfectly. The plain z score is available as the scoring "z".

The walk: the query's entities are seeds at 1.0; each passes decay * weight to its top neighbours, and
a neighbour reached from several seeds takes the largest, never the sum, so a hub shared by every seed
cannot add up to dominance. A chunk's mass is the sum of the activations of the entities it holds,
divided by the largest mass, so it lies in [0, 1].
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap

from kenning.analysis.analyzer import fold
from kenning.entities.extract import OPENING, PARTICLES
from kenning.kernels.arrays import unique_counts

MAX_NGRAM = 4
SCORINGS = ("relatedness", "z", "jaccard")
MIN_TOGETHER = 3
SHRINK = 5  # chunks two entities must share to be neighbours
COMMON_SHARE = 0.5  # a one-word name capitalised in fewer of the chunks holding the word is a common word
OPENER_INSIDE = 0.1  # an opener is a name where it is capitalised inside sentences this often as well
OPENER_SHARE = 0.9  # an opener never seen inside a sentence still begins a name when this capitalised
ALIAS_DOMINANCE = 0.8  # of the chunks of the full names holding a part, the one it joins must hold this
ALIAS_MIN_CHUNKS = 2  # a full name seen in one chunk (a stray run) neither takes nor blocks a part
_WORD = re.compile(r"[^\W\d_]+|\d+")


def relatedness(n: int, a: int, b: int, k: int) -> float:
    """Significance of A and B sharing k of n chunks, in [-1, 1] (0 when it cannot be told): the
    signed root of Dunning's log-likelihood ratio, log-compressed."""
    return _squash(signed_root_g2(n, a, b, k))


def edge_weight(n: int, a: int, b: int, k: int) -> float:
    """The weight of a relatedness edge: relatedness clamped at 0, shrunk by k / (k + SHRINK) so a
    pair seen together a handful of times ranks below one seen together often."""
    return max(0.0, relatedness(n, a, b, k)) * k / (k + SHRINK)


def z_relatedness(n: int, a: int, b: int, k: int) -> float:
    """The same squashing of the plain z score (the scoring "z"; it rates one sighting highly)."""
    return _squash(_z(n, a, b, k))


def _squash(r: float) -> float:
    return math.tanh(math.copysign(math.log1p(abs(r)), r) / 3)


def signed_root_g2(n: int, a: int, b: int, k: int) -> float:
    """sign(k - ab/n) * sqrt(G2) for the chunk table of A (in a) and B (in b) sharing k of n."""
    if n <= 0 or a <= 0 or b <= 0 or a >= n or b >= n:
        return 0.0
    observed = (k, a - k, b - k, n - a - b + k)
    expected = (a * b / n, a * (n - b) / n, (n - a) * b / n, (n - a) * (n - b) / n)
    g2 = 2.0 * sum(o * math.log(o / e) for o, e in zip(observed, expected, strict=True) if o > 0)
    return math.copysign(math.sqrt(max(g2, 0.0)), k - expected[0])


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
    members: list[str] = field(default_factory=list)  # the neighbour's other keys (its name's parts)

    def to_dict(self) -> dict:
        return {
            "entity": self.key,
            "surface": self.surface,
            "members": self.members,
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
    """Entity postings of one generation, restricted to live chunks and settled (see the module
    docstring), with a chunk -> entities index. `word_chunks(words)` says how many chunks hold each
    word in any case (the lexical index); without it no name is dropped as a common word."""

    def __init__(
        self, postings, live: BitMap, word_chunks: Callable[[list[str]], dict[str, int]] | None = None
    ):
        table = _settle(postings, live, word_chunks)
        groups = _alias_groups(table)
        self.keys: list[str] = []
        self.surfaces: list[str] = []
        self.kinds: list[str] = []
        self.docs: list[BitMap] = []
        self.members: list[list[str]] = []  # every key that resolves to the entity, its own first
        self.member_surfaces: list[list[str]] = []  # how each member is written
        self.index: dict[str, int] = {}
        for members in groups:
            head = members[0]
            docs = BitMap()
            for key in members:
                docs |= table[key][2]
                self.index[key] = len(self.keys)
            self.keys.append(head)
            self.surfaces.append(table[head][0])
            self.kinds.append(table[head][1])
            self.docs.append(docs)
            self.members.append(members)
            self.member_surfaces.append([table[key][0] for key in members])
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
    def load(cls, store, live: BitMap, word_chunks=None) -> EntityGraph:
        return cls(store.entity_postings(), live, word_chunks)

    def lookup(self, key: str) -> str | None:
        """The entity a folded key belongs to (its own key, or the full name it is a part of)."""
        i = self.index.get(key)
        return self.keys[i] if i is not None else None

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
        words = [set(m.split()) for m in self.members[i]]
        edges = []
        for j, k in zip(ids.tolist(), counts.tolist(), strict=True):
            if j == i or k < MIN_TOGETHER:
                continue
            others = [set(m.split()) for m in self.members[j]]
            if any(o <= w or w <= o for o in others for w in words):
                continue  # a part or a longer form of the same name ("harker", "jonathan harker")
            b = len(self.docs[j])
            z = _z(self.n, a, b, k)
            if scoring == "jaccard":
                weight = jaccard(a, b, k)
            elif scoring == "z":
                weight = max(0.0, z_relatedness(self.n, a, b, k))
            else:
                weight = edge_weight(self.n, a, b, k)
            if weight > 0:
                edges.append(Edge(self.keys[j], self.surfaces[j], a, b, k, z, weight, self.members[j][1:]))
        edges.sort(key=lambda e: (-e.weight, e.key))
        return edges

    # ------------------------------------------------------------------------------- query time
    def surface_of(self, key: str) -> str:
        """How a member key is written ("Dantès"), where surfaces[...] gives its entity's head."""
        i = self.index[key]
        return self.member_surfaces[i][self.members[i].index(key)]

    def forms(self, key: str) -> list[str]:
        """Every key naming the same entity as `key` (itself first), or just `key` if unknown."""
        i = self.index.get(key)
        return [key] if i is None else [key, *(m for m in self.members[i] if m != key)]

    def resolve(self, text: str, name_like=None, as_written: bool = False) -> list[str]:
        """The entities a query names, by sliding n-grams longest first (up to 4 words): each word
        belongs to at most one entity. `name_like(key)` may refuse a one-word match (a word that is an
        entity only where it happens to be capitalised). Each is given by its entity's key, or with
        `as_written` by the key of the words the text used ("dantes", not "edmond dantes")."""
        words = self.resolve_words(text)
        found: list[str] = []
        i = 0
        while i < len(words):
            for size in range(min(MAX_NGRAM, len(words) - i), 0, -1):
                key = " ".join(words[i : i + size])
                if key in self.index and (size > 1 or name_like is None or name_like(key)):
                    entity = key if as_written else self.keys[self.index[key]]
                    if entity not in found:
                        found.append(entity)
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
        hits = [
            k
            for k, members in zip(self.keys, self.members, strict=True)
            if any(words & set(m.split()) for m in members)
        ]
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


def _settle(postings, live: BitMap, word_chunks) -> dict[str, list]:
    """{key: [surface, kind, live docs]}: openers accepted or dropped, common words dropped."""
    table: dict[str, list] = {}
    opened: dict[str, list] = {}
    for p in postings:
        docs = p.docs & live
        if docs:
            (opened if p.key.startswith(OPENING) else table)[p.key.removeprefix(OPENING)] = [
                p.surface,
                p.kind,
                docs,
            ]
    words = sorted(
        {k for k, v in table.items() if v[1] == "name" and " " not in k} | {k for k in opened if " " not in k}
    )
    held = word_chunks(words) if word_chunks is not None and words else {}

    def capitalised_share(word: str) -> float:
        total = held.get(word, 0)
        if total <= 0:
            return 1.0  # the index cannot say: keep it
        seen = BitMap()
        for source in (table, opened):
            if word in source:
                seen |= source[word][2]
        return len(seen) / total

    for key in [k for k in words if k in table and capitalised_share(k) < COMMON_SHARE]:
        del table[key]
    for key, entry in opened.items():
        first = key.split(" ", 1)[0]
        inside = first in table and table[first][1] == "name"
        if inside and first in opened:  # one "her Journal" does not make forty "Harker's Journal" names
            inside = len(table[first][2]) >= OPENER_INSIDE * len(opened[first][2])
        if inside or (" " in key and first in held and capitalised_share(first) >= OPENER_SHARE):
            held_entry = table.setdefault(key, [entry[0], entry[1], BitMap()])
            held_entry[2] = held_entry[2] | entry[2]
    return table


def _alias_groups(table: dict[str, list]) -> list[list[str]]:
    """The keys in groups that are one entity, each group's head (its most frequent full name) first;
    every other key alone."""
    names = {k for k, v in table.items() if v[1] == "name"}
    fulls = [k for k in names if " " in k and len(table[k][2]) >= ALIAS_MIN_CHUNKS]

    def personal(full: str) -> bool:
        """A full name takes its parts only when each of its words is a name on its own: "Edmond
        Dantès", "Van Helsing", not "London Directory" or "Whitby Harbour" (a place and a word)."""
        return all(w in names or w in PARTICLES for w in full.split())

    owners: dict[str, list[str]] = {}
    for full in fulls:
        words = full.split()
        for size in range(1, len(words)):
            for start in range(len(words) - size + 1):
                part = " ".join(words[start : start + size])
                if part in names and part not in PARTICLES:
                    owners.setdefault(part, []).append(full)
    parent = {k: k for k in table}

    def root(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for part, holding in owners.items():
        sets = {f: set(f.split()) for f in holding}
        widest = [f for f in holding if not any(sets[f] < sets[g] for g in holding)]
        if len(widest) > 1:
            chunks = {f: len(table[f][2]) for f in widest}
            top = max(widest, key=lambda f: (chunks[f], f))
            if chunks[top] < ALIAS_DOMINANCE * sum(chunks.values()) or not personal(top):
                continue  # "harker": Jonathan's and Mina's
            holding = [f for f in holding if sets[f] <= sets[top]]
        elif not personal(widest[0]):
            continue
        for full in (f for f in holding if personal(f)):
            parent[root(part)] = root(full)
    groups: dict[str, list[str]] = {}
    for key in table:
        groups.setdefault(root(key), []).append(key)

    def head_order(key: str) -> tuple:
        return (" " not in key, -len(table[key][2]), key)  # full names first, most chunks first

    return [sorted(members, key=head_order) for members in groups.values()]
