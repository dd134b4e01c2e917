"""The retrieval pipeline, top to bottom, as named stages with one inspectable data flow:

    analyze  -> query terms (stopwords removed on the query side only)
    gather   -> union of the terms' roaring posting bitmaps: every chunk holding any term
    filter   -> survivors of the candidate set (live chunks; filters join here)
    score    -> BM25 over the survivors only
    rank     -> top `limit` by score, ties broken by chunk id for a stable order
    present  -> chunk rows, snippets with matched terms marked, and explanations on request

The funnel records the size after each stage and the time each stage took.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
from pyroaring import BitMap

from kenning.signals.lexical import Bm25Params
from kenning.snippets import make_snippet


@dataclass
class Funnel:
    """How many chunks survived each stage, and how long each stage took (milliseconds)."""

    corpus: int = 0
    gathered: int = 0
    filtered: int = 0
    scored: int = 0
    returned: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class Hit:
    id: int
    score: float
    title: str = ""
    path: str = ""
    doc_key: str = ""
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    time: float | None = None
    meta: dict = field(default_factory=dict)
    snippet: str = ""
    explain: dict | None = None

    def location(self) -> str:
        """`file:12-40`, `file p.3`, or just the file."""
        if self.page is not None:
            return f"{self.path} p.{self.page}"
        if self.start_line is not None:
            end = f"-{self.end_line}" if self.end_line and self.end_line != self.start_line else ""
            return f"{self.path}:{self.start_line}{end}"
        return self.path


@dataclass
class SearchResponse:
    query: str
    terms: list[str]
    dropped_stopwords: list[str]
    missing_terms: list[str]
    hits: list[Hit]
    funnel: Funnel
    params: Bm25Params

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "terms": self.terms,
            "dropped_stopwords": self.dropped_stopwords,
            "missing_terms": self.missing_terms,
            "params": self.params.to_dict(),
            "funnel": asdict(self.funnel),
            "hits": [asdict(h) for h in self.hits],
        }


DETAILS = ("full", "heads")


def _present(ranked, view, storage, analyzer, terms, found, params, detail: str, explain: bool) -> list[Hit]:
    """Turn ranked (id, score) pairs into hits.

    detail="heads" reads only what a ranked list needs (document key, title, location), which is what
    eval and benchmarks use; "full" adds metadata and a snippet with the matched terms marked.
    """
    ids = [cid for cid, _ in ranked]
    hits = []
    if detail == "heads":
        heads = storage.chunk_heads(ids)
        for cid, score in ranked:
            doc_key, title, path, start, end, page, when = heads[cid]
            hits.append(Hit(cid, score, title, path, doc_key, start, end, page, when))
    else:
        rows = storage.chunks_by_ids(ids)
        term_set = set(terms)
        for cid, score in ranked:
            row = rows[cid]
            hits.append(
                Hit(
                    cid,
                    score,
                    row.title,
                    row.path,
                    row.doc_key,
                    row.start_line,
                    row.end_line,
                    row.page,
                    row.time,
                    row.meta,
                    make_snippet(row.body, term_set, analyzer),
                )
            )
    if explain:
        for hit in hits:
            hit.explain = {"lexical": view.explain(hit.id, terms, found, params)}
    return hits


class _Stopwatch:
    def __init__(self, funnel: Funnel):
        self.funnel = funnel
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.funnel.timings_ms[stage] = (now - self.last) * 1000.0
        self.last = now


def run_search(
    view, storage, analyzer, query: str, limit: int, params: Bm25Params, explain: bool, detail: str = "full"
) -> SearchResponse:
    """Run every stage for one query against one committed snapshot (`view`)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    funnel = Funnel(corpus=view.n_docs)
    clock = _Stopwatch(funnel)

    # analyze
    terms, dropped = analyzer.analyze_query(query)
    clock.lap("analyze")

    # gather
    found = view.postings(terms)
    bitmaps = [p.bitmap for p in found.values() if p is not None]
    candidates = BitMap.union(*bitmaps) if bitmaps else BitMap()
    funnel.gathered = len(candidates)
    clock.lap("gather")

    # filter (postings already hold live chunks only; filters will intersect here)
    survivors = candidates
    funnel.filtered = len(survivors)
    clock.lap("filter")

    # score
    scores = view.score(terms, found, params)
    survivor_ids = np.frombuffer(survivors.to_array(), dtype=np.uint32).astype(np.int64)
    survivor_scores = scores[survivor_ids] if len(survivor_ids) else np.zeros(0)
    funnel.scored = len(survivor_ids)
    clock.lap("score")

    # rank
    k = min(limit, len(survivor_ids))
    if k:
        top = np.argpartition(-survivor_scores, k - 1)[:k] if k < len(survivor_ids) else np.arange(k)
        order = top[np.lexsort((survivor_ids[top], -survivor_scores[top]))]
        ranked = list(zip(survivor_ids[order].tolist(), survivor_scores[order].tolist(), strict=True))
    else:
        ranked = []
    funnel.returned = len(ranked)
    clock.lap("rank")

    # present
    hits = _present(ranked, view, storage, analyzer, terms, found, params, detail, explain)
    clock.lap("present")

    missing = [t for t in terms if found.get(t) is None]
    return SearchResponse(query, terms, dropped, missing, hits, funnel, params)
