"""What answering reads from an index, and nothing more.

The answer package plans searches, reads the passages they find and weighs their sentences; it does
not need the whole kenning.api.index.Index for that. AnswerSources names the few things it uses, so
the package can be read, tested and reused against any search that provides them (the index builds
one with Index.answer_sources).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kenning.analysis.analyzer import Analyzer
    from kenning.common.cache import BoundedCache
    from kenning.entities.graph import EntityGraph
    from kenning.models.embed.base import Embedder
    from kenning.search.results import SearchResponse
    from kenning.store.records import ChunkRow


@dataclass(frozen=True)
class AnswerSources:
    search: Callable[..., SearchResponse]  # (text, **settings) -> ranked hits (Index.search)
    chunks: Callable[[list[int]], dict[int, ChunkRow]]  # chunk rows by id, read in one snapshot
    analyzer: Analyzer  # the index's analyzer: the question's words become its terms
    idfs: Callable[[Sequence[str]], list[float]]  # analysed terms' idf in the current generation
    entity_graph: Callable[[], EntityGraph]  # the current generation's entities (built once)
    embedder: Callable[[], Embedder] | None  # the index's model; None when the index has no vectors
    cache: BoundedCache  # where sentences' vectors are kept between questions
    settings: dict[str, Any] | None = None  # settings for every search (knobs such as w_graph)

    @property
    def has_vectors(self) -> bool:
        return self.embedder is not None
