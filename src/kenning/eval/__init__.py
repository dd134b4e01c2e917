"""Measuring quality: BEIR-layout datasets with trec_eval's metrics (beir), and known-item search
with pasted sentences (known_item)."""

from kenning.eval.beir import (
    Dataset,
    DatasetError,
    EvalReport,
    default_eval_index,
    evaluate,
    load_beir,
    mrr_at,
    ndcg_at,
    open_eval_index,
    ranked_doc_keys,
    recall_at,
)
from kenning.eval.known_item import KnownItemReport, known_item, sample_sentences

__all__ = [
    "Dataset",
    "DatasetError",
    "EvalReport",
    "KnownItemReport",
    "default_eval_index",
    "evaluate",
    "known_item",
    "load_beir",
    "mrr_at",
    "ndcg_at",
    "open_eval_index",
    "ranked_doc_keys",
    "recall_at",
    "sample_sentences",
]
