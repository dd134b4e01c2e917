"""Second-stage rerankers: re-score an over-fetched pool of fused candidates with a slower model.

A reranker sees the query and each passage together, so it can judge their interaction, which the
fused first stage cannot. It is too slow for the whole corpus, so the search fetches a pool of
candidates and kenning.search.rerank reorders it by the reranker's scores.

Specs understood by `make_reranker`:

    none / None                      no reranking
    cross-encoder:/local/dir         a local cross-encoder: model.onnx (or onnx/model.onnx) and
                                     tokenizer.json (HF tokenizers), optional config.json; or, when
                                     sentence-transformers is installed and there is no ONNX file, a
                                     sentence-transformers CrossEncoder directory
    openai:MODEL@BASE_URL            an OpenAI-compatible /chat/completions endpoint rates passages
    ollama:MODEL@BASE_URL            an Ollama /api/chat endpoint rates passages

Nothing here downloads a model. No cross-encoder weights are bundled with kenning, and no claim is
made about any reranker's quality; point the spec at a model directory you have.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from kenning.models.endpoints import user_endpoint
from kenning.models.specs import split_model_url

DEFAULT_MAX_LENGTH = 512
DEFAULT_BATCH = 16
DEFAULT_TIMEOUT = 60.0
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "ollama": "http://127.0.0.1:11434"}
PASSAGE_CHARS = 4000  # a passage longer than this is cut before it goes into an LLM prompt


class RerankError(Exception):
    """A reranker could not be built or could not score: names the path or URL involved."""


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One score per text, higher is more relevant."""
        ...


def parse_rerank_spec(spec: str | None) -> tuple[str, str] | None:
    """(kind, the rest) of a reranker spec, None for no reranker; RerankError when it cannot be one.
    Reads nothing and connects nowhere, so a request can be checked before it runs."""
    if spec is None or spec.strip().lower() in ("", "none", "off"):
        return None
    kind, sep, rest = spec.strip().partition(":")
    kind = kind.lower()
    if not sep or kind not in ("cross-encoder", "openai", "ollama"):
        raise RerankError(
            f"unknown reranker spec {spec!r}: use none, cross-encoder:/local/dir, "
            "openai:MODEL@BASE_URL or ollama:MODEL@BASE_URL"
        )
    if kind == "cross-encoder" and not rest.strip():
        raise RerankError("cross-encoder spec needs a directory: cross-encoder:/local/dir")
    if kind != "cross-encoder":
        _split_model_url(kind, rest.strip())
    return kind, rest.strip()


def make_reranker(spec: str | None, *, timeout: float = DEFAULT_TIMEOUT) -> Reranker | None:
    """Build a reranker from a spec string (see the module docstring); None or "none" gives None."""
    parsed = parse_rerank_spec(spec)
    if parsed is None:
        return None
    kind, rest = parsed
    if kind == "cross-encoder":
        return load_cross_encoder(Path(rest).expanduser())
    model, base_url = _split_model_url(kind, rest)
    return ChatReranker(kind, model, base_url, timeout=timeout)


def _split_model_url(kind: str, rest: str) -> tuple[str, str]:
    try:
        model, url = split_model_url(rest, kind)
    except ValueError as exc:
        raise RerankError(f"{kind} spec {rest!r}: {exc}") from exc
    return model, (url or user_endpoint(kind) or DEFAULT_BASE_URLS[kind]).rstrip("/")


# ---------------------------------------------------------------------------------- cross-encoders
def load_cross_encoder(directory: Path, max_length: int | None = None) -> Reranker:
    """An ONNX cross-encoder when the directory has one, else a sentence-transformers CrossEncoder
    when that package is installed; otherwise a RerankError that says what is missing."""
    if not directory.is_dir():
        raise RerankError(f"cross-encoder directory {directory} does not exist or is not a directory")
    onnx_files = [directory / "model.onnx", directory / "onnx" / "model.onnx"]
    model_path = next((p for p in onnx_files if p.is_file()), None)
    if model_path is not None:
        return OnnxCrossEncoder(directory, model_path, max_length=max_length)
    weights = [directory / n for n in ("model.safetensors", "pytorch_model.bin")]
    if (directory / "config.json").is_file() and any(p.is_file() for p in weights):
        try:
            import sentence_transformers  # noqa: F401
        except ImportError:
            raise RerankError(
                f"cross-encoder directory {directory} holds PyTorch weights but no model.onnx, and "
                "sentence-transformers is not installed: export the model to ONNX or pip install "
                "sentence-transformers"
            ) from None
        return SentenceTransformersCrossEncoder(directory, max_length=max_length)
    raise RerankError(
        f"cross-encoder directory {directory} has no model: looked for "
        + " and ".join(str(p) for p in onnx_files)
    )


