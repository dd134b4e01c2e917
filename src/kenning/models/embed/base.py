"""What every embedder shares: the protocol, the error type, and small helpers."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

KINDS = ("document", "query")


class EmbedderError(Exception):
    """An embedder that cannot be built or cannot embed; the message names the backend and the URL or path."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    backend: "minilm", "sentence-transformers", "openai", "ollama" or "none".
    model: the model name or path as the user gave it.
    dim: the vector dimension; 0 while an HTTP backend has not answered yet.
    """

    backend: str
    model: str
    dim: int

    def fingerprint(self) -> str:
        """Stable id of what makes the vectors: equal fingerprints mean interchangeable vectors."""
        ...

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        """float32 array of shape (len(texts), dim), rows L2-normalised, in the order of `texts`."""
        ...

    def describe(self) -> dict:
        """backend, model, dim and fingerprint, plus what went into the fingerprint."""
        ...


def identity(embedder: Embedder) -> dict:
    """What an embedder's describe() starts with: backend, model, dim and fingerprint."""
    return {
        "backend": embedder.backend,
        "model": embedder.model,
        "dim": embedder.dim,
        "fingerprint": embedder.fingerprint(),
    }


def window(text: str, max_chars: int) -> str:
    """The part of a text a model with this window can read: whitespace runs collapsed (tokenizers
    split on whitespace anyway), then at most `max_chars` characters. A 50 MB chunk is never handed to
    a tokenizer whole."""
    if len(text) <= max_chars:
        return text
    return " ".join(text[: 4 * max_chars].split())[:max_chars]


def check_inputs(backend: str, texts: list[str], kind: str, max_chars: int | None = None) -> list[str]:
    """Validate the arguments of `embed` the same way for every backend, and cut each text to the
    model's window (`max_chars`; see `window`)."""
    if kind not in KINDS:
        raise EmbedderError(f"{backend} embedder: kind must be 'document' or 'query', not {kind!r}")
    if isinstance(texts, str):
        raise EmbedderError(f"{backend} embedder: texts must be a list of strings, not one string")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise EmbedderError(f"{backend} embedder: texts[{i}] is {type(text).__name__}, not str")
    return [window(t, max_chars) for t in texts] if max_chars else texts


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (an all-zero row stays zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def make_fingerprint(backend: str, parts: dict) -> str:
    """`backend:` + 16 hex digits of sha256 over the canonical JSON of `parts` (short: it keys vectors)."""
    canonical = json.dumps({"backend": backend, **parts}, sort_keys=True, separators=(",", ":"))
    return f"{backend}:{hashlib.sha256(canonical.encode()).hexdigest()[:16]}"


_FILE_HASHES: dict[tuple[str, int, int], str] = {}
_FILE_HASH_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, cached per process by (path, size, mtime)."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    with _FILE_HASH_LOCK:
        cached = _FILE_HASHES.get(key)
    if cached is not None:
        return cached
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    with _FILE_HASH_LOCK:
        _FILE_HASHES[key] = digest
    return digest


class NoEmbedder:
    """The `none` spec: an embedder that is configured off. `embed` always raises."""

    backend = "none"
    model = ""
    dim = 0

    def fingerprint(self) -> str:
        return "none"

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        raise EmbedderError("no embedder configured")

    def describe(self) -> dict:
        return identity(self)

    def __repr__(self) -> str:
        return "NoEmbedder()"
