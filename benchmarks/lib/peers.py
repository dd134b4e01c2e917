"""The systems kenning is compared with on a dev set, each run as its documentation says, in this
process on one thread. Each indexes a corpus's documents (title and text) and answers a query given
as plain text with its top k document ids; MiniLmSystem reads the vectors kenning stored instead.

- bm25s: BM25 with the English stopwords and the Snowball stemmer;
- tantivy: BM25 over title and body with the en_stem analyzer, the query's words OR-ed;
- SQLite FTS5: the porter tokenizer, the query's words OR-ed, ranked by bm25();
- MiniLM exact cosine: the query's all-MiniLM-L6-v2 vector against every stored chunk vector, so it
  shares kenning's vectors but none of its pipeline;
- rrf: reciprocal-rank fusion of rankings (k = 60), the usual hybrid baseline.
"""

from __future__ import annotations

import re
import sqlite3

import numpy as np


class Bm25sSystem:
    name = "bm25s"

    def index(self, docs: list[dict]) -> None:
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.ids = [d["_id"] for d in docs]
        texts = [f"{d.get('title', '')} {d['text']}" for d in docs]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.n = len(docs)

    def search(self, text: str, k: int) -> list[str]:
        tokens = self.bm25s.tokenize([text], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = self.retriever.retrieve(tokens, k=min(k, self.n), show_progress=False, n_threads=1)
        return [self.ids[i] for i in docs[0]]


class TantivySystem:
    name = "tantivy"
    _special = re.compile(r"[^\w\s]")  # the query parser's operators; words are all we want

    def index(self, docs: list[dict]) -> None:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", stored=False, tokenizer_name="en_stem")
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self.index_ = tantivy.Index(builder.build())
        writer = self.index_.writer(heap_size=200_000_000, num_threads=1)
        for d in docs:
            writer.add_document(tantivy.Document(id=d["_id"], title=d.get("title", ""), body=d["text"]))
        writer.commit()
        writer.wait_merging_threads()
        self.index_.reload()
        self.searcher = self.index_.searcher()

    def search(self, text: str, k: int) -> list[str]:
        cleaned = self._special.sub(" ", text).strip().lower()  # lower: AND/OR/NOT are operators
        if not cleaned:
            return []
        query = self.index_.parse_query(cleaned, ["title", "body"])
        result = self.searcher.search(query, k)
        return [self.searcher.doc(addr)["id"][0] for _, addr in result.hits]


class Fts5System:
    name = "SQLite FTS5"

    def index(self, docs: list[dict]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, title, body, tokenize='porter')")
        self.db.executemany(
            "INSERT INTO docs VALUES (?,?,?)", [(d["_id"], d.get("title", ""), d["text"]) for d in docs]
        )

    def search(self, text: str, k: int) -> list[str]:
        match = " OR ".join(f'"{w}"' for w in re.findall(r"\w+", text))
        if not match:
            return []
        sql = "SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?"
        return [r[0] for r in self.db.execute(sql, (match, k))]


class MiniLmSystem:
    """Exact cosine over the document vectors kenning stored for this corpus (an open Index)."""

    name = "MiniLM exact cosine"

    def __init__(self, index):
        self.embedder = index.embedder()
        fingerprint = index.embedding_model()["fingerprint"]
        with index.store.reading():
            ids, self.matrix = index.store.chunk_vectors(fingerprint)
            heads = index.store.chunk_heads([int(c) for c in ids])
        self.keys = [heads[int(c)][0] for c in ids]

    def search(self, text: str, k: int) -> list[str]:
        sims = self.matrix @ self.embedder.embed([text], kind="query")[0].astype(np.float32)
        return [self.keys[i] for i in np.argsort(-sims, kind="stable")[:k]]


def rrf(rankings: list[list[str]], k: int = 60, depth: int = 100) -> list[str]:
    """Reciprocal-rank fusion: each id scores the sum of 1 / (k + its rank) over the rankings' first
    `depth`; ties by id."""
    fused: dict[str, float] = {}
    for ranked in rankings:
        for rank, doc in enumerate(ranked[:depth], 1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda d: (-fused[d], d))
