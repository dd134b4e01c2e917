"""Scale benchmark: kenning against tantivy on deterministic synthetic corpora of 10k to 1M chunks.

    pip install -e '.[bench]'
    python benchmarks/scale.py --chunks 10k,100k,1m [--queries 400] [--soak 10000] [--dense 10k] [--json]
    python benchmarks/scale.py --shape chat --chunks 1m     # the chat-sized tier (lib/chat_corpus.py)

The corpus (seeded, cached under --work) is drawn from the statistics of the dev sets in
../shared/data (cranfield, msmarco-5k, cacm): terms from their pooled frequency list, extended past
its end by the Zipf law fitted to it (a million chunks meet words no dev set has), and chunk lengths
from their pooled length distribution, a quarter of them section-sized (several draws summed). It is
written as BEIR-style files of 100 documents (`corpus/part-NNNNN.jsonl`), so "1% of the files
change" means rewriting 1% of the files. Queries take their length from the dev queries (two to six
words) and their words from one document: half drawn as its words fall (mostly common ones), half
from its rarest words, so every query has matches and mixes common with rare terms.

--shape chat writes message logs instead (lib/chat_corpus.py): messages of 3 to 40 words in
conversations, with a sender and a time each, and queries of one to three words, a quarter of them
with a 30-day date range (the filtered warm p50 is reported beside the others). kenning reads the logs
as it reads any message log; tantivy indexes each message as a document with its conversation,
sender and time stored, the time as a fast field its date range reads.

Each measurement runs in its own process (this script re-run as a worker), so peak RSS and the first
query in a new process are the real thing:
- index: wall seconds, peak RSS of the indexing process, of its largest child (kenning's analysis
  workers; tantivy indexes in threads) and of all of them together (sampled every 50 ms), disk size
  of the index directory;
- first query: opening the index and answering one query in a fresh process, p50/p95 (the import of
  the package is timed apart: it does not grow with the index), --first queries, one process each;
  before each, the index's files are read into the page cache (--first-cache warm: a new process
  on a machine in use) or dropped from it (cold: a machine just started), for both systems alike;
- warm: one process answers half the queries to warm up, then the other half, each timed, p50/p95
  (common terms recur, rare ones are new: a steady state, not a replay); the medians of --rounds
  such processes;
- soak: RSS of one process after 10%, 50% and 100% of --soak queries;
- re-index after 1% of the shards change (kenning; tantivy has no incremental file indexing), the
  median of --reindex-runs, each on a copy of the built index; and on each copy --reindex-steps
  such re-indexes in a row, other shards each time (the later ones merge the small segments the
  earlier ones wrote), each step's median and their mean;
- with --build-rounds N, each system builds each tier N times, the systems in turn: the median time;
- warm growth (two tiers or more): warm p50 on the largest tier over the next, the two tiers'
  warm processes alternating.
After both systems have built a tier, their first-query and warm processes alternate, and so do the
tiers' for the growth: a machine's speed drifts by tens of percent over minutes, and a ratio of
two measurements made minutes apart moved with it.
- dense (--dense N, kenning only, tiers up to N chunks): embedding seconds and chunks/s, time to the
  first hybrid query in a fresh process, ANN recall@10 against exact search over the same vectors.
Latencies are wall time of each system's own query call (its query parsing included), top 10.
tantivy stores title and text and indexes positions, as kenning does (it shows snippets and answers
phrase queries), and uses the en_stem analyzer; both return document ids.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import os
import re
import resource
import shutil
import statistics
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from lib import workers
from lib.chat_corpus import make_chat_queries, write_chat_corpus
from lib.datasets import DATA, TUNING_SETS
from lib.files import disk_mb, page_cache
from lib.memory import TreePeak, children_peak_rss_mb, peak_rss_mb, rss_mb
from lib.timing import percentile

SHARD = 100  # documents per corpus file: 1% of the files is 1% of the chunks from 10k up
SHAPE_ENV = "KENNING_SCALE_SHAPE"  # the workers' corpus shape: passages (default) or chat
SEED = 20261123
_WORD = re.compile(r"[a-z0-9]+")


# ---------------------------------------------------------------------------------------------------
# the corpus


def dev_statistics(data: Path = DATA) -> dict:
    """Term counts, chunk lengths (words) and query lengths pooled over the dev sets."""
    terms: Counter = Counter()
    lengths: list[int] = []
    query_lengths: list[int] = []
    for name in TUNING_SETS:
        with (data / name / "corpus.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                words = _WORD.findall(f"{doc.get('title', '')} {doc.get('text', '')}".lower())
                terms.update(words)
                lengths.append(len(words))
        with (data / name / "queries.jsonl").open(encoding="utf-8") as fh:
            query_lengths += [len(_WORD.findall(json.loads(line)["text"].lower())) for line in fh]
    return {"terms": terms, "lengths": lengths, "query_lengths": query_lengths}


def vocabulary(terms: Counter, size: int) -> tuple[list[str], np.ndarray]:
    """The dev sets' words by frequency, then synthetic words to `size`, with probabilities following
    the observed counts and, past them, the Zipf law fitted on ranks 10..10,000."""
    words = [w for w, _ in terms.most_common()]
    counts = np.array([terms[w] for w in words], dtype=np.float64)
    ranks = np.arange(10, min(10_000, len(counts)))
    slope, intercept = np.polyfit(np.log(ranks + 1), np.log(counts[ranks]), 1)
    extra = max(0, size - len(words))
    tail_ranks = np.arange(len(words), len(words) + extra) + 1
    tail = np.exp(intercept + slope * np.log(tail_ranks))
    syllables = ["ka", "lo", "mi", "ru", "te", "vo", "sa", "ne", "di", "pu", "ga", "zo", "be", "fi"]
    for i in range(extra):
        n, parts = i + 1, []
        while n:
            n, r = divmod(n, len(syllables))
            parts.append(syllables[r])
        words.append("".join(parts) + "x")
    weights = np.concatenate([counts, tail])
    return words, weights / weights.sum()


def chunk_lengths(rng: np.random.Generator, pool: list[int], n: int) -> np.ndarray:
    """Lengths from the dev sets' pooled distribution; a quarter section-sized (3-6 draws summed)."""
    pool_arr = np.array([x for x in pool if x > 0])
    lengths = rng.choice(pool_arr, size=n)
    sections = rng.random(n) < 0.25
    for k in np.flatnonzero(sections):
        lengths[k] = rng.choice(pool_arr, size=int(rng.integers(3, 7))).sum()
    return np.clip(lengths, 5, 2000)


