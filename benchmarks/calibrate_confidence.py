"""Fit and check the per-hit confidence (kenning.search.confidence) on the BEIR dev sets.

Every judged query of each dataset runs through the full pipeline (hybrid and lexical mode, top 10,
detail="full"); each hit's evidence becomes a row labelled relevant when the qrels grade its document
above 0. Then, leave-one-set-out: each model is fitted on two sets and judged on the third by

- Brier score (mean squared error of the probability; lower is better),
- ECE (expected calibration error over 10 equal-width bins; lower is better),
- pooled AUC (how often a relevant hit from any query outranks an irrelevant hit from any query:
  what "comparable across queries" means; 0.5 is chance).

Baselines on the same rows: the training sets' base rate (a constant), and a logistic over the raw
score (which is not comparable across queries, and the pooled AUC shows it). "shipped" judges the
coefficients in kenning.search.confidence as they are. --fit prints coefficients fitted on all three
sets, each weighted equally, to paste into that module.

    kenning eval ../shared/data/cranfield --mode hybrid    # (and msmarco-5k, cacm) once, for vectors
    python benchmarks/calibrate_confidence.py [--fit]
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from lib.datasets import open_embedded_eval_index, set_dirs

from kenning.eval import load_beir
from kenning.search.confidence import MODELS, features, model_for, probability

LIMIT = 10

# name -> the evidence features it reads (None: the raw score), per mode
CANDIDATES = {
    "hybrid": {
        "coverage": ["coverage"],
        "cosine": ["query_cosine"],
        "cosine_z": ["cosine_z"],
        "coverage+cosine": ["coverage", "query_cosine"],
        "coverage+cosine_z": ["coverage", "cosine_z"],
        "coverage+both": ["coverage", "query_cosine", "cosine_z"],
        "raw score": None,
    },
    "lexical": {
        "coverage": ["coverage"],
        "matched fraction": ["fraction"],
        "raw score": None,
    },
}
SHIPPED = {"hybrid": "with_vectors", "lexical": "words_only"}


def collect(directory: str, mode: str) -> list[dict]:
    """One row per returned hit: its evidence, its raw score and its label."""
    dataset = load_beir(directory)
    index = open_embedded_eval_index(directory)
    rows = []
    with index:
        for qid, text in dataset.queries.items():
            response = index.search(text, limit=LIMIT, mode=mode, detail="full")
            seen: set[str] = set()
            for rank, hit in enumerate(response.hits, 1):
                if hit.doc_key in seen:  # a document counts once, at its best chunk, as in eval
                    continue
                seen.add(hit.doc_key)
                ev = hit.evidence
                rows.append(
                    {
                        "set": dataset.name,
                        "qid": qid,
                        "rank": rank,
                        "score": hit.score,
                        "cosine_z": ev.get("cosine_z"),
                        "coverage": ev.get("coverage", 0.0),
                        "fraction": ev["clauses_matched"] / ev["clauses"] if ev.get("clauses") else 0.0,
                        "query_cosine": ev.get("query_cosine"),
                        "evidence": ev,
                        "label": 1.0 if dataset.qrels.get(qid, {}).get(hit.doc_key, 0) > 0 else 0.0,
                    }
                )
    return rows


def design(rows: list[dict], names: list[str] | None) -> np.ndarray:
    cols = [[r["score"]] if names is None else [r[n] or 0.0 for n in names] for r in rows]
    return np.hstack([np.ones((len(rows), 1)), np.asarray(cols, dtype=float)])


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Weighted logistic regression by Newton's method (a small ridge keeps it finite)."""
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (w * (p - y)) + ridge * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta


