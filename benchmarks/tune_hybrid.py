"""Sweep fusion settings on BEIR datasets and print nDCG@10 per setting, best first.

Ranked, like tune_lexical.py, by the smallest margin over each set's bar (the hybrid targets:
0.43 on cranfield, 0.81 on msmarco-5k), so one default serves every set. Uses the eval indexes
that `kenning eval --mode dense` builds (embedding the corpora once), and embeds each query once.

    kenning eval ../shared/data/cranfield --mode dense      # builds and embeds the cached index
    kenning eval ../shared/data/msmarco-5k --mode dense
    python benchmarks/tune_hybrid.py
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from kenning import Bm25Params, Index
from kenning.eval import default_eval_index, load_beir, ndcg_at, ranked_doc_keys
from kenning.fusion import FusionParams

GRID = [
    *(FusionParams(mode="rrf", w_dense=w, feedback_k=0) for w in [1.0, 2.0, 3.0]),
    *(FusionParams(mode="norm", w_dense=w, feedback_k=0) for w in [1.0, 2.0, 3.0, 4.0]),
    *(
        FusionParams(mode="norm", w_dense=w, feedback_k=k, feedback_beta=b, feedback_gamma=g)
        for w, k, b, g in itertools.product([2.0, 3.0], [3, 5], [1.0, 2.0], [0.0, 0.2, 0.4])
    ),
    FusionParams(mode="rrf", w_dense=2.0, feedback_k=3),
    FusionParams(mode="blend", alpha=2.0),
    FusionParams(mode="rerank"),
]


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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "datasets", nargs="*", default=["../shared/data/cranfield", "../shared/data/msmarco-5k"]
    )
    parser.add_argument("--bars", default="0.43,0.81", help="nDCG@10 bar per dataset, comma-separated")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    bars = [float(b) for b in args.bars.split(",")]
    sets = []
    for directory in args.datasets:
        dataset = load_beir(directory)
        index = Index(default_eval_index(Path(directory), stem=True), create=False)
        if index.embedding_model() is None:
            parser.error(f"{directory}: no vectors yet; run `kenning eval {directory} --mode dense` first")
        spec = index.embedding_model()["spec"]
        index._embedders[spec] = MemoEmbedder(index.embedder())
        sets.append((dataset, index))
    params = Bm25Params()
    rows = []
    references = [("lexical", "lexical", None), ("dense", "dense", None)]
    for label, mode, fusion in references + [("hybrid", "hybrid", f) for f in GRID]:
        scores = []
        for dataset, index in sets:
            total = sum(
                ndcg_at(ranked_doc_keys(index, text, 10, params, mode, fusion), dataset.qrels[qid])
                for qid, text in dataset.queries.items()
            )
            scores.append(total / len(dataset.queries))
        margin = min(s - b for s, b in zip(scores, bars, strict=True))
        rows.append((label, fusion, scores, margin))
        print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    names = [d.name for d, _ in sets]
    print(" ".join(f"{n:>11}" for n in names), " min margin  setting")
    default = FusionParams()
    hybrid_rows = sorted((r for r in rows if r[0] == "hybrid"), key=lambda r: -r[3])
    for label, fusion, scores, margin in [r for r in rows if r[0] != "hybrid"] + hybrid_rows[: args.top]:
        what = (
            label
            if fusion is None
            else " ".join(
                f"{k}={v}" for k, v in fusion.to_dict().items() if v != getattr(default, k) or k == "mode"
            )
        )
        mark = "  <- default" if fusion == default else ""
        print(" ".join(f"{s:>11.4f}" for s in scores), f"{margin:>+10.4f} ", what + mark)
    if default not in [r[1] for r in hybrid_rows[: args.top]]:
        for _label, fusion, scores, margin in hybrid_rows:
            if fusion == default:
                print(" ".join(f"{s:>11.4f}" for s in scores), f"{margin:>+10.4f} ", "default")
    return 0


if __name__ == "__main__":
    sys.exit(main())
