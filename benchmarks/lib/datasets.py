"""The dev sets: where they live, their corpora, and the one metric every benchmark reports.

The sets are BEIR-layout folders (corpus.jsonl, queries.jsonl, qrels/test.tsv) beside this checkout,
in ../shared/data; KENNING_BENCH_DATA names another folder. kenning is imported inside the functions
that need it: scale.py's workers time the package's import themselves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("KENNING_BENCH_DATA") or ROOT.parent / "shared" / "data")
BOOKS = DATA / "books"
# the three sets the first defaults were tuned on (scale.py draws its synthetic corpus from them)
TUNING_SETS = ("cranfield", "msmarco-5k", "cacm")
# every dev set: defaults are chosen by their worst margin over all six
DEV_SETS = ("cranfield", "msmarco-5k", "cacm", "scifact", "npl", "med")


def set_dirs(names=TUNING_SETS) -> list[str]:
    """The folders of the named dev sets."""
    return [str(DATA / name) for name in names]


def read_corpus(path: Path) -> list[dict]:
    """Every document of a BEIR corpus.jsonl, as its JSON object."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def mean_ndcg(dataset, rankings: dict[str, list[str]]) -> float:
    """nDCG@10 over every judged query, scored by kenning.eval.ndcg_at (trec_eval's definition)."""
    from kenning.eval import ndcg_at

    return sum(ndcg_at(rankings[q], dataset.qrels[q]) for q in dataset.queries) / len(dataset.queries)


def open_embedded_eval_index(directory: str | Path):
    """The eval index `kenning eval DIR --mode hybrid` built for a dev set, which must hold vectors."""
    from kenning import Index
    from kenning.eval import default_eval_index

    index = Index(default_eval_index(Path(directory), stem=True), create=False)
    if index.embedding_model() is None:
        index.close()
        raise SystemExit(f"{directory}: no vectors; run `kenning eval {directory} --mode hybrid` first")
    return index
