"""What a search returns: ranked hits with their evidence, the funnel, and the plan it ran."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from kenning.lexical.bm25 import Bm25Params
from kenning.query.filters import Filters
from kenning.query.plan import QueryPlan
from kenning.search.notices import Notice, texts
from kenning.search.snippets import Snippet


def glossary_reason(reason: dict[str, Any]) -> str:
    """A match reason from a glossary group, as the surfaces print it: what matched, in which group
    (its canonical term), in which fields."""
    return (
        f"matched {reason['matched']} via glossary group {reason['glossary_group']!r} "
        f"in {', '.join(reason['fields'])}"
    )


def message_text(message: dict[str, Any]) -> str:
    """A message a chat hit shows, as the surfaces print it: "› 2023-12-31 21:41  Bob: text" for one
    that matched, the same without the mark for a neighbour (the time in local time)."""
    when = ""
    if isinstance(message.get("time"), str):
        try:
            when = datetime.fromisoformat(message["time"]).astimezone().strftime("%Y-%m-%d %H:%M") + "  "
        except ValueError:
            when = ""
    mark = "›" if message.get("matched") else " "
    sender = f"{message['sender']}: " if message.get("sender") else ""
    return f"{mark} {when}{sender}{message.get('text', '')}"


def location_text(
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    page: int | None = None,
    page_end: int | None = None,
) -> str:
    """Where a piece sits, the one way every surface prints it: `file p.4` or `file pp.4-5` for a
    paged document, `file:12-40` (or `file:12`) for lines, else just the file. Never "None". A
    `page_end` that is not a whole number (it comes from a chunk's metadata) is left out."""
    if not isinstance(page_end, int) or isinstance(page_end, bool) or page is None or page_end <= page:
        page_end = None
    if page is not None:
        return f"{path} pp.{page}-{page_end}" if page_end else f"{path} p.{page}"
    if start_line is not None:
        end = f"-{end_line}" if end_line and end_line != start_line else ""
        return f"{path}:{start_line}{end}"
    return path


@dataclass
class Funnel:
    """How many chunks survived each stage, and how long each stage took (milliseconds)."""

    corpus: int = 0  # live chunks in the index
    gathered: int = 0  # chunks holding a query term
    filtered: int = 0  # of those, the ones the filters and required and excluded words left
    scored: int = 0  # of those, the ones scored (pruning skips chunks that cannot reach the top)
    returned: int = 0  # hits returned
    # each filter and constraint in turn, and how many chunks it left: kind, constraint, remaining
    constraints: list[dict[str, Any]] = field(default_factory=list)
    # per channel: method, candidates returned
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)  # per stage, in milliseconds


class _SnippetPart:
    """`Hit.snippet` and `Hit.highlights`: ordinary fields to set, construct, compare, copy or pickle,
    except that a hit a search returns makes its snippet on first read (Hit.defer_snippet): a
    caller that asks for a hundred hits to rerank them, or reads only their ids and scores, does not
    pay for a hundred snippets it never shows."""

    _EMPTY: ClassVar[dict[str, object]] = {"text": "", "spans": (), "messages": ()}

    def __init__(self, part: str) -> None:
        self.part = part  # "text", "spans" or "messages"

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, hit: Hit | None, owner: type | None = None) -> object:
        if hit is None:  # the dataclass's default for the field
            return self._EMPTY[self.part]
        hit._make_snippet()
        return hit.__dict__.get(self.slot, self._EMPTY[self.part])

    def __set__(self, hit: Hit, value: object) -> None:
        hit._make_snippet()  # a deferred snippet is made first, so the other part stays its own
        hit.__dict__[self.slot] = value


def _snippet_part(part: str) -> Any:
    """A _SnippetPart as the default of a Hit field: typed Any, so the field keeps the type of what it
    holds (str, list of spans, list of messages) for type checkers and the reference pages."""
    return _SnippetPart(part)