def set_weights(rows: list[dict]) -> np.ndarray:
    """Each dataset weighs the same in a fit, however many hits it has."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["set"]] = counts.get(r["set"], 0) + 1
    return np.array([1.0 / counts[r["set"]] for r in rows]) * len(rows) / len(counts)


def brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    edges = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        sel = edges == b
        if sel.any():
            total += sel.sum() * abs(p[sel].mean() - y[sel].mean())
    return total / len(p)


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """Probability that a random relevant row scores above a random irrelevant one (ties half)."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    values = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[i : j + 1] = (i + j) / 2 + 1
        i = j + 1
    is_pos = np.zeros(len(values), dtype=bool)
    is_pos[order < len(pos)] = True
    return float((ranks[is_pos].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def judge(p: np.ndarray, y: np.ndarray) -> dict:
    return {"brier": brier(p, y), "ece": ece(p, y), "auc": auc(p, y), "mean_p": float(p.mean())}


def leave_one_set_out(rows: list[dict], mode: str) -> dict:
    """{model: {held-out set: metrics}} for every candidate, the base rate and the shipped model."""
    sets = sorted({r["set"] for r in rows})
    out: dict[str, dict] = {}
    for held in sets:
        train = [r for r in rows if r["set"] != held]
        test = [r for r in rows if r["set"] == held]
        y_train, y_test, w = (
            np.array([r["label"] for r in train]),
            np.array([r["label"] for r in test]),
            set_weights(train),
        )
        base = float(np.sum(w * y_train) / np.sum(w))
        out.setdefault("base rate", {})[held] = judge(np.full(len(test), base), y_test)
        for name, cols in CANDIDATES[mode].items():
            beta = fit_logistic(design(train, cols), y_train, w)
            p = 1 / (1 + np.exp(-(design(test, cols) @ beta)))
            out.setdefault(name, {})[held] = judge(p, y_test)
        shipped = np.array([probability(features(r["evidence"]), MODELS[SHIPPED[mode]]) for r in test])
        out.setdefault("shipped", {})[held] = judge(shipped, y_test)
    return out


def fit_all(rows: list[dict], mode: str) -> dict[str, float]:
    """The coefficients of the shipped model fitted on every set, each weighted equally."""
    names = [n for n in MODELS[SHIPPED[mode]] if n != "intercept"]
    beta = fit_logistic(design(rows, names), np.array([r["label"] for r in rows]), set_weights(rows))
    return {"intercept": round(float(beta[0]), 3)} | {
        n: round(float(b), 3) for n, b in zip(names, beta[1:], strict=True)
    }


def reliability(rows: list[dict], mode: str, bins: int = 5) -> list[dict]:
    """Shipped confidence against the observed share of relevant hits, per bin, pooled over sets."""
    p = np.array([probability(features(r["evidence"]), model_for(features(r["evidence"]))) for r in rows])
    y = np.array([r["label"] for r in rows])
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        sel = (p >= lo) & ((p < hi) if b < bins - 1 else (p <= hi))
        if sel.any():
            out.append(
                {
                    "bin": f"{lo:.1f}-{hi:.1f}",
                    "hits": int(sel.sum()),
                    "mean_conf": float(p[sel].mean()),
                    "relevant": float(y[sel].mean()),
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="print coefficients fitted on all sets")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    report: dict = {}
    for mode in ("hybrid", "lexical"):
        rows = [r for d in set_dirs() for r in collect(d, mode)]
        report[mode] = {
            "hits": len(rows),
            "loso": leave_one_set_out(rows, mode),
            "reliability": reliability(rows, mode),
        }
        if args.fit:
            report[mode]["fitted"] = fit_all(rows, mode)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for mode, part in report.items():
        sets = sorted(next(iter(part["loso"].values())))
        print(f"\n{mode}: {part['hits']} hits (top {LIMIT} of every judged query), leave-one-set-out")
        print(f"{'model':<18}" + "".join(f"{s + ' brier/ece/auc':>32}" for s in sets))
        for name, per_set in part["loso"].items():
            cells = [per_set[s] for s in sets]
            print(
                f"{name:<18}"
                + "".join(f"{c['brier']:>14.4f}{c['ece']:>9.4f}{_auc(c['auc']):>9}" for c in cells)
            )
        print("shipped confidence against the share of relevant hits, all sets pooled:")
        for b in part["reliability"]:
            mean, relevant = b["mean_conf"], b["relevant"]
            print(f"  conf {b['bin']}: {b['hits']:>5} hits, mean conf {mean:.3f}, relevant {relevant:.3f}")
        if "fitted" in part:
            print(f"fitted on all sets ({SHIPPED[mode]}): {part['fitted']}")


def _auc(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4f}"


if __name__ == "__main__":
    main()