def write_corpus(directory: Path, n: int, stats: dict, seed: int = SEED) -> None:
    """n documents in shards of SHARD, written once (a marker file says the corpus is complete)."""
    done = directory / "complete.json"
    recipe = {"chunks": n, "seed": seed, "shard": SHARD}
    if done.exists() and {k: json.loads(done.read_text()).get(k) for k in recipe} == recipe:
        return
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "corpus").mkdir(parents=True)
    rng = np.random.default_rng(seed)
    words, probs = vocabulary(stats["terms"], size=max(len(stats["terms"]), int(30 * math.sqrt(n * 150))))
    cumulative = np.cumsum(probs)
    lengths = chunk_lengths(rng, stats["lengths"], n)
    for shard in range(0, n, SHARD):
        (directory / "corpus" / f"part-{shard // SHARD:05d}.jsonl").write_text(
            _shard_text(rng, words, cumulative, lengths, shard, min(n, shard + SHARD)), encoding="utf-8"
        )
    done.write_text(json.dumps(recipe | {"vocabulary": len(words)}))


def _shard_text(rng, words, cumulative, lengths, start: int, stop: int, salt: str = "") -> str:
    total = int(lengths[start:stop].sum()) + 8 * (stop - start)
    drawn = np.searchsorted(cumulative, rng.random(total) * cumulative[-1])
    drawn = np.minimum(drawn, len(words) - 1)
    lines, at = [], 0
    for doc in range(start, stop):
        title_n = 3 + doc % 6
        body_n = int(lengths[doc])
        title = " ".join(words[i] for i in drawn[at : at + title_n])
        body = " ".join(words[i] for i in drawn[at + title_n : at + title_n + body_n])
        at += title_n + body_n
        lines.append(json.dumps({"_id": f"d{doc}{salt}", "title": title, "text": body}))
    return "\n".join(lines) + "\n"


