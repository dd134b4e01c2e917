"""The entity graph signal (Lume's third primitive): chunks that hold the query's entities, or their
significant neighbours, gain mass.

The query's entities are resolved against the index's entity postings (kenning.entities.graph), walked
one hop, and each chunk scores its normalised mass in [0, 1]. A chunk that holds no query word enters
the channel only when its mass reaches `graph_min_mass` (Lume's 0.5): the graph may lift what the
query found, and adds only chunks it is sure of.
"""

from __future__ import annotations

import numpy as np

from kenning.kernels.topk import top_k
from kenning.signals.base import Channel, Knob


class GraphSignal:
    name = "graph"
    weight = 0.0  # off by default: see docs/scoring.md for graph on and off on every dev set
    knobs = (
        Knob("graph_neighbours", 8, "entity graph: neighbours each query entity passes weight to", int),
        Knob("graph_decay", 0.5, "entity graph: share of an edge's weight a neighbour receives"),
        Knob("graph_min_mass", 0.5, "entity graph: mass a chunk without a query word needs to enter"),
    )
    help = "entity graph: the query's entities and their significant neighbours"

    def walk(self, ctx, query):
        """(graph, walk, mass) for this query, worked out once (kept in query.memo for explain), or
        None when the index has no entities or the query names none."""
        if "graph" not in query.memo:
            query.memo["graph"] = self._walk(ctx, query)
        return query.memo["graph"]

    def _walk(self, ctx, query):
        if ctx.graph is None:
            return None
        graph = ctx.graph()
        if not len(graph):
            return None
        seeds = graph.resolve(" ".join(query.words), name_like=lambda key: _name_like(ctx, graph, key))
        if not seeds:
            return None
        top = int(query.knobs.get("graph_neighbours", 8))
        decay = float(query.knobs.get("graph_decay", 0.5))
        walk = graph.walk(seeds, top, decay)
        return graph, walk, graph.mass(walk)

    def channel(self, ctx, query) -> Channel | None:
        walked = self.walk(ctx, query)
        if walked is None:
            return None
        graph, walk, mass = walked
        size = min(len(mass), len(query.allowed))
        allowed, holds = query.allowed[:size], query.holds_word[:size]
        admitted = (
            (mass[:size] > 0) & allowed & (holds | (mass[:size] >= query.knobs.get("graph_min_mass", 0.5)))
        )
        ids = np.flatnonzero(admitted)
        ids, scores = top_k(ids, mass[ids], query.depth)
        held = mass[:size][holds] if holds.any() else mass[mass > 0]
        background = (float(held.mean()), float(held.std())) if len(held) > 1 else None

        def score_of(chunk_ids):
            chunk_ids = np.asarray(chunk_ids, dtype=np.int64)
            inside = chunk_ids < len(mass)
            return np.where(inside, mass[np.minimum(chunk_ids, len(mass) - 1)], 0.0)

        info = {**walk.to_dict(), "returned": len(ids)}
        return Channel(self.name, ids, scores, score_of, background, info)

    def explain(self, ctx, query, chunk_id: int) -> dict | None:
        """Which of the walk's entities this chunk holds, and how each was reached."""
        walked = self.walk(ctx, query)
        if walked is None:
            return None
        graph, walk, mass = walked
        held = [walk.reached[k].to_dict() for k in graph.entities_of(chunk_id) if k in walk.reached]
        return {"mass": float(mass[chunk_id]) if chunk_id < len(mass) else 0.0, "entities": held}


def _name_like(ctx, graph, key: str) -> bool:
    """A one-word query entity counts when the word is an entity (capitalised inside a sentence) in
    at least half the chunks that hold it at all: "Curie" is, "will" (once "Will") is not."""
    terms = ctx.analyzer.query_terms(key, remove_stopwords=False)
    if len(terms) != 1:
        return True
    postings = ctx.view.postings(terms)[terms[0]]
    return postings is None or graph.df(key) >= 0.5 * postings.df
