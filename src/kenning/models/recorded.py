"""What an index records about the model that made its vectors, read and written in one place.

Kept apart from the writer so that a search, which only reads the record, does not import the
indexing pipeline.
"""

from __future__ import annotations

import functools
import json

from kenning.models.endpoints import REMOTE_BACKENDS


def recorded_embedder(store) -> dict | None:
    """The embedder that made an index's vectors: backend, model, dim, fingerprint, spec. An index
    written before endpoints were kept out of it may still hold a URL: it is dropped here, unread."""
    recorded = store.get_meta("embedder")
    if not recorded:
        return None
    description = json.loads(recorded)
    return model_identity(description, _minilm_precision(description) or description.get("spec"))


def _minilm_precision(description: dict) -> str | None:
    """ "minilm:float32" for vectors the default model made before its products ran in int8: such an
    index records the spec "minilm", which now names the int8 products, so its fingerprint tells."""
    if description.get("backend") != "minilm" or description.get("spec") not in (None, "", "minilm"):
        return None
    return "minilm:float32" if _is_float32_minilm(description.get("fingerprint")) else None


@functools.lru_cache(maxsize=16)
def _is_float32_minilm(fingerprint: str | None) -> bool:
    """Whether a fingerprint is minilm:float32's; once per fingerprint, since every search reads the
    record (computing the fingerprint costs about 0.15 ms)."""
    from kenning.models.embed.base import EmbedderError
    from kenning.models.embed.minilm import MiniLMEmbedder

    try:
        return MiniLMEmbedder(precision="float32").fingerprint() == fingerprint
    except EmbedderError:  # the model package is missing: say nothing, the search reports that
        return False


def model_identity(description: dict, spec: str | None) -> dict:
    """What an index may record about a model: its identity (backend, model, dim, fingerprint) and,
    for a local model, the spec that loads it; never where a remote model is served, so an index
    handed to you cannot make kenning send your key or your queries anywhere."""
    backend = description["backend"]
    if backend in REMOTE_BACKENDS or not spec:
        spec = f"{backend}:{description['model']}" if backend in REMOTE_BACKENDS else backend
    return {
        "backend": backend,
        "model": description["model"],
        "dim": description["dim"],
        "fingerprint": description["fingerprint"],
        "spec": spec,
    }
