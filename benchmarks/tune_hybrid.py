"""Sweep fusion settings on BEIR datasets, then validate the choice leave-one-set-out.

Every setting in GRID (zscore, norm, rrf and blend fusion, with and without feedback) runs every judged
query of every dataset through kenning's full pipeline. Each dataset's bar is the best of its own
single channels plus 0.01: max(lexical, dense, RRF of the two without feedback) + 0.01, all measured in
this run. A setting's margin on a set is its nDCG@10 minus that bar.

Leave-one-set-out: for each dataset, choose the setting with the largest smallest margin on the other
datasets, and report its nDCG@10 on the held-out one. Done twice: over every fusion family, and within
each family, which shows which designs carry over to a collection they were not fitted on.

Uses the eval indexes that `kenning eval --mode hybrid` builds (embedding each corpus once) and embeds
each query once per process. Rerun it when a signal or the fusion changes; the defaults in
kenning.search.fusion come from it.

    kenning eval ../shared/data/cranfield --mode hybrid     # (and msmarco-5k, cacm) once
    python benchmarks/tune_hybrid.py
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from multiprocessing import Pool

from lib.datasets import DEV_SETS, open_embedded_eval_index, set_dirs

from kenning import Bm25Params
from kenning.eval import load_beir, ndcg_at, ranked_doc_keys
from kenning.search.fusion import FusionParams

REFERENCES = {  # the single channels and their plain RRF: what the bars are made of
    "lexical": ("lexical", None),
    "dense": ("dense", None),
    "rrf": ("hybrid", FusionParams(mode="rrf", w_dense=1.0, feedback_k=0)),
}


def grid() -> list[FusionParams]:
    settings = []
    for w in [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0]:
        settings.append(FusionParams(mode="zscore", w_dense=w, feedback_k=0))
        for k, terms, gamma in itertools.product([2, 3], [10, 20], [0.2, 0.35, 0.5, 0.7]):
            settings.append(
                FusionParams(
                    mode="zscore", w_dense=w, feedback_k=k, feedback_terms=terms, feedback_gamma=gamma
                )
            )
    for mode in ["norm", "rrf"]:
        for w in [1.0, 2.0, 3.0]:
            settings.append(FusionParams(mode=mode, w_dense=w, feedback_k=0))
            for k, gamma in itertools.product([2, 3], [0.2, 0.5]):
                settings.append(FusionParams(mode=mode, w_dense=w, feedback_k=k, feedback_gamma=gamma))
    settings += [FusionParams(mode="blend", alpha=a) for a in [0.5, 1.0, 2.0, 4.0]]
    return settings


class MemoEmbedder:
    """Wraps an embedder so that each query is embedded once across the whole sweep."""

    def __init__(self, inner):
        self.inner = inner
        self.backend, self.model, self.dim = inner.backend, inner.model, inner.dim
        self._memo: dict[tuple[str, str], object] = {}

    def fingerprint(self):
        return self.inner.fingerprint()

    def describe(self):
        return self.inner.describe()

    def embed(self, texts, kind="document"):
        import numpy as np

        missing = [t for t in texts if (t, kind) not in self._memo]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing, kind=kind), strict=True):
                self._memo[(t, kind)] = v
        return np.vstack([self._memo[(t, kind)] for t in texts])


_OPEN: dict[str, tuple] = {}


def open_dataset(directory: str):
    """(dataset, index) with a query-memoising embedder; one per process."""
    if directory not in _OPEN:
        dataset = load_beir(directory)
        index = open_embedded_eval_index(directory)
        index.vectors.embedders[index.embedding_model()["spec"]] = MemoEmbedder(index.embedder())
        _OPEN[directory] = (dataset, index)
    return _OPEN[directory]


Job = tuple[str, str, FusionParams | None, Bm25Params]  # dataset, mode, fusion, lexical knobs


def score(job: Job) -> tuple[str, str, FusionParams | None, float]:
    """Mean nDCG@10 of one (dataset, mode, fusion, lexical knobs) over every judged query, queries as
    plain text."""
    directory, mode, fusion, lexical = job
    dataset, index = open_dataset(directory)
    total = sum(
        ndcg_at(ranked_doc_keys(index, text, 10, lexical, mode, fusion), dataset.qrels[qid])
        for qid, text in dataset.queries.items()
    )
    return directory, mode, fusion, total / len(dataset.queries)


def describe(fusion: FusionParams) -> str:
    default = FusionParams().to_dict()
    changed = {k: v for k, v in fusion.to_dict().items() if k == "mode" or v != default[k]}
    return " ".join(f"{k}={v}" for k, v in changed.items())


def leave_one_out(rows: list[tuple[FusionParams, dict]], bars: dict[str, float]) -> list[dict]:
    """For each dataset: the setting with the largest smallest margin on the others, and its score on
    the one held out."""
    folds = []
    for held in bars:
        train = [s for s in bars if s != held]
        fusion, scores = max(rows, key=lambda r: min(r[1][s] - bars[s] for s in train))
        margin = scores[held] - bars[held]
        folds.append({"held_out": held, "chosen": fusion, "scores": scores, "margin": margin})
    return folds


def format_folds(folds: list[dict]) -> str:
    return "  ".join(f"{f['held_out']} {f['scores'][f['held_out']]:.4f} ({f['margin']:+.4f})" for f in folds)


def sweep(
    datasets: list[str],
    jobs: int = 2,
    settings: list[FusionParams] | None = None,
    lexical: Bm25Params | None = None,
) -> dict:
    """Every reference and every setting on every dataset, with these lexical knobs (default:
    kenning's): {'references', 'bars', 'rows'}."""
    settings = grid() if settings is None else settings
    lexical = Bm25Params() if lexical is None else lexical
    work = [(d, mode, f, lexical) for d in datasets for mode, f in REFERENCES.values()]
    work += [(d, "hybrid", f, lexical) for d in datasets for f in settings]
    with Pool(jobs) as pool:
        results = pool.map(score, work, chunksize=4)
    names = {d: load_beir(d).name for d in datasets}
    references = {label: {} for label in REFERENCES}
    by_setting: dict[FusionParams, dict[str, float]] = {f: {} for f in settings}
    for directory, mode, fusion, value in results:
        for label, (ref_mode, ref_fusion) in REFERENCES.items():
            if mode == ref_mode and fusion == ref_fusion:
                references[label][names[directory]] = value
        if mode == "hybrid" and fusion in by_setting:
            by_setting[fusion][names[directory]] = value
    bars = {names[d]: max(references[label][names[d]] for label in REFERENCES) + 0.01 for d in datasets}
    return {"references": references, "bars": bars, "rows": list(by_setting.items())}


def print_report(result: dict, top: int = 15) -> None:
    references, bars, rows = result["references"], result["bars"], result["rows"]
    sets = list(bars)
    print(" ".join(f"{s:>11}" for s in sets), " min margin  setting")
    for label, scores in references.items():
        print(" ".join(f"{scores[s]:>11.4f}" for s in sets), f"{'':>11}  {label}")
    print(" ".join(f"{bars[s]:>11.4f}" for s in sets), f"{'':>11}  bar: best of the above + 0.01")
    default = FusionParams()
    ranked = sorted(rows, key=lambda r: -min(r[1][s] - bars[s] for s in sets))
    shown = ranked[:top] + [r for r in ranked[top:] if r[0] == default]
    for fusion, scores in shown:
        margin = min(scores[s] - bars[s] for s in sets)
        mark = "  <- default" if fusion == default else ""
        print(" ".join(f"{scores[s]:>11.4f}" for s in sets), f"{margin:>+10.4f} ", describe(fusion) + mark)
    print("\nleave-one-set-out (chosen on the other sets by their smallest margin over the bar):")
    families = [("every family", None)] + [(m, m) for m in sorted({f.mode for f, _ in rows})]
    for label, mode in families:
        subset = [r for r in rows if mode is None or r[0].mode == mode]
        folds = leave_one_out(subset, bars)
        verdict = "holds" if all(f["margin"] >= 0 for f in folds) else "FAILS"
        print(f"  {label:<13} {format_folds(folds)}  {verdict}")
        if mode is None or mode == default.mode:
            for f in folds:
                print(f"      {f['held_out']:<11} <- {describe(f['chosen'])}")


def lexical_params(settings: list[str]) -> Bm25Params:
    """Bm25Params from KNOB=VALUE strings (numbers where the default is one)."""
    default = Bm25Params().to_dict()
    given = {}
    for item in settings:
        key, _, value = item.partition("=")
        if key not in default:
            raise SystemExit(f"unknown lexical knob {key!r}: choose from {', '.join(default)}")
        given[key] = value if isinstance(default[key], str) else float(value)
    return Bm25Params(**given)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("datasets", nargs="*", default=set_dirs(DEV_SETS))
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--lexical",
        nargs="*",
        default=[],
        metavar="KNOB=VALUE",
        help="lexical knobs other than the defaults, as Bm25Params fields (k1=2.0 coordination=idf)",
    )
    args = parser.parse_args()
    result = sweep(args.datasets, args.jobs, lexical=lexical_params(args.lexical))
    if args.json:
        rows = [{"fusion": f.to_dict(), "scores": s} for f, s in result["rows"]]
        out = {"references": result["references"], "bars": result["bars"], "rows": rows}
        print(json.dumps(out, indent=2))
        return 0
    print_report(result, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
