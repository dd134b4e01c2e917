"""The lexical read engine: BM25 (bm25), the postings reader and scorer of one generation (view),
and block-max pruning (pruning). kenning.signals.lexical adapts it to a fusion channel."""