@dataclass
class Hit:
    """One ranked chunk: where it is (`path`, lines or `page`), its `score`, the `snippet` with its
    `highlights`, and why it ranked there: `match_reasons`, each channel's score and rank
    (`channels`), what later stages did (`adjustments`), the query's `evidence` and a
    `confidence`; `explain` with `explain=True`."""

    id: int  # the chunk's id (`kenning get chunk:ID`)
    score: float  # the fused score, after the post-fusion stages and any reranker
    title: str = ""  # the chunk's heading path
    path: str = ""  # the file it comes from
    doc_key: str = ""  # its document (the path, or a record's own id in a corpus file)
    start_line: int | None = None  # its first and last line in the file (None without lines)
    end_line: int | None = None
    page: int | None = None  # its first page, in a paged document
    time: float | None = None  # the document's (or message's) time as epoch seconds, when known
    meta: dict[str, Any] = field(default_factory=dict)  # the chunk's metadata (page_end, message ids, ...)
    # the document's own text around the best matches (whitespace folded)
    snippet: str = _snippet_part("text")
    # where the matched words sit in `snippet`: [start, end) character offsets (code points)
    highlights: list[tuple[int, int]] = _snippet_part("spans")
    # a chat window's messages that matched, among their neighbours: id, sender, time, text, matched
    messages: list[dict[str, Any]] = _snippet_part("messages")
    match_reasons: list[dict[str, Any]] = field(default_factory=list)
    # per channel: raw score, rank, contribution to the fusion
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)
    # what post-fusion stages and the reranker did
    adjustments: list[dict[str, Any]] = field(default_factory=list)
    # how much of the query this hit holds, whatever its fused score: clauses matched of all clauses,
    # and the cosine with the query as asked (None without vectors)
    evidence: dict[str, Any] = field(default_factory=dict)
    # a 0-1 estimate that this hit answers the query, from the evidence alone, so the same number
    # means the same on any query and any collection (see kenning.search.confidence, docs/scoring.md)
    confidence: float | None = None
    # the set-aside constraints this hit does not meet (see kenning.search.relax); empty for a strict result
    relaxed: list[str] = field(default_factory=list)
    verbatim: bool = False  # holds the whole query word for word (see _verbatim)
    explain: dict[str, Any] | None = None  # the score's parts, stage by stage (with explain=True)

    def defer_snippet(self, make: Callable[[], Snippet]) -> None:
        """Make the snippet and its highlights with `make()` when either is first read."""
        self.__dict__["_snippet_maker"] = make

    def _make_snippet(self) -> None:
        make = self.__dict__.pop("_snippet_maker", None)
        if make is not None:
            made = make()
            self.__dict__["_snippet"], self.__dict__["_highlights"] = made.text, made.spans
            self.__dict__["_messages"] = made.messages

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and deep-copied with its snippet made (what makes it holds the analyzer)."""
        self._make_snippet()
        return dict(self.__dict__)

    def to_dict(self) -> dict[str, Any]:
        """Every field as data, the snippet and its highlights included (made now if not yet read)."""
        out = asdict(self)
        out["highlights"] = [tuple(span) for span in out["highlights"]]
        out["messages"] = list(out["messages"])
        return out

    def location(self) -> str:
        """`file:12-40`, `file p.3`, `file pp.3-4`, or just the file (location_text)."""
        page_end = self.meta.get("page_end") if isinstance(self.meta, dict) else None
        return location_text(self.path, self.start_line, self.end_line, self.page, page_end)


@dataclass
class SearchResponse:
    """What a search returns: the `hits`, best first, the plan it ran, the `funnel`, the settings
    used, and what it noticed (`notices`, `missing_terms`, `suggestions`, constraints it `relaxed`,
    and `empty_reason` when nothing matched)."""

    query: str  # the query as asked
    plan: QueryPlan  # what the query became: terms, clauses, constraints
    hits: list[Hit]
    funnel: Funnel
    params: Bm25Params  # the lexical knobs used
    filters: Filters  # the filters applied
    missing_terms: list[str] = field(default_factory=list)  # query terms no chunk holds
    notices: list[Notice] = field(default_factory=list)  # kenning.search.notices
    suggestions: list[dict[str, Any]] = field(default_factory=list)  # did you mean: word, did_you_mean
    empty_reason: str | None = None
    dropped: list[dict[str, Any]] = field(default_factory=list)  # chunks post-fusion stages removed, and why
    relaxed: list[dict[str, Any]] = field(default_factory=list)  # constraints set aside: they left too little

    @property
    def terms(self) -> list[str]:
        """The analysed query terms (stemmed, stopwords out) the lexical channel looked up."""
        return self.plan.terms

    @property
    def dropped_stopwords(self) -> list[str]:
        """The query's words left out as stopwords."""
        return self.plan.dropped_stopwords

    def to_dict(self) -> dict[str, Any]:
        """The response as data: the `kenning search --json` document."""
        return {
            "query": self.query,
            "terms": self.terms,
            "plan": self.plan.to_dict(),
            "dropped_stopwords": self.dropped_stopwords,
            "missing_terms": self.missing_terms,
            "notices": texts(self.notices),
            "suggestions": self.suggestions,
            "empty_reason": self.empty_reason,
            "dropped": self.dropped,
            "relaxed": self.relaxed,
            "filters": self.filters.to_dict(),
            "params": self.params.to_dict(),
            "funnel": asdict(self.funnel),
            "hits": [h.to_dict() for h in self.hits],
        }