def _max_length(directory: Path, explicit: int | None) -> int:
    if explicit is not None:
        return explicit
    candidates = []
    for name, key in (
        ("config.json", "max_position_embeddings"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        path = directory / name
        if path.is_file():
            try:
                value = json.loads(path.read_text(encoding="utf-8")).get(key)
            except (OSError, ValueError, AttributeError) as e:
                raise RerankError(f"cannot read {path}: {e}") from None
            if isinstance(value, int) and 0 < value < 100_000:
                candidates.append(value)
    return min([*candidates, DEFAULT_MAX_LENGTH])


def _pick_logit(out: np.ndarray, source: str) -> np.ndarray:
    """(n,) or (n, 1): the value; (n, 2): the positive-class logit."""
    out = np.asarray(out, dtype=np.float64)
    if out.ndim == 1:
        return out
    if out.ndim == 2 and out.shape[1] == 1:
        return out[:, 0]
    if out.ndim == 2 and out.shape[1] == 2:
        return out[:, 1]
    raise RerankError(f"{source}: expected 1 or 2 logits per pair, got output of shape {out.shape}")


class OnnxCrossEncoder:
    """Scores (query, passage) pairs with an ONNX sequence-classification model run by onnxruntime.

    Each pair is encoded as a sentence pair by the directory's tokenizer.json ([CLS] q [SEP] p [SEP]
    with token_type_ids 0 then 1 for BERT-style vocabularies), truncated longest-first to the model's
    maximum length (config.json max_position_embeddings, tokenizer_config.json model_max_length, at
    most 512), padded per batch.
    """

    def __init__(
        self, directory: Path, model_path: Path, max_length: int | None = None, batch_size=DEFAULT_BATCH
    ):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer, processors
        except ImportError as e:
            raise RerankError(f"the ONNX cross-encoder needs onnxruntime and tokenizers: {e}") from None
        tok_path = directory / "tokenizer.json"
        if not tok_path.is_file():
            raise RerankError(f"cross-encoder directory {directory} has no tokenizer.json ({tok_path})")
        self.name = f"cross-encoder:{directory}"
        self.directory = directory
        self.batch_size = batch_size
        self.max_length = _max_length(directory, max_length)
        try:
            tok = Tokenizer.from_file(str(tok_path))
        except Exception as e:  # tokenizers raises plain Exception
            raise RerankError(f"cannot load tokenizer {tok_path}: {e}") from None
        if tok.post_processor is None:  # add the pair template the model was trained with, if known
            vocab = tok.get_vocab()
            if "[CLS]" in vocab and "[SEP]" in vocab:
                tok.post_processor = processors.TemplateProcessing(
                    single="[CLS] $A [SEP]",
                    pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                    special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
                )
            elif "<s>" in vocab and "</s>" in vocab:
                tok.post_processor = processors.RobertaProcessing(
                    ("</s>", vocab["</s>"]), ("<s>", vocab["<s>"])
                )
        tok.no_padding()
        tok.enable_truncation(self.max_length, strategy="longest_first")
        self.tokenizer = tok
        vocab = tok.get_vocab()
        self.pad_id = next((vocab[t] for t in ("[PAD]", "<pad>") if t in vocab), 0)
        try:
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            self.session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own exception types
            raise RerankError(f"cannot load ONNX model {model_path}: {e}") from None
        self.model_path = model_path
        self.inputs = {}
        for inp in self.session.get_inputs():
            if inp.name not in ("input_ids", "attention_mask", "token_type_ids"):
                raise RerankError(
                    f"ONNX model {model_path} wants an input named {inp.name!r}; kenning feeds "
                    "input_ids, attention_mask and token_type_ids"
                )
            self.inputs[inp.name] = np.int32 if inp.type == "tensor(int32)" else np.int64
        outputs = [o.name for o in self.session.get_outputs()]
        self.output = "logits" if "logits" in outputs else outputs[0]

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            encs = self.tokenizer.encode_batch([(query, t) for t in batch])
            width = max(len(e.ids) for e in encs)
            ids = np.full((len(encs), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(encs), width), dtype=np.int64)
            types = np.zeros((len(encs), width), dtype=np.int64)
            for row, e in enumerate(encs):
                n = len(e.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
            arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            feeds = {name: arrays[name].astype(dtype) for name, dtype in self.inputs.items()}
            try:
                (out,) = self.session.run([self.output], feeds)
            except Exception as e:
                raise RerankError(f"ONNX model {self.model_path} failed: {e}") from None
            scores.extend(float(x) for x in _pick_logit(out, str(self.model_path)))
        return scores


class SentenceTransformersCrossEncoder:
    """A sentence-transformers CrossEncoder loaded from a local directory (optional; untested here,
    because sentence-transformers is not a kenning dependency)."""

    def __init__(self, directory: Path, max_length: int | None = None, batch_size=DEFAULT_BATCH):
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{directory}"
        self.batch_size = batch_size
        kwargs = {"max_length": _max_length(directory, max_length), "device": "cpu"}
        try:
            try:
                self.model = CrossEncoder(str(directory), local_files_only=True, **kwargs)
            except TypeError:  # older sentence-transformers without local_files_only
                self.model = CrossEncoder(str(directory), **kwargs)
        except Exception as e:
            raise RerankError(f"cannot load sentence-transformers cross-encoder {directory}: {e}") from None

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        out = self.model.predict(
            [(query, t) for t in texts],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [float(x) for x in _pick_logit(out, self.name)]


# --------------------------------------------------------------------------------------- LLM judges
SYSTEM_PROMPT = (
    "You judge search results. Rate how relevant the passage is to the query, from 0 (unrelated) "
    'to 10 (directly answers it). Answer with JSON only, exactly in this form: {"score": N}'
)

_THINK_RE = re.compile(r"<think>.*?</think>", re.S | re.I)
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


def parse_rating(answer: str) -> tuple[float | None, str | None]:
    """Read a 0-10 rating from a model's answer: JSON {"score": N} (or "relevance"/"rating"), a bare
    JSON number, or else the first number in the text. Returns (rating or None, note or None);
    a rating outside 0-10 is clamped and noted."""
    text = _THINK_RE.sub("", answer or "").strip()
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text).strip()
    value = None
    candidates = [text] + re.findall(r"\{[^{}]*\}", text)
    for chunk in candidates:
        try:
            data = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(data, dict):
            data = {str(k).lower(): v for k, v in data.items()}
            data = next((data[k] for k in ("score", "relevance", "rating") if k in data), None)
        if isinstance(data, str):
            data = data.strip()
            if re.fullmatch(r"-?\d+(?:\.\d+)?", data):
                data = float(data)
        if isinstance(data, int | float) and not isinstance(data, bool):
            value = float(data)
            break
    if value is None:
        m = _NUMBER_RE.search(text)
        if m is not None:
            value = float(m.group())
    short = answer if len(answer) <= 80 else answer[:77] + "..."
    if value is None or not math.isfinite(value):
        return None, f"unparseable answer {short!r}, scored 0"
    if not 0.0 <= value <= 10.0:
        clamped = min(10.0, max(0.0, value))
        return clamped, f"rating {value:g} outside 0-10, clamped to {clamped:g}"
    return value, None


class ChatReranker:
    """Asks a chat model to rate each passage 0-10, one request per passage (up to `workers` at once).

    `kind` "openai" posts to BASE_URL/chat/completions with Authorization: Bearer
    $KENNING_RERANK_API_KEY (else $OPENAI_API_KEY); "ollama" posts to BASE_URL/api/chat, with the
    key only from $KENNING_RERANK_API_KEY. `score_with_notes` also returns, by passage index, a note
    on each answer that was unparseable (scored 0) or clamped; `score` keeps them in `last_notes`.
    Transport failures (connection, HTTP status, non-JSON or malformed bodies) raise RerankError
    naming the URL; the API key never appears in a message.
    """

    def __init__(
        self, kind: str, model: str, base_url: str, timeout: float = DEFAULT_TIMEOUT, workers: int = 4
    ):
        if kind not in ("openai", "ollama"):
            raise RerankError(f"unknown chat reranker kind {kind!r}")
        self.kind, self.model, self.base_url = kind, model, base_url.rstrip("/")
        self.url = self.base_url + ("/chat/completions" if kind == "openai" else "/api/chat")
        self.name = f"{kind}:{model}"
        self.timeout, self.workers = timeout, max(1, workers)
        if kind == "openai":
            self.api_key = os.environ.get("KENNING_RERANK_API_KEY") or os.environ.get("OPENAI_API_KEY")
        else:
            self.api_key = os.environ.get("KENNING_RERANK_API_KEY")
        self.last_notes: dict[int, str] = {}

    def _payload(self, query: str, text: str) -> dict:
        passage = text if len(text) <= PASSAGE_CHARS else text[:PASSAGE_CHARS] + " ..."
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Query: {query}\n\nPassage:\n{passage}\n\nJSON answer:"},
        ]
        if self.kind == "openai":
            return {"model": self.model, "messages": messages, "temperature": 0}
        return {
            "model": self.model,
            "messages": messages,
            "stream": False,
            "format": "json",
            "options": {"temperature": 0},
        }

    def _post(self, payload: dict) -> str:
        where = f"{self.name} reranker at {self.url}"
        from kenning.models.chat import message_content, post_chat  # urllib loads only for a chat model

        data = post_chat(self.url, payload, self.api_key, self.timeout, where, RerankError)
        return message_content(data, self.kind, where, RerankError)

    def score_with_notes(self, query: str, texts: list[str]) -> tuple[list[float], dict[int, str]]:
        """Scores, and notes by passage index for answers that were unparseable (scored 0) or clamped."""
        notes: dict[int, str] = {}
        if not texts:
            return [], notes
        from concurrent.futures import ThreadPoolExecutor  # only for a chat model (others skip its import)

        with ThreadPoolExecutor(max_workers=min(self.workers, len(texts))) as pool:
            answers = list(pool.map(lambda t: self._post(self._payload(query, t)), texts))
        scores = []
        for i, answer in enumerate(answers):
            value, note = parse_rating(answer)
            if note:
                notes[i] = note
            scores.append(0.0 if value is None else value)
        return scores, notes

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores, self.last_notes = self.score_with_notes(query, texts)
        return scores
