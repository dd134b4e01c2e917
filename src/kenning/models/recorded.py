"""What an index records about the model that made its vectors, read and written in one place.

Kept apart from the writer so that a search, which only reads the record, does not import the
indexing pipeline.
"""

from __future__ import annotations

import json

from kenning.models.endpoints import REMOTE_BACKENDS


def recorded_embedder(store) -> dict | None:
    """The embedder that made an index's vectors: backend, model, dim, fingerprint, spec. An index
    written before endpoints were kept out of it may still hold a URL: it is dropped here, unread."""
    recorded = store.get_meta("embedder")
    return model_identity(json.loads(recorded), json.loads(recorded).get("spec")) if recorded else None


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
