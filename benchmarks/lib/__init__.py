"""What the maintained benchmarks share, one concern a module:

- datasets: where the dev sets live, reading a BEIR corpus, mean nDCG@10, opening an embedded eval index;
- peers: the systems kenning is compared with on a dev set (bm25s, tantivy, SQLite FTS5, exact MiniLM
  cosine, and reciprocal-rank fusion of two rankings);
- timing: percentiles of measured latencies;
- memory: resident set size of this process, its peak, and of a process tree sampled while it runs;
- files: disk size of a folder, and putting its files in or out of the page cache;
- workers: one measurement a fresh process (a script re-run with --worker, answering a JSON line),
  and kenning versions (checkouts' src folders) run side by side;
- postgres: a PostgreSQL server to measure on (one given, or a private one started for the run);
- tables: aligned text tables for the terminal, and Markdown tables for docs/benchmarks.md.

A script imports them as `from lib import ...`: Python puts a script's own folder (benchmarks/) first
on the path, and the tests that import a benchmark put it there too.
"""
