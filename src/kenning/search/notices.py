"""What a search tells its reader besides the hits, as typed values.

A notice has a kind, which code can test, and a sentence, which people read: surfaces print the
sentence (`note: ...` in a terminal, a string in JSON), and code that decides something on a
notice (a fallback, a test) reads the kind instead of searching the sentence for words.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class NoticeKind(StrEnum):
    QUERY = "query"  # the parser read the query other than as written (kenning.query.parser)
    CORRECTED = "corrected"  # a word no chunk holds was searched as a close one (--spell)
    RELAXED = "relaxed"  # constraints that left almost nothing were set aside (kenning.search.relax)
    PARTIAL = "partial"  # some query words are in no chunk: the results match the others
    SEMANTIC_ONLY = "semantic-only"  # no result holds the query's words: meaning alone ranked them
    NO_VECTORS = "no-vectors"  # no vectors or no query vector: the search used the signals that need none
    NOT_RERANKED = "not-reranked"  # the reranker failed: the results keep their fused order


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    text: str

    def __str__(self) -> str:
        return self.text


def texts(notices: list[Notice]) -> list[str]:
    """The sentences, as every surface shows them."""
    return [notice.text for notice in notices]
