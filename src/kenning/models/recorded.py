"""What an index records about the model that made its vectors, read and written in one place.

The record only identifies a model: backend, model name, dimension and fingerprint. It never chooses
what kenning talks to or loads. An index folder may come from anyone (a cloned repository, a handed
over copy), so a record that named an address would send your key and your texts there, and one
that named a model folder would load (and run) whatever that folder holds. From the record alone,
kenning rebuilds only the model it ships (minilm, in int8 or float32), whose fingerprint then has to
match; anything else (a remote model's address, a sentence-transformers folder) comes from the user:
flags, environment or the user's own config (kenning.models.endpoints).

Kept apart from the writer so that a search, which only reads the record, does not import the
indexing pipeline.
"""

from __future__ import annotations

import functools
import json

from kenning.models.endpoints import REMOTE_BACKENDS
from kenning.store.errors import decoding

BUILT_IN_SPECS = ("minilm", "minilm:float32")  # the only specs a record can make kenning build
REQUIRED = {"backend", "model", "dim", "fingerprint"}
KNOWN_BACKENDS = ("minilm", "none", "sentence-transformers", *REMOTE_BACKENDS)


def recorded_embedder(store) -> dict | None:
    """The embedder that made an index's vectors: backend, model, dim, fingerprint, and `spec`, which
    is the built-in spec to rebuild it ("minilm" or "minilm:float32") or, for any other backend, only
    a name (BACKEND:MODEL) that nothing is ever built from. Whatever else a record holds (an address,
    a model folder, another backend's spec) is dropped here, unread; `record_problem` reports it."""
    recorded = store.get_meta("embedder")
    if not recorded:
        return None
    with decoding("the embedder record"):  # IndexDamaged is a ValueError, as json.loads raises
        description = json.loads(recorded)
    if not isinstance(description, dict):
        raise ValueError("the index's embedder record is not a JSON object")
    return model_identity(description, description.get("spec"))


def model_identity(description: dict, spec: str | None) -> dict:
    """What an index may record about a model: its identity (backend, model, dim, fingerprint) and a
    spec that is either a built-in one (for minilm) or only the model's name; never an address."""
    backend = str(description["backend"])
    model = str(description["model"])
    return {
        "backend": backend,
        "model": model,
        "dim": description["dim"],
        "fingerprint": description["fingerprint"],
        "spec": _identity_spec(backend, model, spec, description.get("fingerprint")),
    }


def record_problem(store) -> str | None:
    """Why an index's embedder record is not one kenning writes (None when it is): a spec that names
    an address, a model folder, or another backend than the record's, or an unknown backend. Such a
    record was written by hand; kenning ignores what it names, and `kenning verify` reports it."""
    raw = store.get_meta("embedder")
    if not raw:
        return None
    try:
        description = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        return "the embedder record is not JSON"
    if not isinstance(description, dict) or not REQUIRED <= set(description):
        return "the embedder record lacks backend, model, dim or fingerprint"
    backend, spec = description["backend"], description.get("spec")
    if backend not in KNOWN_BACKENDS:
        return f"the embedder record names an unknown backend {backend!r}"
    if spec in (None, ""):
        return None
    if not isinstance(spec, str):
        return "the embedder record's spec is not text"
    if "://" in spec or "@" in spec:
        return f"the embedder record's spec {spec!r} names an address (an index never says where)"
    if backend == "minilm":
        if spec.strip().lower() not in BUILT_IN_SPECS:
            return f"the embedder record's spec {spec!r} is not minilm's"
        return None
    name = spec.partition(":")[0].strip().lower()
    same = {"st": "sentence-transformers", "sentence_transformers": "sentence-transformers"}.get(name, name)
    if same != backend:
        return f"the embedder record's spec {spec!r} names another backend than its own ({backend})"
    return None


def _identity_spec(backend: str, model: str, spec, fingerprint) -> str:
    if backend == "minilm":
        wanted = spec.strip().lower() if isinstance(spec, str) else ""
        if wanted == "minilm:float32" or (wanted in ("", "minilm") and _is_float32_minilm(fingerprint)):
            return "minilm:float32"  # vectors the default model made before its products ran in int8
        return "minilm"
    if backend == "none":
        return "none"
    return f"{backend}:{model}"


@functools.lru_cache(maxsize=16)
def _is_float32_minilm(fingerprint: str | None) -> bool:
    """Whether a fingerprint is minilm:float32's; once per fingerprint, since every search reads the
    record (computing the fingerprint costs about 0.15 ms). An index written before int8 records the
    spec "minilm", which now names the int8 products, so its fingerprint tells."""
    from kenning.models.embed.base import EmbedderError
    from kenning.models.embed.minilm import MiniLMEmbedder

    if not isinstance(fingerprint, str):
        return False
    try:
        return MiniLMEmbedder(precision="float32").fingerprint() == fingerprint
    except EmbedderError:  # the model package is missing: say nothing, the search reports that
        return False
