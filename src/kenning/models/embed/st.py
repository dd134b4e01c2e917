"""sentence-transformers on a local model directory (optional: needs `sentence-transformers` and torch).

Nothing is downloaded: HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1 are set before the import and the
model loads with local_files_only. The directory is checked when the embedder is made; the library is
imported and the model loaded on the first `embed`.

If the model's config_sentence_transformers.json defines prompts, kind "query" uses the prompt named
"query" and kind "document" the one named "document", "passage" or "corpus" (e5/bge/nomic style).
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path

import numpy as np

from .base import EmbedderError, check_inputs, file_sha256, identity, make_fingerprint

BATCH_SIZE = 32
SKIP_DIRS = {"onnx", "openvino", ".git", ".cache", "__pycache__"}  # alternative backends' weights, VCS
DOCUMENT_PROMPTS = ("document", "passage", "corpus")

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _model_files(directory: Path) -> list[Path]:
    """Every file that can change the vectors: all files but docs, dotfiles and other backends' folders."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.lower().endswith((".md", ".lock")):
                continue
            found.append(Path(root) / name)
    return found


def _dim_from_files(directory: Path) -> int:
    """The output dimension the config files state (0 when they do not); the loaded model decides."""
    modules = (
        json.loads((directory / "modules.json").read_text()) if (directory / "modules.json").is_file() else []
    )
    dim = int(_read_json(directory / "config.json").get("hidden_size") or 0)
    for module in modules if isinstance(modules, list) else []:
        kind = str(module.get("type", ""))
        config = _read_json(directory / str(module.get("path", "")) / "config.json")
        if kind.endswith(".Pooling"):
            modes = sum(v is True for k, v in config.items() if k.startswith("pooling_mode_"))
            dim = int(config.get("word_embedding_dimension") or dim) * max(1, modes)
        elif kind.endswith(".Dense"):
            dim = int(config.get("out_features") or dim)
    return dim


class SentenceTransformerEmbedder:
    backend = "sentence-transformers"

    def __init__(
        self, model_dir: str | Path, *, batch_size: int = BATCH_SIZE, device: str | None = None
    ) -> None:
        self.model = str(model_dir)
        self.directory = Path(model_dir).expanduser()
        self.batch_size = max(1, int(batch_size))
        self.device = device
        if not self.directory.is_dir():
            raise EmbedderError(
                f"sentence-transformers embedder: model directory not found: {self.directory}"
            )
        if not ((self.directory / "modules.json").is_file() or (self.directory / "config.json").is_file()):
            raise EmbedderError(
                f"sentence-transformers embedder: {self.directory} is not a model directory "
                "(no modules.json or config.json in it)"
            )
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbedderError(
                "sentence-transformers embedder: the sentence-transformers package is not installed "
                f"(needed for {self.directory}); install it with: pip install torch sentence-transformers, "
                "or use the default 'minilm' embedder"
            )
        try:
            self.dim = _dim_from_files(self.directory)
        except (OSError, ValueError, TypeError, AttributeError):
            self.dim = 0
        st_config = _read_json(self.directory / "config_sentence_transformers.json")
        prompts = st_config.get("prompts") if isinstance(st_config.get("prompts"), dict) else {}
        self.prompt_names = {
            "query": "query" if "query" in prompts else None,
            "document": next((name for name in DOCUMENT_PROMPTS if name in prompts), None),
        }
        self.prompts = {kind: prompts[name] if name else "" for kind, name in self.prompt_names.items()}
        self._parts: dict | None = None
        self._model = None

    def _fingerprint_parts(self) -> dict:
        if self._parts is None:
            files = {
                str(path.relative_to(self.directory)): file_sha256(path)
                for path in _model_files(self.directory)
            }
            self._parts = {"files": files, "normalise": "l2", "prefixes": self.prompts}
        return self._parts

    def fingerprint(self) -> str:
        return make_fingerprint(self.backend, self._fingerprint_parts())

    def describe(self) -> dict:
        parts = self._fingerprint_parts()
        return {
            **identity(self),
            "fingerprint_inputs": {**parts, "files": sorted(parts["files"])},
        }

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(model={self.model!r})"

    def _load(self):
        if self._model is not None:
            return self._model
        key = f"{self.directory.resolve()}|{self.device}"
        with _LOCK:
            if key not in _MODELS:
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderError(
                        f"sentence-transformers embedder: cannot import sentence_transformers ({exc})"
                    ) from exc
                try:
                    _MODELS[key] = SentenceTransformer(
                        str(self.directory), device=self.device, local_files_only=True
                    )
                except Exception as exc:  # torch/transformers raise many kinds of errors here
                    raise EmbedderError(
                        f"sentence-transformers embedder: cannot load the model in {self.directory}: {exc}"
                    ) from exc
            self._model = _MODELS[key]
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if dim:
            self.dim = int(dim)
        return self._model

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        texts = check_inputs(self.backend, texts, kind, max_chars=101 * 512)  # any BERT-sized window
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        try:
            vectors = model.encode(
                texts,
                prompt_name=self.prompt_names[kind],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:  # torch errors are not one type
            raise EmbedderError(
                f"sentence-transformers embedder: encoding failed with {self.directory}: {exc}"
            ) from exc
        return np.ascontiguousarray(vectors, dtype=np.float32)
