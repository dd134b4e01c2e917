"""Which signals a search can use: what mode "auto" means for an index, the dense view and query
embedder a dense or hybrid search needs, and what the search does instead, and says, when they are
missing.

Where vectors and embedders come from (the index's record of its model, the user's endpoints, the
graph file beside a folder index) is the index's business (kenning.api.vectors); it hands this
module a VectorSource. The rules live here: a dense search without usable vectors is an error; a
hybrid one falls back to the signals that need no vectors, with a notice saying why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kenning.models.embed.base import EmbedderError
from kenning.models.endpoints import REMOTE_BACKENDS, EndpointError
from kenning.search.context import SearchContext
from kenning.search.notices import Notice, NoticeKind
from kenning.search.pipeline import run_search
from kenning.search.request import SearchRequest
from kenning.search.results import SearchResponse
from kenning.store import StorageError

if TYPE_CHECKING:
    from kenning.lexical.view import LexicalView
    from kenning.models.embed.base import Embedder
    from kenning.signals.dense import DenseView

SEARCHED_LEXICALLY = "searched lexically"
FUSED_THE_REST = "fused the signals that need none"


class VectorSource(Protocol):
    """What a search asks of the index about vectors (kenning.api.vectors.IndexVectors)."""

    def recorded(self) -> dict | None:
        """The embedder that made the index's vectors (backend, model, dim, fingerprint, spec)."""

    def recorded_in(self, view: LexicalView) -> dict | None:
        """The same, read once per generation (what mode "auto" looks at on every search)."""

    def embedder(self, spec: str | None) -> Embedder:
        """The query embedder: `spec` (the user's), else the model the index records."""

    def dense_view(self, recorded: dict, view: LexicalView) -> DenseView:
        """The generation's vectors, for the dense signal."""


def search_with_vectors(ctx: SearchContext, request: SearchRequest, vectors: VectorSource) -> SearchResponse:
    """Resolve the request's mode, give the search its vectors when it needs them, and run it.

    "auto" is hybrid when the index has vectors and lexical otherwise. When the vectors cannot be
    used (none yet, the model's server unknown or down), a hybrid search that asks for another
    signal fuses the signals that need no vectors, and any other searches lexically; a dense search
    raises instead, since nothing else would answer what it asks."""
    mode = request.mode
    if mode == "auto":
        mode = "hybrid" if vectors.recorded_in(ctx.view) else "lexical"
    reason = attach_vectors(ctx, mode, vectors, request.embedder) if mode != "lexical" else None
    fallback = None
    if reason is not None:
        if _needs_no_vectors(request):
            fallback = FUSED_THE_REST
        else:
            mode, fallback = "lexical", SEARCHED_LEXICALLY
    try:
        response = run_search(ctx, request, mode)
    except EmbedderError as exc:  # the embedding server is down or too slow: answer lexically
        if mode == "dense":
            raise
        ctx.dense = ctx.embed_query = None
        response = run_search(ctx, request, "lexical")
        reason, fallback = f"the query could not be embedded ({exc})", SEARCHED_LEXICALLY
    if reason is not None:
        response.notices.append(Notice(NoticeKind.NO_VECTORS, f"{reason}: {fallback}"))
    return response


def attach_vectors(ctx: SearchContext, mode: str, vectors: VectorSource, spec: str | None) -> str | None:
    """Give the search its dense view and query embedder; else the reason it has none (dense mode
    raises it instead). A query embedder whose model differs from the vectors' is always an error:
    its vectors cannot be compared with them."""
    recorded = vectors.recorded()
    if recorded is None:
        if mode == "dense":
            raise StorageError("this index has no vectors: run `kenning embed` (or index without --no-embed)")
        return "this index has no vectors yet (run `kenning embed`)"
    try:
        embedder = vectors.embedder(spec)
        if not embedder.dim and spec is None:
            embedder.dim = recorded["dim"]  # a remote model's dimension, known without asking it
        fingerprint = embedder.fingerprint()
    except EndpointError as exc:
        if mode == "dense":
            raise
        return str(exc)
    except EmbedderError as exc:
        if mode == "dense":
            raise
        return f"the query could not be embedded ({exc})"
    if fingerprint != recorded["fingerprint"]:
        raise StorageError(_mismatch(recorded, embedder))
    view = ctx.view
    ctx.dense = vectors.dense_view(recorded, view)
    ctx.embed_query = lambda text: embedder.embed([text], kind="query")[0]
    return None


def _mismatch(recorded: dict, embedder: Embedder) -> str:
    """Why a query embedded by `embedder` cannot be compared with the index's vectors."""
    if (recorded["backend"], recorded["model"]) == (embedder.backend, embedder.model):
        return (
            f"this index's record of {recorded['model']} ({recorded['backend']}) has a fingerprint that "
            "model does not give here, so its vectors cannot be compared with a query (another build, "
            "or a changed record: `kenning verify` checks it; `kenning embed --replace` re-embeds)"
        )
    remote = (
        "; a remote model's vectors belong to the server address that made them: reach it "
        "there, or re-embed with `kenning embed --replace`"
    )
    return (
        f"this index's vectors come from {recorded['model']} ({recorded['backend']}, {recorded['dim']}-d); "
        f"a query embedded with {embedder.model} ({embedder.backend}) cannot be compared with them"
        + (remote if recorded["backend"] in REMOTE_BACKENDS else "")
    )


def _needs_no_vectors(request: SearchRequest) -> bool:
    """True when a hybrid search asks for a signal besides lexical and dense (the entity graph, the
    substring channel): without vectors it still fuses them rather than falling back to BM25 alone."""
    if request.mode != "hybrid" or request.fusion.mode == "rerank":
        return False
    return any(w > 0 for name, w in request.fusion.weights if name not in ("lexical", "dense"))
