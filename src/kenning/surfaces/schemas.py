"""What the MCP tools and the HTTP API return, as schemas: each MCP tool's `outputSchema`, and the
response models /openapi.json (and the /docs page) show.

The schemas name the fields an agent relies on and say what they mean; each allows more fields, so
the structured content stays the same JSON as the command line's `--json`. The MCP SDK checks every
result against its tool's schema, so these cannot drift from what the tools return.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class SearchOutput(_Open):
    query: str = Field(description="the query as read")
    hits: list[dict[str, Any]] = Field(
        description=(
            "ranked hits: id, score, title (heading path), path, start_line, end_line, snippet (the "
            "document's own text), highlights ([start, end) character spans of the matched words in "
            "the snippet), match_reasons"
        )
    )
    notices: list[str] = Field(description="what the reader should know: relaxed constraints, missing words")
    offset: int = Field(0, description="how many better-ranked hits came before these (paging)")
    empty_reason: str | None = Field(None, description="why nothing was found, when nothing was")


class DocumentOutput(_Open):
    ref: str = Field(description="the reference asked for")
    path: str | None = Field(description="the indexed file")
    sections: list[dict[str, Any]] = Field(description="titled parts, each with its numbered lines {n, text}")
    window: dict[str, Any] | None = Field(
        None, description="the part returned: lines_shown, lines_after, and `next`, the call that reads on"
    )
    document_lines: list[int] | None = Field(
        None, description="[first, last]: the line numbers the whole document has, to read on from a range"
    )


class DocumentsOutput(_Open):
    documents: list[dict[str, Any]] = Field(description="the documents that fit, as `get` returns them")
    left_out: list[dict[str, Any]] = Field(description="what did not fit in max_chars, with its size")
    not_found: list[str] = Field(description="references nothing is indexed under")
    max_chars: int


class AnswerOutput(_Open):
    question: str
    found: bool = Field(description="false when the sources do not say")
    lead: str = Field("", description="the one-line answer (a name, place, date or value), or empty")
    answer: str = Field(description="the answer, or what the sources do not say")
    citations: list[dict[str, Any]] = Field(
        description="path, heading, line range (start_line, end_line) or pages (page, page_end), location "
        "(the place as text: file:12-14, file p.4, file pp.4-5), quote, chunk_id"
    )


class StatusOutput(_Open):
    documents: int
    sources: int
    chunks: int
    collections: dict[str, Any]
    embedder: dict[str, Any] | None = Field(description="the model that made the vectors, or null")


class IndexOutput(_Open):
    files_indexed: int
    chunks_added: int
    chunks_removed: int
    errors: list[dict[str, Any]]


class GlossaryOutput(_Open):
    group: int
    canonical: str
    aliases: list[str]
    scope: str


class Problem(_Open):
    """An RFC 9457 problem, the body of every HTTP 4xx and 5xx (application/problem+json)."""

    type: str = Field("about:blank")
    title: str = Field(description="the status's standard phrase")
    status: int
    detail: str = Field(description="what went wrong and what to do, in one sentence")
