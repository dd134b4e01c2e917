"""`kenning eval`: retrieval quality and speed on a BEIR-layout dataset.

Metrics follow trec_eval's definitions (as pytrec_eval computes them): nDCG@10 with the graded
relevance as gain and a log2 discount, Recall@100 and MRR@10 counting relevance > 0. Every judged query
is scored; a query that returns nothing scores zero rather than being skipped.

Queries go in as plain text by default, as every peer system receives them; `syntax="dialect"` sends
them through kenning's query language instead. A query that fails is recorded by id with its error,
scores zero, and the run goes on.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kenning.api.index import Index
from kenning.lexical.bm25 import Bm25Params
from kenning.places.cachedir import user_cache
from kenning.search.fusion import FusionParams
from kenning.store import is_server_url


class DatasetError(Exception):
    """The dataset directory is not in BEIR layout; the message names the missing or bad file."""


@dataclass
class Dataset:
    name: str
    corpus_path: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(directory: str | os.PathLike, split: str = "test") -> Dataset:
    root = Path(directory)
    corpus = root / "corpus.jsonl"
    queries_path = root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    for needed in (corpus, queries_path, qrels_path):
        if not needed.is_file():
            raise DatasetError(
                f"{needed}: missing (expected BEIR layout: corpus.jsonl, queries.jsonl, qrels/{split}.tsv)"
            )
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and not parts[-1].lstrip("-").isdigit():
                continue  # header
            if len(parts) < 3:
                raise DatasetError(f"{qrels_path}:{lineno}: expected query-id, corpus-id, score")
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries: dict[str, str] = {}
    with queries_path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                queries[str(obj["_id"])] = obj["text"]
            except (ValueError, KeyError) as exc:
                raise DatasetError(f"{queries_path}:{lineno}: bad query line ({exc})") from exc
    judged = {q: text for q, text in queries.items() if q in qrels}
    return Dataset(root.resolve().name, corpus, judged, qrels)


def ndcg_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum(rels.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if rels.get(doc, 0) > 0)
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[str], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at(ranked: list[str], rels: dict[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if rels.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


@dataclass
class EvalReport:
    dataset: str
    queries: int
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    qps: float
    index_seconds: float
    embed_seconds: float
    mode: str
    fusion: dict | None
    params: dict
    index_dir: str
    syntax: str = "plain"
    failures: dict[str, str] = field(default_factory=dict)  # query id -> error
    per_query: dict[str, dict] = field(default_factory=dict)

    def to_dict(self, per_query: bool = False) -> dict:
        d = dict(self.__dict__)
        if not per_query:
            d.pop("per_query")
        return d


def default_eval_index(dataset_dir: Path, stem: bool) -> Path:
    """A cache directory per dataset (and analyzer setting), so repeated evals reuse their index."""
    base = user_cache("eval")
    digest = hashlib.sha1(f"{dataset_dir.resolve()}|stem={stem}".encode()).hexdigest()[:10]
    return base / f"{dataset_dir.resolve().name}-{digest}"


def open_eval_index(
    corpus: Path,
    key: Path,
    index_dir: str | os.PathLike | None = None,
    stem: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    mode: str = "lexical",
    embedder: str | None = None,
    embed_progress: Callable[[int, int, float], None] | None = None,
):
    """(index, index report, embedding seconds): the corpus indexed (incrementally) into `index_dir`,
    or a disposable cache keyed by `key`, and embedded unless the mode is lexical."""
    if is_server_url(index_dir):
        directory = str(index_dir)
    else:
        directory = Path(index_dir) if index_dir else default_eval_index(key, stem)
    index = Index(directory, rebuild_outdated=index_dir is None)  # the default cache is disposable
    try:
        report = index.add([corpus], stem=stem, progress=progress, force=index.analyzer.config.stem != stem)
        if report.errors:
            raise DatasetError(f"{report.errors[0][0]}: {report.errors[0][1]}")
        embed_seconds = 0.0
        if mode != "lexical":
            embed_seconds = index.embed(embedder, progress=embed_progress).seconds
    except BaseException:
        index.close()
        raise
    return index, report, embed_seconds


def ranked_doc_keys(
    index: Index,
    query: str,
    depth: int,
    params: Bm25Params,
    mode: str = "lexical",
    fusion=None,
    embedder=None,
    syntax: str = "plain",
) -> list[str]:
    """Document ids in rank order, each document once (at its best chunk)."""
    response = index.search(
        query,
        limit=depth,
        params=params,
        detail="heads",
        mode=mode,
        fusion=fusion,
        embedder=embedder,
        syntax=syntax,
    )
    seen: dict[str, None] = {}
    for hit in response.hits:
        seen.setdefault(hit.doc_key, None)
    return list(seen)


def evaluate(
    dataset_dir: str | os.PathLike,
    params: Bm25Params | None = None,
    index_dir: str | os.PathLike | None = None,
    stem: bool = True,
    depth: int = 100,
    progress: Callable[[str, int, int], None] | None = None,
    mode: str = "lexical",
    fusion: FusionParams | None = None,
    embedder: str | None = None,
    embed_progress: Callable[[int, int, float], None] | None = None,
    syntax: str = "plain",
) -> EvalReport:
    """Build (or reuse) an index of the corpus, run every judged query, and score the rankings.

    Modes other than lexical embed the corpus first (only what has no vector yet).
    """
    params = params or Bm25Params()
    dataset = load_beir(dataset_dir)
    index, report, embed_seconds = open_eval_index(
        dataset.corpus_path, Path(dataset_dir), index_dir, stem, progress, mode, embedder, embed_progress
    )
    directory = index.location
    with index:
        runs: dict[str, list[str]] = {}
        failures: dict[str, str] = {}
        started = time.perf_counter()
        for qid, text in dataset.queries.items():
            try:
                runs[qid] = ranked_doc_keys(index, text, depth, params, mode, fusion, embedder, syntax)
            except Exception as exc:  # one bad query must not end the run: it scores zero, by name
                failures[qid] = f"{type(exc).__name__}: {exc}"
                runs[qid] = []
        elapsed = time.perf_counter() - started
    per_query = {
        qid: {
            "ndcg@10": ndcg_at(runs[qid], dataset.qrels[qid]),
            "recall@100": recall_at(runs[qid], dataset.qrels[qid]),
            "mrr@10": mrr_at(runs[qid], dataset.qrels[qid]),
        }
        for qid in dataset.queries
    }
    n = max(1, len(per_query))
    return EvalReport(
        dataset=dataset.name,
        queries=len(per_query),
        ndcg_at_10=sum(m["ndcg@10"] for m in per_query.values()) / n,
        recall_at_100=sum(m["recall@100"] for m in per_query.values()) / n,
        mrr_at_10=sum(m["mrr@10"] for m in per_query.values()) / n,
        qps=len(per_query) / elapsed if elapsed > 0 else float("inf"),
        index_seconds=report.seconds,
        embed_seconds=embed_seconds,
        mode=mode,
        fusion=(fusion or FusionParams()).to_dict() if mode == "hybrid" else None,
        params=params.to_dict(),
        index_dir=str(directory),
        syntax=syntax,
        failures=failures,
        per_query=per_query,
    )
