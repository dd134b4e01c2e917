"""Confidence: a 0-1 number per hit that means the same thing on every query and every collection.

A raw score cannot do this: BM25 grows with the rarity and the number of query words, and a fused
score depends on how the channels were normalised for this query, so 12.3 on one query and 4.1 on
another say nothing about which hit is better. Confidence is read from evidence whose scale is fixed:

- coverage: the idf-weighted share of the query's clauses the hit holds (0 to 1), so missing the
  rare word costs more than missing a common one;
- cosine z: how many standard deviations the hit's cosine with the query as asked stands above the
  query's cosine with an unremarkable chunk of the corpus (a fixed sample), when the index has
  vectors. A bare cosine is not comparable: some queries and some models run high everywhere.

A logistic model maps them to an estimate that the hit is relevant. Its coefficients were fitted on
the judged top-10 hits of the dev sets, each set weighted equally, and checked leave-one-set-out
(docs/scoring.md explains the fit). Without vectors
(a lexical index, or lexical mode) the model over coverage alone is used.
"""

from __future__ import annotations

import math

# fitted on the dev sets' judged hits (see docs/scoring.md)
MODELS: dict[str, dict[str, float]] = {
    "with_vectors": {"intercept": -4.268, "coverage": 2.282, "cosine_z": 0.882},
    "words_only": {"intercept": -2.582, "coverage": 4.909},
}


def features(evidence: dict) -> dict[str, float] | None:
    """The model's inputs from a hit's evidence, or None when there is nothing to go on."""
    if not evidence:
        return None
    out: dict[str, float] = {}
    if evidence.get("clauses"):
        out["coverage"] = float(evidence.get("coverage", 0.0))
    if evidence.get("cosine_z") is not None:
        out["cosine_z"] = float(evidence["cosine_z"])
    return out or None


def model_for(inputs: dict[str, float], models: dict[str, dict[str, float]] = MODELS) -> dict[str, float]:
    return models["with_vectors"] if "cosine_z" in inputs else models["words_only"]


def probability(inputs: dict[str, float], model: dict[str, float]) -> float:
    """The logistic of the model's linear score; an input the hit lacks counts as 0."""
    z = model["intercept"] + sum(
        w * inputs.get(name, 0.0) for name, w in model.items() if name != "intercept"
    )
    return 1.0 / (1.0 + math.exp(-z))


def confidence(evidence: dict, models: dict[str, dict[str, float]] = MODELS) -> float | None:
    inputs = features(evidence)
    if inputs is None:
        return None
    return round(probability(inputs, model_for(inputs, models)), 3)
