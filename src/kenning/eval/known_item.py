"""Known-item search: sentences taken from a corpus and pasted back as queries.

Someone who pastes a sentence, an error message or a name from a document wants the section that
holds it first. `known_item` samples sentences (8 to 40 words, seeded) from any index's chunks,
searches each, and reports Hit@1 and MRR@10, where a hit is a result whose text holds the sentence.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from kenning.api.index import Index
from kenning.lexical.bm25 import Bm25Params
from kenning.search.fusion import FusionParams
from kenning.store.records import own_text

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


@dataclass
class KnownItemReport:
    """Sentences taken from the corpus and pasted back as queries: is the chunk holding each first?"""

    corpus: str
    queries: int
    hit_at_1: float
    mrr_at_10: float
    mode: str
    syntax: str
    seed: int
    misses: list[dict] = field(default_factory=list)  # query, the rank it reached (None: not in top 10)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def sample_sentences(index: Index, n: int, seed: int = 0, min_words: int = 8, max_words: int = 40):
    """`n` (chunk id, sentence) pairs: chunks drawn at random (seeded), one sentence of 8-40 words from
    each chunk's body. Chunks with no such sentence are skipped, so every chunk kind is fair game."""
    rng = random.Random(seed)
    with index.store.reading():
        live = list(index.lexical.view().live)
    rng.shuffle(live)
    picked: list[tuple[int, str]] = []
    for start in range(0, len(live), 256):
        if len(picked) >= n:
            break
        rows = index.store.chunks_by_ids(live[start : start + 256])
        for cid in live[start : start + 256]:
            row = rows.get(cid)
            if row is None:
                continue
            sentences = [
                " ".join(s.split())
                for s in _SENTENCE_END.split(own_text(row.title, row.body))
                if min_words <= len(s.split()) <= max_words
            ]
            if sentences:
                picked.append((cid, rng.choice(sentences)))
                if len(picked) >= n:
                    break
    return picked


def known_item(
    index: Index,
    n: int = 60,
    seed: int = 0,
    mode: str = "auto",
    syntax: str = "plain",
    fusion: FusionParams | None = None,
    params: Bm25Params | None = None,
) -> KnownItemReport:
    """Hit@1 and MRR@10 of pasted sentences: a hit is a result whose text contains the sentence (the
    chunk it came from, or an overlapping window or a duplicate that holds it too)."""
    pairs = sample_sentences(index, n, seed)
    hits, rr, misses = 0, 0.0, []
    for _cid, sentence in pairs:
        response = index.search(
            sentence, limit=10, mode=mode, syntax=syntax, fusion=fusion, params=params, detail="heads"
        )
        rows = index.store.chunks_by_ids([h.id for h in response.hits])
        rank = next(
            (
                r
                for r, h in enumerate(response.hits, 1)
                if sentence in " ".join(f"{rows[h.id].title}\n{rows[h.id].body}".split())
            ),
            None,
        )
        hits += rank == 1
        rr += 1.0 / rank if rank else 0.0
        if rank != 1:
            misses.append({"query": sentence, "rank": rank})
    total = max(1, len(pairs))
    resolved = (
        "hybrid" if mode == "auto" and index.embedding_model() else ("lexical" if mode == "auto" else mode)
    )
    return KnownItemReport(
        corpus=index.location,
        queries=len(pairs),
        hit_at_1=hits / total,
        mrr_at_10=rr / total,
        mode=resolved,
        syntax=syntax,
        seed=seed,
        misses=misses,
    )