def make_queries(directory: Path, stats: dict, count: int, seed: int = SEED) -> list[str]:
    """`count` queries, each from one random document (see the module docstring)."""
    rng = np.random.default_rng(seed + 1)
    shards = sorted((directory / "corpus").glob("part-*.jsonl"))
    df: Counter = Counter()
    sample: list[list[str]] = []
    for shard in rng.choice(len(shards), size=min(len(shards), 20), replace=False):
        for line in shards[shard].read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            words = _WORD.findall(f"{doc['title']} {doc['text']}")
            df.update(set(words))
            sample.append(words)
    lengths = np.clip(np.array(stats["query_lengths"]), 2, 6)
    queries = []
    while len(queries) < count:
        words = sample[int(rng.integers(len(sample)))]
        if len(set(words)) < 8:
            continue
        k = int(rng.choice(lengths))
        common = [words[int(i)] for i in rng.integers(len(words), size=k - k // 2)]
        rare = sorted(set(words), key=lambda w: (df[w], w))[: max(3, k)]
        chosen = [rare[int(i)] for i in rng.choice(len(rare), k // 2, replace=False)]
        picked = list(dict.fromkeys(common + chosen))
        queries.append(" ".join(picked))
    return queries


# ---------------------------------------------------------------------------------------------------
# the systems (run inside worker processes)


class Kenning:
    name = "kenning"

    @staticmethod
    def load() -> None:
        from kenning import Index  # noqa: F401

    def __init__(self, path: Path):
        from kenning import Index

        self.index = Index(path)

    def build(self, corpus: Path) -> int:
        self.index.add([corpus], progress=False)
        with self.index.store.reading():  # the live chunks (status() would also count every term)
            return len(self.index.store.read_snapshot().live)

    def search(self, query, mode: str = "lexical") -> list[str]:
        """`query`: its text, or {"q", "since", "before"} (chat tier: a date range, epoch seconds)."""
        if isinstance(query, dict):
            from kenning.query.filters import Filters

            filters = Filters(since=query["since"], before=query["before"])
            response = self.index.search(query["q"], limit=10, mode=mode, detail="heads", filters=filters)
        else:
            response = self.index.search(query, limit=10, mode=mode, detail="heads")
        return [h.doc_key for h in response.hits]


class Tantivy:
    name = "tantivy"

    @staticmethod
    def load() -> None:
        import tantivy  # noqa: F401

    def __init__(self, path: Path):
        import tantivy

        self.tantivy = tantivy
        self.path = path
        self.chat = os.environ.get(SHAPE_ENV) == "chat"
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        # stored like kenning's chunks (shown as titles and snippets), positions kept for phrases
        builder.add_text_field("title", stored=True, tokenizer_name="en_stem")
        builder.add_text_field("text", stored=True, tokenizer_name="en_stem")
        if self.chat:  # a message's sender and time, stored; the time a fast field for date ranges
            builder.add_text_field("sender", stored=True, tokenizer_name="raw")
            builder.add_integer_field("time", stored=True, indexed=True, fast=True)
        self.schema = builder.build()
        path.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(path))
        self.searcher = None

    def build(self, corpus: Path) -> int:
        writer = self.index.writer(heap_size=256_000_000, num_threads=2)
        n = 0
        for shard in sorted(corpus.glob("part-*.jsonl")):
            with shard.open(encoding="utf-8") as fh:
                for line in fh:
                    doc = json.loads(line)
                    if self.chat:
                        fields = {
                            "id": doc["id"],
                            "title": doc["conversation"],
                            "text": doc["text"],
                            "sender": doc["sender"],
                            "time": int(doc["timestamp"]),
                        }
                    else:
                        fields = {"id": doc["_id"], "title": doc["title"], "text": doc["text"]}
                    writer.add_document(self.tantivy.Document(**fields))
                    n += 1
        writer.commit()
        writer.wait_merging_threads()
        return n

    def search(self, query, mode: str = "lexical") -> list[str]:
        if self.searcher is None:
            self.index.reload()
            self.searcher = self.index.searcher()
        if isinstance(query, dict):
            Query, Occur = self.tantivy.Query, self.tantivy.Occur
            when = Query.range_query(
                self.schema, "time", self.tantivy.FieldType.Integer, query["since"], query["before"]
            )
            words = self.index.parse_query(query["q"], ["title", "text"])
            parsed = Query.boolean_query([(Occur.Must, words), (Occur.Must, when)])
        else:
            parsed = self.index.parse_query(query, ["title", "text"])
        hits = self.searcher.search(parsed, 10).hits
        return [self.searcher.doc(address)["id"][0] for _, address in hits]


SYSTEMS = {"kenning": Kenning, "tantivy": Tantivy}


def worker(args: list[str]) -> dict:
    """One measurement in this process; prints a JSON line."""
    job, system, index_dir = args[0], args[1], Path(args[2])
    if job == "index":
        sampler = TreePeak()
        started = time.perf_counter()
        n = SYSTEMS[system](index_dir).build(Path(args[3]))
        seconds = time.perf_counter() - started
        return {
            "seconds": seconds,
            "peak_mb": peak_rss_mb(),
            "chunks": n,
            # kenning's analysis workers: the largest one, and every process together
            "workers_mb": children_peak_rss_mb(),
            "tree_mb": sampler.stop(),
        }
    queries = json.loads(Path(args[3]).read_text())
    if job == "first":  # the import apart: it is the same for every index size
        mode = args[4] if len(args) > 4 else "lexical"
        started = time.perf_counter()
        SYSTEMS[system].load()
        imported = time.perf_counter()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        SYSTEMS[system](index_dir).search(queries[0], mode)
        return {
            "seconds": time.perf_counter() - imported,
            "import_s": imported - started,
            # pages first touched by opening and answering (each a minor fault)
            "minor_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
        }
    engine = SYSTEMS[system](index_dir)
    if job == "warm":  # warmed on the first half of the queries, timed on the other half
        half = len(queries) // 2
        for q in queries[:half]:
            engine.search(q)
        times = []
        for q in queries[half:]:
            started = time.perf_counter()
            engine.search(q)
            times.append(time.perf_counter() - started)
        return {"times": times, "rss_mb": rss_mb()}
    if job == "embed":
        started = time.perf_counter()
        report = engine.index.embed()
        return {"seconds": time.perf_counter() - started, "embedded": getattr(report, "embedded", None)}
    if job == "ann":
        return ann_recall(engine.index, queries)
    if job == "generations":  # beside a running `kenning embed`: one hybrid query per new generation
        return generation_queries(engine.index, queries, int(args[4]))
    if job == "soak":
        total, marks, out = int(args[4]), {}, {}
        marks = {max(1, total // 10): "10%", max(1, total // 2): "50%", total: "100%"}
        for i in range(1, total + 1):
            engine.search(queries[i % len(queries)])
            if i in marks:
                out[marks[i]] = rss_mb()
        return {"rss_mb": out}
    raise SystemExit(f"unknown job {job}")


def generation_queries(index, queries: list[str], count: int, timeout: float = 600.0) -> dict:
    """A searcher that stays open (a server) while an embed run commits beside it: the first hybrid
    query, then one query at each of the next `count` generations, in seconds (each pays for the new
    generation's views). Start `kenning embed --index DIR` first."""
    started = time.perf_counter()
    index.search(queries[0], limit=10, mode="hybrid", detail="heads")
    first, times = time.perf_counter() - started, []
    generation = index.store.generation()
    while len(times) < count and time.perf_counter() - started < timeout:
        time.sleep(0.2)
        if index.store.generation() == generation:
            continue
        generation = index.store.generation()
        began = time.perf_counter()
        index.search(queries[len(times) + 1], limit=10, mode="hybrid", detail="heads")
        times.append(time.perf_counter() - began)
    return {"first_s": first, "per_generation_s": times}


def ann_recall(index, queries: list[str], k: int = 10) -> dict:
    """Recall@k of kenning's dense search through its HNSW graph against exact search over the same
    vectors. The view is the product's: the writer's saved graph (memory-mapped), with any chunks
    committed since it was saved searched exactly beside it. With no saved graph (readers then search
    exactly), one is built here, for the measurement only."""
    from kenning.sidefiles import ann
    from kenning.signals.dense import DenseView

    embedder = index.embedder()
    fingerprint = embedder.fingerprint()
    with index.store.reading():
        ids = index.store.vector_chunk_ids(fingerprint)
        live = np.ones(int(ids.max()) + 1, dtype=bool)
        graph_file = ann.GraphFile(index.store.directory, fingerprint)
        view = DenseView(index.store, fingerprint, live, hnsw_threshold=0, graph_file=graph_file)
        exact = DenseView(index.store, fingerprint, live)  # every vector in one matrix, searched exactly
    started = time.perf_counter()
    source = f"file (+{len(view.newer_ids)} newer searched exactly)" if view.graph_source else "built here"
    if not view.graph_source:
        graph = ann.new_graph(exact.matrix.shape[1])
        graph.add(exact.ids, exact.matrix, threads=0)
        view._hnsw, view.method = graph, "hnsw"
    build = time.perf_counter() - started
    vectors = embedder.embed(queries, kind="query")
    found = []
    for v in vectors:
        approximate = set(view._search_hnsw(v, k, None)[0].tolist())
        found.append(len(approximate & set(exact.search(v, k)[0].tolist())) / k)
    recall = float(np.mean(found))
    return {"recall": recall, "graph_s": build, "graph": source, "vectors": len(ids)}


def run_worker(*args, env: dict[str, str] | None = None) -> dict:
    """One job of worker() in a fresh process: its JSON result."""
    return workers.run_worker(__file__, *args, env=env)


# ---------------------------------------------------------------------------------------------------
# the runs


def parse_size(text: str) -> int:
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * scale)


def build(system: str, tier: Path) -> dict:
    """Index the tier's corpus afresh: seconds, peak memory, disk."""
    index_dir = tier / f"index-{system}"
    shutil.rmtree(index_dir, ignore_errors=True)
    # the corpus from memory for every build: the machine pages out files untouched for a minute
    # (page_cache), so a tier's first build read its corpus from the disk and the others did not
    page_cache(tier / "corpus", "warm")
    built = run_worker("index", system, index_dir, tier / "corpus")
    return {
        "index_s": built["seconds"],
        "index_peak_mb": built["peak_mb"],
        "index_workers_peak_mb": built.get("workers_mb", 0.0),
        "index_tree_peak_mb": built.get("tree_mb", 0.0),
        "chunks": built["chunks"],
        "disk_mb": disk_mb(index_dir),
    }


def median_build(rounds: list[dict]) -> dict:
    """One system's builds of a tier: the median time, the largest memory, the last one's disk."""
    return rounds[-1] | {
        "index_s": statistics.median(r["index_s"] for r in rounds),
        "index_runs_s": [r["index_s"] for r in rounds],
        "index_peak_mb": max(r["index_peak_mb"] for r in rounds),
        "index_workers_peak_mb": max(r["index_workers_peak_mb"] for r in rounds),
        "index_tree_peak_mb": max(r["index_tree_peak_mb"] for r in rounds),
    }


def measure_queries(tier: Path, queries: list[str], args) -> dict[str, dict]:
    """First queries (fresh processes) and warm rounds, the systems alternating run by run, so that a
    slow stretch of the machine falls on both and their ratio holds (a machine's speed moves by
    tens of percent over minutes); then the soak. Warm p50 and p95 are the medians of the rounds'.
    Before each first-query process its index's files are put in the page cache state
    `args.first_cache` (page_cache), and before each warm process in the cache."""
    systems = args.systems
    firsts = {s: [] for s in systems}
    imports = {s: [] for s in systems}
    one = tier / "first-query.json"
    for i in range(args.first):
        one.write_text(json.dumps([queries[i % len(queries)]]))
        for system in systems:
            page_cache(tier / f"index-{system}", args.first_cache)
            first = run_worker("first", system, tier / f"index-{system}", one)
            firsts[system].append(first["seconds"])
            imports[system].append(first["import_s"])
    warm = {s: warm_rounds(system=s, tier=tier, rounds=args.rounds) for s in systems}
    out = {}
    for system in systems:
        out[system] = {
            "import_ms": 1000 * statistics.median(imports[system]),
            "first_p50_ms": 1000 * statistics.median(firsts[system]),
            "first_p95_ms": 1000 * percentile(firsts[system], 0.95),
            # what one command pays in a new process: the package's import, opening and answering
            "import_first_p50_ms": 1000
            * statistics.median(map(operator.add, imports[system], firsts[system])),
        } | warm[system]
    if args.soak:
        for system in systems:
            soak = run_worker("soak", system, tier / f"index-{system}", tier / "queries.json", args.soak)
            out[system]["soak_rss_mb"] = soak["rss_mb"]
    return out


def warm_rounds(system: str, tier: Path, rounds: int) -> dict:
    """One system's warm p50 / p95 on one tier: the medians over `rounds` warm processes; and the p50
    of the queries with a date range, when the tier has some (chat)."""
    queries = json.loads((tier / "queries.json").read_text())
    filtered = [isinstance(q, dict) for q in queries[len(queries) // 2 :]]  # the timed half
    p50s, p95s, filtered_p50s = [], [], []
    for _ in range(rounds):
        page_cache(tier / f"index-{system}", "warm")
        times = run_worker("warm", system, tier / f"index-{system}", tier / "queries.json")["times"]
        p50s.append(1000 * statistics.median(times))
        p95s.append(1000 * percentile(times, 0.95))
        if any(filtered):
            ranged = [t for t, f in zip(times, filtered, strict=True) if f]
            filtered_p50s.append(1000 * statistics.median(ranged))
    out = {"warm_p50_ms": statistics.median(p50s), "warm_p95_ms": statistics.median(p95s)}
    if filtered_p50s:
        out["warm_filtered_p50_ms"] = statistics.median(filtered_p50s)
    return out


def warm_growth(small: Path, large: Path, systems: list[str], rounds: int) -> dict:
    """Warm p50 on the largest tier over the next one, each system's warm processes alternating
    between the two tiers, so that the two are measured in the same stretch of the machine's speed."""
    p50s = {(s, t): [] for s in systems for t in (small, large)}
    for _ in range(rounds):
        for system in systems:
            for tier in (small, large):
                times = run_worker("warm", system, tier / f"index-{system}", tier / "queries.json")["times"]
                p50s[(system, tier)].append(1000 * statistics.median(times))
    return {
        system: {
            "small_p50_ms": statistics.median(p50s[(system, small)]),
            "large_p50_ms": statistics.median(p50s[(system, large)]),
            "growth": statistics.median(p50s[(system, large)]) / statistics.median(p50s[(system, small)]),
        }
        for system in systems
    }


def one_percent_shards(tier: Path, steps: int = 1) -> list[list[Path]]:
    """The shards each of `steps` 1% re-indexes rewrites: 1% of the tier's shards, each step's lying
    apart from every other step's."""
    shards = sorted((tier / "corpus").glob("part-*.jsonl"))
    per_step = max(1, len(shards) // 100)
    stride = max(1, 100 // steps)
    return [shards[(k * stride) % 100 :: 100][:per_step] or shards[:1] for k in range(steps)]


def rewrite_shards(paths: list[Path], saved: dict[Path, str], rng) -> None:
    """Give the shards new text, the same documents (ids) with their words shuffled: `saved` holds
    each shard's original text."""
    for path in paths:
        docs = [json.loads(line) for line in saved[path].splitlines()]
        for doc in docs:
            words = doc["text"].split()
            rng.shuffle(words)
            doc["text"] = " ".join(words)
        path.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")


@contextmanager
def kept_shards(paths: list[Path]):
    """Yields (each shard's text, restore): restore() puts the shards back as they were, bytes and
    modification times, and runs again when the block ends. Restoring the bytes alone would give the
    shards a new time, and the next re-index would read them again."""
    saved = {p: p.read_text(encoding="utf-8") for p in paths}
    times = {p: (p.stat().st_atime_ns, p.stat().st_mtime_ns) for p in saved}

    def restore() -> None:
        for path, text in saved.items():
            path.write_text(text, encoding="utf-8")
            os.utime(path, ns=times[path])

    try:
        yield saved, restore
    finally:
        restore()


def reindex_one_percent(
    tier: Path, seconds_full: float, runs: int = 1, steps: int = 1, env: dict[str, str] | None = None
) -> dict:
    """Rewrite 1% of the shards (new words, same ids) and re-index kenning incrementally, `runs` times,
    each on a fresh copy of the built index (flushed to disk first); the median counts. With `steps`
    > 1, each copy then goes on: another 1% (other shards) is rewritten and re-indexed, step after
    step, as a folder that keeps changing is. The later steps merge the small segments the earlier ones
    wrote, a cost the first re-index never shows. The corpus is restored afterwards (kept_shards), so
    later runs see the original and each step touches only the 1% it rewrote. `env` is the re-indexing
    processes' environment (lib.workers.version_env runs another checkout)."""
    step_shards = one_percent_shards(tier, steps)
    changed = step_shards[0]
    from kenning.sidefiles.ann import seal_copy

    built, copy = tier / "index-kenning", tier / "index-kenning-reindexed"
    seconds, peaks, step_seconds = [], [], [[] for _ in range(steps)]
    try:
        with kept_shards([p for group in step_shards for p in group]) as (saved, restore):
            for _ in range(runs):
                restore()
                rng = np.random.default_rng(SEED + 2)
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(built, copy)
                seal_copy(built, copy)  # the user's own copy: its graph stays trusted
                os.sync()
                for k, group in enumerate(step_shards):
                    rewrite_shards(group, saved, rng)
                    again = run_worker("index", "kenning", copy, tier / "corpus", env=env)
                    step_seconds[k].append(again["seconds"])
                    peaks.append(again["peak_mb"])
                seconds.append(step_seconds[0][-1])
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    out = {
        "reindex_1pct_s": statistics.median(seconds),
        "reindex_1pct_runs_s": seconds,
        "reindex_1pct_share": statistics.median(seconds) / seconds_full,
        "reindex_1pct_peak_mb": max(peaks),
        "shards_changed": len(changed),
    }
    if steps > 1:  # each step's median over the runs, and the mean of those: the cost in the long run
        medians = [statistics.median(s) for s in step_seconds]
        out |= {
            "reindex_steps_s": medians,
            "reindex_steps_mean_share": statistics.mean(medians) / seconds_full,
        }
    return out


def tier_dir(args, n: int) -> Path:
    return args.work / (f"chat-{n}" if args.shape == "chat" else f"chunks-{n}")


def run_tier(n: int, stats: dict, args) -> dict:
    tier = tier_dir(args, n)
    started = time.perf_counter()
    if args.shape == "chat":
        words, probs = vocabulary(stats["terms"], size=max(len(stats["terms"]), int(30 * math.sqrt(n * 20))))
        write_chat_corpus(tier, n, words, probs, SEED)
        queries = make_chat_queries(tier, args.queries, SEED)
    else:
        write_corpus(tier, n, stats)
        queries = make_queries(tier, stats, args.queries)
    (tier / "queries.json").write_text(json.dumps(queries))
    print(f"[{n:,} {args.shape}] corpus ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    result = {"shape": args.shape, "chunks_requested": n, "queries": len(queries)}
    result["first_cache"] = args.first_cache
    builds = {system: [] for system in args.systems}
    for _ in range(args.build_rounds):  # the systems in turn, round after round
        for system in args.systems:
            builds[system].append(build(system, tier))
    for system, rounds in builds.items():
        result[system] = median_build(rounds)
    for system, measured in measure_queries(tier, queries, args).items():
        result[system] |= measured
        print(f"[{n:,} {args.shape}] {system}: {json.dumps(result[system])}", file=sys.stderr)
    if "kenning" in args.systems and args.reindex:
        result["kenning"] |= reindex_one_percent(
            tier, result["kenning"]["index_s"], args.reindex_runs, args.reindex_steps
        )
    if "kenning" in args.systems and args.dense and n <= args.dense:
        result["kenning"] |= measure_dense(tier, queries, result["kenning"]["chunks"])
    return result


def measure_dense(tier: Path, queries: list[str], chunks: int) -> dict:
    """Embedding time, the first hybrid query in a fresh process, and ANN recall@10."""
    index_dir = tier / "index-kenning"
    embedded = run_worker("embed", "kenning", index_dir, tier / "queries.json")
    one = tier / "first-query.json"
    firsts = []
    for q in queries[:3]:
        one.write_text(json.dumps([q]))
        firsts.append(run_worker("first", "kenning", index_dir, one, "hybrid")["seconds"])
    ann = run_worker("ann", "kenning", index_dir, tier / "queries.json")
    return {
        "embed_s": embedded["seconds"],
        "embed_chunks_per_s": chunks / embedded["seconds"],
        "first_hybrid_p50_ms": 1000 * statistics.median(firsts),
        "ann_recall_at_10": ann["recall"],
        "ann_graph_s": ann["graph_s"],
        "ann_graph": ann["graph"],
    }


ROWS = [
    ("index s", "index_s", "{:.1f}"),
    ("import ms", "import_ms", "{:.0f}"),
    ("index peak RSS MB", "index_peak_mb", "{:.0f}"),
    ("  worker peak RSS MB", "index_workers_peak_mb", "{:.0f}"),  # the largest child process
    ("  all processes MB", "index_tree_peak_mb", "{:.0f}"),  # sampled every 50 ms, summed
    ("disk MB", "disk_mb", "{:.1f}"),
    ("first query p50 ms", "first_p50_ms", "{:.1f}"),  # open + one query in a new process
    ("first query p95 ms", "first_p95_ms", "{:.1f}"),
    ("import + first p50 ms", "import_first_p50_ms", "{:.1f}"),  # a command, end to end
    ("warm p50 ms", "warm_p50_ms", "{:.2f}"),
    ("warm p95 ms", "warm_p95_ms", "{:.2f}"),
    ("warm filtered p50 ms", "warm_filtered_p50_ms", "{:.2f}"),  # chat: queries with a date range
]


def table(results: list[dict], systems: list[str]) -> str:
    lines = []
    for res in results:
        cache = f", first queries with the index files {res['first_cache']}" if "first_cache" in res else ""
        unit = "messages" if res.get("shape") == "chat" else "chunks"
        lines.append(f"{res['chunks_requested']:,} {unit}, {res['queries']} queries{cache}")
        head = f"  {'':22s}" + "".join(f"{s:>12s}" for s in systems)
        if "tantivy" in systems and "kenning" in systems:
            head += f"{'ratio':>10s}"
        lines.append(head)
        for label, key, fmt in ROWS:
            if any(key not in res[s] for s in systems):
                continue  # a row this tier's shape does not have
            row = f"  {label:22s}" + "".join(f"{fmt.format(res[s][key]):>12s}" for s in systems)
            if "tantivy" in systems and "kenning" in systems and res["tantivy"][key]:
                row += f"{res['kenning'][key] / res['tantivy'][key]:>9.2f}x"
            lines.append(row)
        if len(res[systems[0]].get("index_runs_s", [])) > 1:
            runs = "; ".join(f"{s} " + ", ".join(f"{t:.1f}" for t in res[s]["index_runs_s"]) for s in systems)
            lines.append(f"  builds in turn (index s is their median): {runs}")
        for s in systems:
            if "soak_rss_mb" in res[s]:
                soak = "  ".join(f"{k} {v:.0f}" for k, v in res[s]["soak_rss_mb"].items())
                lines.append(f"  {s} query-process RSS MB over the soak: {soak}")
        k = res.get("kenning", {})
        if "reindex_1pct_s" in k:
            runs = ", ".join(f"{t:.1f}" for t in k["reindex_1pct_runs_s"])
            lines.append(
                f"  kenning re-index after {k['shards_changed']} shard(s) (1%) changed: "
                f"{k['reindex_1pct_s']:.1f} s (median of {runs}) = {100 * k['reindex_1pct_share']:.1f}% of "
                f"the full build, peak RSS {k['reindex_1pct_peak_mb']:.0f} MB"
            )
        if "reindex_steps_s" in k:
            each = ", ".join(f"{t:.1f}" for t in k["reindex_steps_s"])
            lines.append(
                f"  kenning 1% re-indexes one after another (other shards each, medians): {each} s; "
                f"mean {100 * k['reindex_steps_mean_share']:.1f}% of the full build"
            )
        if "ann_recall_at_10" in k:
            lines.append(
                f"  kenning dense: embedded {k['embed_chunks_per_s']:.0f} chunks/s; first hybrid query in a "
                f"new process {k['first_hybrid_p50_ms']:.0f} ms (p50 of 3); HNSW recall@10 against exact "
                f"{k['ann_recall_at_10']:.3f} (graph {k['ann_graph']} in {k['ann_graph_s']:.2f} s)"
            )
    return "\n".join(lines)


def growth_line(growth: dict, systems: list[str]) -> str:
    parts = []
    for s in systems:
        g = growth[s]
        parts.append(f"{s} {g['small_p50_ms']:.2f} -> {g['large_p50_ms']:.2f} ms = {g['growth']:.2f}x")
    return (
        f"warm p50 from {growth['from']:,} to {growth['to']:,} chunks ({growth['rounds']} rounds, the tiers "
        f"alternating): " + "; ".join(parts)
    )


def main() -> None:
    if workers.answer_worker(worker):
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", default="10k", help="comma-separated tiers, e.g. 10k,100k,1m")
    ap.add_argument(
        "--shape",
        choices=["passages", "chat"],
        default="passages",
        help="passage-sized documents (default) or chat messages of 3-40 words in conversations",
    )
    ap.add_argument("--systems", default="kenning,tantivy")
    ap.add_argument("--queries", type=int, default=400, help="distinct queries per tier (half warm up)")
    ap.add_argument("--first", type=int, default=10, help="fresh processes for the first-query latency")
    ap.add_argument(
        "--first-cache",
        choices=["warm", "cold", "as-is"],
        default="warm",
        help="each index's files before its first-query process: all in the page cache (warm), none "
        "(cold: a machine just started), or as the runs before left them (as-is)",
    )
    ap.add_argument("--soak", type=int, default=10_000, help="queries in the soak process (0: skip)")
    ap.add_argument("--rounds", type=int, default=3, help="warm processes per system and tier (medians)")
    ap.add_argument(
        "--build-rounds", type=int, default=1, help="builds per system and tier, the systems in turn (median)"
    )
    ap.add_argument("--no-reindex", dest="reindex", action="store_false")
    ap.add_argument("--reindex-runs", type=int, default=3, help="1%% re-indexes, each on a copy (median)")
    ap.add_argument(
        "--reindex-steps",
        type=int,
        default=3,
        help="1%% re-indexes in a row on each copy",
    )
    ap.add_argument(
        "--dense", type=parse_size, default=0, help="embed (kenning) tiers up to this many chunks, e.g. 10k"
    )
    ap.add_argument(
        "--hnsw-threshold", type=parse_size, help="live vectors from which kenning uses its HNSW graph"
    )
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kenning-scale")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    os.environ[SHAPE_ENV] = args.shape  # the workers inherit it
    if args.hnsw_threshold is not None:  # the workers inherit it
        os.environ["KENNING_HNSW_THRESHOLD"] = str(args.hnsw_threshold)
    stats = dev_statistics(args.data)
    sizes = sorted(parse_size(t) for t in args.chunks.split(","))
    results = [run_tier(n, stats, args) for n in sizes]
    growth = None
    if len(sizes) > 1 and args.rounds:
        small, large = (tier_dir(args, n) for n in sizes[-2:])
        growth = {"from": sizes[-2], "to": sizes[-1], "rounds": args.rounds}
        growth |= warm_growth(small, large, args.systems, args.rounds)
    machine = {"cores": os.cpu_count(), "python": sys.version.split()[0]}
    if args.json:
        print(json.dumps({"machine": machine, "tiers": results, "warm_growth": growth}, indent=2))
    else:
        print(f"machine: {machine['cores']} cores, Python {machine['python']}")
        print(table(results, args.systems))
        if growth:
            print(growth_line(growth, args.systems))


if __name__ == "__main__":
    main()
