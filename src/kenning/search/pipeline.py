"""The retrieval pipeline, top to bottom, as named stages with one inspectable data flow:

    analyze   -> plan clauses from the parsed query (stopwords dropped from plain words only; repeated
                 words counted for k3; glossary aliases added to plain, + and OR words; spelling)
    gather    -> union of the positive terms' roaring posting bitmaps: every chunk holding any term
    constrain -> filters (scopes), then each required clause (phrases checked on token positions) and
                 exclusion, each counted; constraints that leave almost nothing are set aside and
                 named (kenning.relax)
    score     -> BM25 over the survivors only, coordination over clauses
    rank      -> top results by score, ties broken by chunk id for a stable order
    channels  -> (dense, hybrid) cosine and optional substring channels, fused per query
                 (kenning.fusion), then a feedback pass
    verbatim  -> chunks holding the whole query word for word move to the top
    refine    -> post-fusion stages (dedup, recency, MMR, diversity, cap) and the reranker
    present   -> chunk rows, snippets with matched terms marked, match reasons, evidence,
                 explanations, and a plain statement of what emptied the result when nothing matched

The funnel records the size after each stage and the time each stage took.
"""

from __future__ import annotations

import time
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np
from pyroaring import BitMap

from kenning.analysis.analyzer import TOKEN_RE
from kenning.models.rerankers import pool_size, rerank
from kenning.query.filters import Filters
from kenning.query.parser import Clause, Item, ParsedQuery, Phrase, Word
from kenning.search.fusion import Channel, FusionParams, fuse
from kenning.search.postprocess import Candidate, PostprocessOptions, describe, run_stages
from kenning.search.relax import RELAX_BELOW, Constraint, Relaxation, relax, strict_first
from kenning.search.snippets import make_snippet
from kenning.signals.lexical import Bm25Params, ScoringClause, ScoringTerm
from kenning.signals.substring import substring_words, top_scores

DETAILS = ("full", "heads")
VERBATIM_MIN_WORDS = 5
MODES = ("lexical", "dense", "hybrid")


@dataclass
class Funnel:
    """How many chunks survived each stage, and how long each stage took (milliseconds)."""

    corpus: int = 0
    gathered: int = 0
    filtered: int = 0
    scored: int = 0
    returned: int = 0
    constraints: list[dict] = field(default_factory=list)
    channels: dict[str, dict] = field(default_factory=dict)  # per channel: method, candidates returned
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class Hit:
    id: int
    score: float
    title: str = ""
    path: str = ""
    doc_key: str = ""
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    time: float | None = None
    meta: dict = field(default_factory=dict)
    snippet: str = ""
    match_reasons: list[dict] = field(default_factory=list)
    channels: dict = field(default_factory=dict)  # per channel: raw score, rank, contribution to the fusion
    adjustments: list[dict] = field(default_factory=list)  # what post-fusion stages and the reranker did
    # how much of the query this hit holds, whatever its fused score: clauses matched of all clauses,
    # and the cosine with the query as asked (None without vectors)
    evidence: dict = field(default_factory=dict)
    # the set-aside constraints this hit does not meet (see kenning.relax); empty for a strict result
    relaxed: list[str] = field(default_factory=list)
    verbatim: bool = False  # holds the whole query word for word (see _verbatim)
    explain: dict | None = None

    def location(self) -> str:
        """`file:12-40`, `file p.3`, or just the file."""
        if self.page is not None:
            return f"{self.path} p.{self.page}"
        if self.start_line is not None:
            end = f"-{self.end_line}" if self.end_line and self.end_line != self.start_line else ""
            return f"{self.path}:{self.start_line}{end}"
        return self.path


# ------------------------------------------------------------------------------------------ the plan
@dataclass(slots=True)
class PlannedItem:
    """One way to match: a word or phrase, its terms, and how adjacency is checked.

    `simple`: a single term in any field, so its postings are its matches.
    """

    item: Item
    spec: list[tuple[str, int]]  # (term, offset) that must line up; one entry for a single word
    terms: list[str]  # every term that scores (whole identifiers and their parts)
    via: str | None = None  # the glossary canonical term when this item came from expansion
    docs: BitMap | None = None
    simple: bool = False

    def __post_init__(self):
        self.simple = len(self.spec) == 1 and self.item.field is None

    def describe(self) -> str:
        return self.item.describe()


@dataclass(slots=True)
class PlannedClause:
    """A clause ready to run. `needs_docs`: its matches are not just one term's postings (an OR
    group, a phrase, a field), so the filter stage computes them."""

    kind: str
    required: bool
    label: str
    items: list[PlannedItem]
    docs: BitMap | None = None
    needs_docs: bool = False
    qtf: int = 1  # how many times the query says this term (plain words)

    def __post_init__(self):
        self.needs_docs = len(self.items) > 1 or not self.items[0].simple


@dataclass
class QueryPlan:
    parsed: ParsedQuery
    clauses: list[PlannedClause]
    exclusions: list[PlannedItem]
    dropped_stopwords: list[str] = field(default_factory=list)
    corrections: list[dict] = field(default_factory=list)
    expansions: list[dict] = field(default_factory=list)
    zero_hit_words: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)  # every scoring term, in query order

    def to_dict(self) -> dict:
        return {
            "read_as": self.parsed.describe(),
            "parsed": self.parsed.to_dict(),
            "clauses": [
                {
                    "label": c.label,
                    "kind": c.kind,
                    "required": c.required,
                    "qtf": c.qtf,
                    "items": [
                        {"match": i.describe(), "terms": i.terms, "via_glossary": i.via} for i in c.items
                    ],
                }
                for c in self.clauses
            ],
            "exclusions": [{"match": i.describe(), "terms": i.terms} for i in self.exclusions],
            "dropped_stopwords": self.dropped_stopwords,
            "corrections": self.corrections,
            "expansions": self.expansions,
        }


@dataclass
class SearchResponse:
    query: str
    plan: QueryPlan
    hits: list[Hit]
    funnel: Funnel
    params: Bm25Params
    filters: Filters
    missing_terms: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    suggestions: list[dict] = field(default_factory=list)
    empty_reason: str | None = None
    dropped: list[dict] = field(default_factory=list)  # chunks post-fusion stages removed, and why
    relaxed: list[dict] = field(default_factory=list)  # constraints set aside because they left too little

    @property
    def terms(self) -> list[str]:
        return self.plan.terms

    @property
    def dropped_stopwords(self) -> list[str]:
        return self.plan.dropped_stopwords

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "terms": self.terms,
            "plan": self.plan.to_dict(),
            "dropped_stopwords": self.dropped_stopwords,
            "missing_terms": self.missing_terms,
            "notices": self.notices,
            "suggestions": self.suggestions,
            "empty_reason": self.empty_reason,
            "dropped": self.dropped,
            "relaxed": self.relaxed,
            "filters": self.filters.to_dict(),
            "params": self.params.to_dict(),
            "funnel": asdict(self.funnel),
            "hits": [asdict(h) for h in self.hits],
        }


class _Stopwatch:
    def __init__(self, funnel: Funnel):
        self.funnel = funnel
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.funnel.timings_ms[stage] = (now - self.last) * 1000.0
        self.last = now


@dataclass
class SearchContext:
    """What the stages need besides the query: the snapshot view, store and helpers."""

    view: object
    store: object
    analyzer: object
    glossary: object | None = None
    speller: object | None = None
    resolve_filters: object | None = None  # Filters -> BitMap, cached by the index
    dense: object | None = None  # DenseView of this generation, when the index has vectors
    embed_query: object | None = None  # text -> unit vector, with the index's embedder
    substring: object | None = None  # () -> SubstringView of this generation (built on first use)
    heads: dict | None = None  # chunk heads already read by this search


# ------------------------------------------------------------------------------------------ analyze
def plan_item(item: Item, analyzer, via: str | None = None) -> PlannedItem:
    spec: list[tuple[str, int]] = []
    terms: list[str] = []
    pos = 0
    for raw in TOKEN_RE.findall(unicodedata.normalize("NFC", item.text)):
        token_terms, offsets, width = analyzer.token_analysis(raw)
        if len(set(offsets)) == len(offsets):  # a word, or CJK bigrams: every term lines up
            spec.extend((t, pos + o) for t, o in zip(token_terms, offsets, strict=True))
        else:  # an identifier: its whole form stands for it
            spec.append((token_terms[0], pos))
        terms.extend(token_terms)
        pos += width
    return PlannedItem(item, spec, list(dict.fromkeys(terms)), via)


def _has_postings(view, item: PlannedItem) -> bool:
    found = view.postings(item.terms)
    return any(found[t] is not None for t in item.terms)


def _expand(word: Word, ctx: SearchContext, scopes, plan: QueryPlan) -> list[PlannedItem]:
    if ctx.glossary is None or word.field:
        return []
    alternatives = ctx.glossary.expansions(word.text, scopes)
    items = []
    for alt in alternatives:
        alias_item = Phrase(alt.surface) if len(TOKEN_RE.findall(alt.surface)) > 1 else Word(alt.surface)
        items.append(plan_item(alias_item, ctx.analyzer, via=alt.canonical))
    if items:
        plan.expansions.append(
            {
                "word": word.text,
                "group": alternatives[0].canonical,
                "alternatives": [a.surface for a in alternatives],
            }
        )
    return items


def _correct(word: Word, ctx: SearchContext, spell: bool, plan: QueryPlan) -> Word:
    """With --spell, replace a word that no chunk holds by the closest frequent index word.

    Zero-hit words are only looked for when a speller is at hand (spelling on, or full output that
    offers "did you mean"); ranking never depends on it.
    """
    if ctx.speller is None:
        return word
    item = plan_item(word, ctx.analyzer)
    if not item.terms or _has_postings(ctx.view, item):
        return word
    plan.zero_hit_words.append(word.text)
    if spell and ctx.speller is not None:
        fixed = ctx.speller.correct(word.text)
        if fixed and fixed != word.text:
            plan.corrections.append({"from": word.text, "to": fixed})
            return Word(fixed, word.field)
    return word


def analyze(parsed: ParsedQuery, ctx: SearchContext, spell: bool, scopes) -> QueryPlan:
    plan = QueryPlan(parsed, [], [])
    analyzer = ctx.analyzer
    positive_others = any(c.kind != "plain" for c in parsed.clauses)
    plain_raws = [
        (c, raw)
        for c in parsed.clauses
        if c.kind == "plain"
        for raw in TOKEN_RE.findall(c.alternatives[0].text)
    ]
    content = [(c, raw) for c, raw in plain_raws if not analyzer.is_stopword(raw)]
    if content or positive_others:
        plan.dropped_stopwords = [raw for _, raw in plain_raws if analyzer.is_stopword(raw)]
        kept = {id(c) for c, _ in content}
    else:  # every plain word is a stopword: keep them, an empty query would find nothing
        content, kept = plain_raws, {id(c) for c, _ in plain_raws}
    content_raws: dict[int, list[str]] = {}
    for c, raw in content:
        content_raws.setdefault(id(c), []).append(raw)
    seen_terms: set[str] = set()
    plain_clause: dict[str, PlannedClause] = {}
    for clause in parsed.clauses:
        if clause.kind == "plain":
            if id(clause) not in kept:
                continue
            word = _correct(clause.alternatives[0], ctx, spell, plan)
            expansions = _expand(word, ctx, scopes, plan)
            if expansions:
                items = [plan_item(word, analyzer), *expansions]
                plan.clauses.append(PlannedClause("or", False, f"{word.text} (glossary)", items))
                seen_terms.update(items[0].terms)
                continue
            raws = content_raws[id(clause)] if clause.alternatives[0] is word else TOKEN_RE.findall(word.text)
            for raw in raws:  # one soft clause per distinct term; repeats raise its query weight (k3)
                for term in analyzer.token_terms(raw):  # the parser already NFC-normalised the query
                    if term in plain_clause:
                        plain_clause[term].qtf += 1
                    elif term not in seen_terms:
                        seen_terms.add(term)
                        plain_clause[term] = PlannedClause(
                            "plain", False, term, [PlannedItem(Word(raw), [(term, 0)], [term])]
                        )
                        plan.clauses.append(plain_clause[term])
            continue
        items = []
        for alt in clause.alternatives:
            if isinstance(alt, Word) and clause.kind in ("required", "or"):
                alt = _correct(alt, ctx, spell, plan)
                items.append(plan_item(alt, analyzer))
                items.extend(_expand(alt, ctx, scopes, plan))
            else:
                items.append(plan_item(alt, analyzer))
        items = [i for i in items if i.spec]
        if items:
            plan.clauses.append(PlannedClause(clause.kind, clause.required, _label(clause), items))
    plan.exclusions = [p for p in (plan_item(e, analyzer) for e in parsed.exclusions) if p.spec]
    plan.terms = list(dict.fromkeys(t for c in plan.clauses for i in c.items for t in i.terms))
    return plan


def _label(clause: Clause) -> str:
    return clause.describe()


# ------------------------------------------------------------------------------------------ filter
def _item_docs(item: PlannedItem, view, within: BitMap) -> BitMap:
    if item.docs is not None:
        return item.docs
    if item.simple:
        postings = view.postings([item.spec[0][0]])[item.spec[0][0]]
        item.docs = postings.bitmap if postings is not None else BitMap()
    elif len(item.spec) == 1:
        item.docs = view.field_docs(item.spec[0][0], item.item.field) & within
    else:
        item.docs = view.phrase_docs(item.spec, within, item.item.field)
    return item.docs


def _clause_docs(clause: PlannedClause, view, within: BitMap) -> BitMap:
    docs = BitMap()
    for item in clause.items:
        docs |= _item_docs(item, view, within)
    clause.docs = docs
    return docs


def _soften(plan: QueryPlan, relaxation: Relaxation, analyzer) -> None:
    """Turn the set-aside constraints into soft evidence: a required clause's words still score (one
    soft clause per term, as plain words do), an exclusion is simply dropped."""
    dropped = {c.order for c in relaxation.dropped}  # clause index, or clauses + exclusion index
    n = len(plan.clauses)
    seen = {t for k, c in enumerate(plan.clauses) if k not in dropped for i in c.items for t in i.terms}
    clauses = []
    for k, clause in enumerate(plan.clauses):
        if k not in dropped:
            clauses.append(clause)
            continue
        for item in clause.items:
            for term in item.terms:
                if term not in seen and not analyzer.is_stopword(term):
                    seen.add(term)
                    word = PlannedItem(Word(term), [(term, 0)], [term], item.via)
                    clauses.append(PlannedClause("plain", False, f"{term} (relaxed)", [word]))
    plan.clauses = clauses
    plan.exclusions = [item for j, item in enumerate(plan.exclusions) if n + j not in dropped]


# ------------------------------------------------------------------------------------------ channels
def _top(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (ids, scores), ties broken by id."""
    k = min(k, len(ids))
    if not k:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    top = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(k)
    order = top[np.lexsort((ids[top], -scores[top]))]
    return ids[order], scores[order]


def semantic_text(parsed: ParsedQuery, plan: QueryPlan) -> str:
    """What the embedder reads: the whole question for plain queries (function words help a sentence
    embedding), else the positive words and phrases without operators."""
    if parsed.is_plain:
        return parsed.text
    return " ".join(i.item.text for c in plan.clauses for i in c.items if i.via is None)


def _dense_allowed(ctx: SearchContext, plan: QueryPlan, filters: Filters, survivors: BitMap) -> np.ndarray:
    """Chunks a dense or substring hit may be: with a required clause, only lexical survivors (they
    hold its terms); else every live chunk that passes the filters and no exclusion."""
    view = ctx.view
    if any(c.required for c in plan.clauses):
        return view.mask(survivors)
    allowed = view.live_mask.copy()
    if not filters.is_empty():
        allowed &= view.mask(ctx.resolve_filters(filters))
    for item in plan.exclusions:
        allowed &= ~view.mask(_item_docs(item, view, view.live))
    return allowed


def _other_channels(
    ctx,
    plan,
    parsed,
    filters,
    survivors,
    lexical_all,
    lexical_ids,
    lexical_scores,
    limit,
    mode,
    fusion,
    funnel,
    clock,
):
    """The dense and substring channels, then the fusion: returns ranked (id, score) and per-hit parts."""
    depth = max(limit, fusion.depth)
    allowed = _dense_allowed(ctx, plan, filters, survivors)
    text = semantic_text(parsed, plan).strip()
    query_vec = ctx.embed_query(text) if text else None
    if query_vec is not None:
        dense_ids, dense_scores = ctx.dense.search(query_vec, depth, allowed)
    else:
        dense_ids, dense_scores = np.zeros(0, dtype=np.int64), np.zeros(0)
    # Nearest neighbours always exist; a chunk that only vectors found must be close enough to count.
    holds_word = ctx.view.mask(survivors)
    close = _found_by_query(dense_ids, holds_word, fusion.min_similarity, known=dense_scores)
    dropped = int(len(close) - close.sum())
    if dropped:
        dense_ids, dense_scores = dense_ids[close], dense_scores[close]
    funnel.channels["dense"] = {
        "method": ctx.dense.method,
        "vectors": len(ctx.dense),
        "returned": len(dense_ids),
        "below_min_similarity": dropped,
    }
    clock.lap("dense")

    def cosine(ids):
        return ctx.dense.similarity(query_vec, ids) if query_vec is not None else np.zeros(len(ids))

    def lexical_of(ids):
        ids = np.asarray(ids, dtype=np.int64)
        return np.where(ids < len(lexical_all), lexical_all[np.minimum(ids, len(lexical_all) - 1)], 0.0)

    if mode == "dense":
        ranked = list(zip(dense_ids.tolist(), dense_scores.tolist(), strict=True))
        parts = {
            c: {"dense": {"score": s, "rank": r, "contribution": s}} for r, (c, s) in enumerate(ranked, 1)
        }
        return ranked, parts

    channels = {
        "lexical": Channel(
            "lexical", lexical_ids, lexical_scores, lexical_of, _background(lexical_all, holds_word)
        ),
        "dense": Channel(
            "dense",
            dense_ids,
            dense_scores,
            cosine,
            ctx.dense.background(query_vec) if query_vec is not None else None,
        ),
    }
    if fusion.w_substring > 0 and fusion.mode in ("rrf", "norm"):
        words = substring_words([a.text for c in parsed.clauses for a in c.alternatives], ctx.analyzer)
        every = ctx.substring().score_all(words) if words else {}
        sub_ids, sub_scores = top_scores(every, depth, allowed)

        def substring_of(ids, every=every):
            return np.array([every.get(c, 0.0) for c in np.asarray(ids).tolist()])

        channels["substring"] = Channel("substring", sub_ids, sub_scores, substring_of)
        funnel.channels["substring"] = {"words": words, "returned": len(sub_ids)}
        clock.lap("substring")
    result = fuse(channels, fusion)
    funnel.channels["fusion"] = {"mode": fusion.mode, "pool": len(result.ids), "weights": result.weights}
    clock.lap("fuse")
    if (
        fusion.feedback_k > 0
        and fusion.mode in ("norm", "rrf", "zscore")
        and query_vec is not None
        and result.ids
    ):
        result = _feedback(
            ctx, plan, result, channels, query_vec, lexical_all, holds_word, allowed, depth, fusion, funnel
        )
        clock.lap("feedback")
    ranked = list(zip(result.ids, result.scores, strict=True))
    return ranked, result.explain


def _background(scores: np.ndarray, matched: np.ndarray) -> tuple[float, float] | None:
    """Mean and std of the lexical score over the chunks that hold any query term."""
    values = scores[matched[: len(scores)]] if len(scores) else scores
    return (float(values.mean()), float(values.std())) if len(values) > 1 else None


def _verbatim(ctx: SearchContext, parsed: ParsedQuery, survivors: BitMap) -> BitMap:
    """Chunks holding the whole query word for word: someone who pastes a sentence, an error message
    or a long name wants the passage it came from first, whatever the vectors think. The query's own
    text (operators read as words: a pasted message may hold quotes or dashes) of at least
    VERBATIM_MIN_WORDS words (shorter ones are ordinary phrases), checked on token positions among the
    chunks that meet every constraint."""
    if not parsed.clauses or not survivors:
        return BitMap()
    item = plan_item(Phrase(parsed.text), ctx.analyzer)
    if len(item.spec) < VERBATIM_MIN_WORDS:
        return BitMap()
    return ctx.view.phrase_docs(item.spec, survivors)


def _verbatim_first(ranked: list[tuple[int, float]], verbatim: BitMap, lexical: np.ndarray):
    """Verbatim chunks move to the top in their ranked order (any the fusion left out follow them,
    by lexical score); the rest keep their order."""
    listed = {cid for cid, _ in ranked}
    missing = sorted((c for c in verbatim if c not in listed), key=lambda c: -lexical[c])
    top = [p for p in ranked if p[0] in verbatim] + [(c, float(lexical[c])) for c in missing]
    return top + [p for p in ranked if p[0] not in verbatim]


def _found_by_query(ids, holds_word: np.ndarray, floor: float, known=None, cosine=None) -> np.ndarray:
    """True for the chunks the query itself found: they hold a query word (`holds_word`, a mask over
    chunk ids), or their cosine with the query as asked is at least `floor`. Cosines are `known`
    (aligned with `ids`) or computed by `cosine(ids)`, and only for chunks without a query word."""
    ids = np.asarray(ids, dtype=np.int64)
    found = np.zeros(len(ids), dtype=bool)
    inside = ids < len(holds_word)
    found[inside] = holds_word[ids[inside]]
    rest = np.flatnonzero(~found)
    if len(rest):
        similar = np.asarray(known)[rest] if known is not None else cosine(ids[rest])
        found[rest] = similar >= floor
    return found


def _feedback(ctx, plan, first, channels, query_vec, lexical_all, holds_word, allowed, depth, fusion, funnel):
    """Pseudo-relevance feedback from the first fused pass, then a second fusion.

    The top `feedback_k` chunks move the query vector towards their mean (Rocchio, weight
    `feedback_beta`) and lend their most distinctive terms (tf x idf, up to `feedback_terms`) to the
    lexical channel with weight `feedback_gamma`. Constraints still bind: only allowed chunks score.

    Feedback reorders evidence; it never creates it. A chunk may enter the second pass only if the
    query itself found it: it holds a query word (a lexical survivor) or its cosine with the query as
    asked clears `min_similarity`. Without this, one weak match would pull in its neighbours and
    their words, and a query about nothing in the index would come back with confident results.
    """
    top = first.ids[: fusion.feedback_k]
    vectors = [v for v in (ctx.dense.vector(c) for c in top) if v is not None]
    moved = query_vec
    if vectors and fusion.feedback_beta > 0:
        moved = query_vec + fusion.feedback_beta * np.mean(vectors, axis=0)
        moved = moved / np.linalg.norm(moved)
    asked = partial(ctx.dense.similarity, query_vec)

    def found_by_query(ids: np.ndarray) -> np.ndarray:
        return _found_by_query(ids, holds_word, fusion.min_similarity, cosine=asked)

    dense_ids, dense_scores = ctx.dense.search(moved, depth, allowed)
    keep = found_by_query(dense_ids)
    dense_ids, dense_scores = dense_ids[keep], dense_scores[keep]
    weighted_terms = _expansion_terms(ctx, plan, top, fusion.feedback_terms)
    terms = [t for t, _ in weighted_terms]
    combined = lexical_all
    if terms and fusion.feedback_gamma > 0:
        view = ctx.view
        found = view.postings(terms)
        top_w = weighted_terms[0][1]
        extra = view.score(
            [ScoringClause([ScoringTerm(t)], boost=w / top_w) for t, w in weighted_terms],
            found,
            Bm25Params(coord_floor=1.0),
            allowed,
        )
        combined = lexical_all + fusion.feedback_gamma * extra
    candidates = np.flatnonzero((combined > 0) & allowed[: len(combined)]).astype(np.int64)
    candidates = candidates[found_by_query(candidates)]
    lexical_ids, lexical_scores = _top(candidates, combined[candidates], depth)

    def lexical_of(ids):
        ids = np.asarray(ids, dtype=np.int64)
        return np.where(ids < len(combined), combined[np.minimum(ids, len(combined) - 1)], 0.0)

    def cosine(ids):
        return ctx.dense.similarity(moved, ids)

    second = dict(channels)
    second["lexical"] = Channel(
        "lexical",
        lexical_ids,
        lexical_scores,
        lexical_of,
        _background(combined, holds_word & allowed[: len(holds_word)]),
    )
    second["dense"] = Channel("dense", dense_ids, dense_scores, cosine, ctx.dense.background(moved))
    funnel.channels["feedback"] = {
        "from": [int(c) for c in top],
        "terms": terms,
        "beta": fusion.feedback_beta,
        "gamma": fusion.feedback_gamma,
    }
    fused = fuse(second, fusion)
    funnel.channels["feedback"]["weights"] = fused.weights
    # the second pass scores against the moved query; --explain also shows the query as asked
    ids = np.asarray(fused.ids, dtype=np.int64)
    asked = dict(zip(fused.ids, ctx.dense.similarity(query_vec, ids).tolist(), strict=True))
    for cid, parts in fused.explain.items():
        if "dense" in parts:
            parts["dense"]["query_cosine"] = asked.get(cid)
        if "lexical" in parts and cid < len(lexical_all):
            parts["lexical"]["query_score"] = float(lexical_all[cid])
    return fused


def _expansion_terms(ctx, plan, chunk_ids, n_terms: int) -> list[tuple[str, float]]:
    """(term, weight) for the terms that best characterise the feedback chunks, best first: weight is
    summed relative frequency x idf; query terms, stopwords, very short terms and terms held by a
    single chunk are left out."""
    if n_terms <= 0:
        return []
    analyzer, view = ctx.analyzer, ctx.view
    weight: dict[str, float] = {}
    for row in ctx.store.chunks_by_ids(list(chunk_ids)).values():
        terms = analyzer.terms(f"{row.title}\n{row.body}")
        for term, n in Counter(terms).items():
            weight[term] = weight.get(term, 0.0) + n / max(len(terms), 1)
    skip = set(plan.terms) | {t for i in plan.exclusions for t in i.terms}
    scored = []
    for term, w in weight.items():
        if term in skip or len(term) < 3 or analyzer.is_stopword(term):
            continue
        postings = view.postings([term])[term]
        if postings is None or postings.df < 2:
            continue
        scored.append((w * view.idf(term), term))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [(t, w) for w, t in scored[:n_terms]]


# ------------------------------------------------------------------------------------------ refine
def _post_active(post: PostprocessOptions) -> bool:
    return any(
        v is not None
        for v in (
            post.recency_lambda,
            post.diversity_penalty,
            post.mmr_lambda,
            post.dedup_threshold,
            post.cap,
        )
    )


def _refine(ctx, query_text, ranked, limit, post, reranker, funnel, clock):
    """Post-fusion stages, then the reranker, over the pool: returns ranked pairs, per-hit
    adjustments and the dropped chunks with the reason each was dropped."""
    ids = [cid for cid, _ in ranked]
    heads = ctx.store.chunk_heads(ids)
    ctx.heads = heads  # the present stage reuses them
    only_dedup = (
        reranker is None
        and post.dedup_threshold is not None
        and not any(
            v is not None for v in (post.recency_lambda, post.diversity_penalty, post.mmr_lambda, post.cap)
        )
    )
    if only_dedup and len({heads[c][0] for c in ids}) == len(ids):
        funnel.channels["post"] = {"stages": [], "skipped": "every candidate is from a different document"}
        clock.lap("post")
        return ranked, {}, []  # dedup compares chunks of one document: nothing to do
    extras = ctx.store.chunk_groups(ids)
    cands = []
    for cid, score in ranked:
        doc_key, _title, path, start, end, _page, when = heads[cid]
        conversation, message_ids = extras.get(cid, (None, None))
        cands.append(
            Candidate(
                id=cid,
                score=score,
                doc_key=doc_key,
                group=conversation or path,
                time=when,
                lines=(start, end) if start is not None and end is not None else None,
                message_ids=message_ids,
                vector=ctx.dense.vector(cid)
                if ctx.dense is not None and post.mmr_lambda is not None
                else None,
            )
        )
    result = run_stages(cands, post)
    funnel.channels["post"] = {"stages": result.funnel}
    clock.lap("post")
    kept = result.kept
    if reranker is not None:
        rows = ctx.store.chunks_by_ids([c.id for c in kept])
        texts = {cid: f"{row.title}\n{row.body}" if row.title else row.body for cid, row in rows.items()}
        kept = rerank(kept, query_text, texts, reranker, limit)
        funnel.channels["rerank"] = {"reranker": reranker.name, "pool": len(result.kept)}
        clock.lap("rerank")
    dropped = [
        {
            "id": c.id,
            "doc_key": c.doc_key,
            "why": describe(c.adjustments[-1]),
            "adjustment": c.adjustments[-1],
        }
        for c in result.dropped
    ]
    return [(c.id, c.score) for c in kept], {c.id: c.adjustments for c in kept}, dropped


# ------------------------------------------------------------------------------------------ run
def run_search(
    ctx: SearchContext,
    parsed: ParsedQuery,
    limit: int,
    params: Bm25Params,
    explain: bool = False,
    detail: str = "full",
    filters: Filters | None = None,
    spell: bool = False,
    mode: str = "lexical",
    fusion: FusionParams | None = None,
    post: PostprocessOptions | None = None,
    reranker=None,
    allow_relax: bool = True,
) -> SearchResponse:
    """Run every stage for one query against one committed snapshot (`ctx.view`).

    mode "lexical" ranks by BM25 alone; "dense" by cosine alone; "hybrid" fuses the channels.
    Filters, required clauses and exclusions bind every channel; with `allow_relax`, constraints that
    leave (almost) nothing are set aside and the results that break them come last, marked.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode != "lexical" and ctx.dense is None:
        raise ValueError(f"mode {mode!r} needs vectors: this index has none (run `kenning embed`)")
    fusion = fusion or FusionParams()
    post = post if post is not None else PostprocessOptions()
    pool = pool_size(limit) if reranker is not None else (2 * limit if _post_active(post) else limit)
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    filters = filters or Filters()
    view = ctx.view
    funnel = Funnel(corpus=view.n_docs)
    clock = _Stopwatch(funnel)

    # analyze
    scopes = list(filters.collections) or None
    plan = analyze(parsed, ctx, spell, scopes)
    clock.lap("analyze")

    # gather
    exclusion_terms = [t for i in plan.exclusions for t in i.terms]
    found = view.postings(list(dict.fromkeys(plan.terms + exclusion_terms)))
    bitmaps = [found[t].bitmap for t in plan.terms if found[t] is not None]
    candidates = BitMap.union(*bitmaps) if bitmaps else BitMap()
    funnel.gathered = len(candidates)
    clock.lap("gather")

    # constrain: filters are scopes; required clauses and exclusions are promises, relaxed when
    # together they leave (almost) nothing
    base = candidates
    if not filters.is_empty():
        base = base & ctx.resolve_filters(filters)
        funnel.constraints.append(
            {"constraint": "; ".join(filters.describe()), "kind": "filter", "remaining": len(base)}
        )
    constraints = [
        Constraint(clause.label, "required", _clause_docs(clause, view, base) & base, order)
        for order, clause in enumerate(plan.clauses)
        if clause.required
    ]
    constraints += [
        Constraint(item.describe(), "exclude", _item_docs(item, view, base) & base, len(plan.clauses) + order)
        for order, item in enumerate(plan.exclusions)
    ]
    survivors = base
    for constraint in constraints:
        survivors = constraint.apply(survivors)
        funnel.constraints.append(
            {"constraint": constraint.describe(), "kind": constraint.kind, "remaining": len(survivors)}
        )
    relaxation = relax(base, constraints, min(RELAX_BELOW, limit)) if allow_relax else None
    if relaxation is not None:
        survivors = relaxation.relaxed
        _soften(plan, relaxation, ctx.analyzer)
        for constraint in relaxation.dropped:
            funnel.constraints.append(
                {"constraint": constraint.describe(), "kind": "relaxed", "remaining": len(survivors)}
            )
    for clause in plan.clauses:
        if not clause.required and clause.needs_docs:
            _clause_docs(clause, view, survivors)
    funnel.filtered = len(survivors)
    clock.lap("filter")

    # score
    scoring = [
        ScoringClause(
            [ScoringTerm(t, i.item.field, None if i.simple else i.docs) for i in c.items for t in i.terms],
            c.docs if c.needs_docs else None,
            c.label,
            c.qtf,
        )
        for c in plan.clauses
    ]
    allowed = view.mask(survivors) if len(survivors) != len(candidates) else None
    scores = view.score(scoring, found, params, allowed)
    survivor_ids = np.frombuffer(survivors.to_array(), dtype=np.uint32).astype(np.int64)
    survivor_scores = scores[survivor_ids] if len(survivor_ids) else np.zeros(0)
    funnel.scored = len(survivor_ids)
    clock.lap("score")

    # rank (the lexical list; with other channels it is one input of the fusion)
    lexical_ids, lexical_scores = _top(
        survivor_ids, survivor_scores, pool if mode == "lexical" else max(pool, fusion.depth)
    )
    ranked = list(zip(lexical_ids.tolist(), lexical_scores.tolist(), strict=True))
    clock.lap("rank")

    channels_of: dict[int, dict] = {}
    if mode != "lexical":
        ranked, channels_of = _other_channels(
            ctx,
            plan,
            parsed,
            filters,
            survivors,
            scores,
            lexical_ids,
            lexical_scores,
            limit,
            mode,
            fusion,
            funnel,
            clock,
        )
    ranked = strict_first(ranked, relaxation)
    verbatim = _verbatim(ctx, parsed, survivors if relaxation is None else relaxation.strict)
    if verbatim:
        ranked = _verbatim_first(ranked, verbatim, scores)
        funnel.channels["verbatim"] = {"chunks": len(verbatim)}
        clock.lap("verbatim")
    ranked = ranked[:pool]
    adjustments: dict[int, list[dict]] = {}
    dropped: list[dict] = []
    if _post_active(post) or reranker is not None:
        query_text = semantic_text(parsed, plan)
        ranked, adjustments, dropped = _refine(ctx, query_text, ranked, limit, post, reranker, funnel, clock)
    ranked = ranked[:limit]
    funnel.returned = len(ranked)
    semantic_only = mode != "lexical" and bool(ranked) and not any(int(c) in survivors for c, _ in ranked)

    # present
    hits = _present(ranked, ctx, plan, found, scoring, params, detail, explain)
    for hit in hits:
        hit.relaxed = relaxation.broken(hit.id) if relaxation is not None else []
        hit.verbatim = hit.id in verbatim
        hit.channels = channels_of.get(hit.id, {})
        hit.adjustments = adjustments.get(hit.id, [])
        if detail == "full":
            hit.evidence = _evidence(hit, plan)
    response = SearchResponse(parsed.text, plan, hits, funnel, params, filters)
    response.dropped = dropped
    if relaxation is not None and hits:
        response.relaxed = relaxation.to_dict()
    response.missing_terms = [t for t in plan.terms if found.get(t) is None]
    response.notices = list(parsed.notices) + [
        f"searched for {c['to']!r} instead of {c['from']!r}" for c in plan.corrections
    ]
    if response.relaxed:
        response.notices.append(relaxation.notice())
    if detail == "full" and ctx.speller is not None:
        for word in dict.fromkeys(plan.zero_hit_words):
            if any(c["from"] == word for c in plan.corrections):
                continue
            guess = ctx.speller.correct(word)
            if guess and guess != word:
                response.suggestions.append({"word": word, "did_you_mean": guess})
    if semantic_only:
        response.notices.append(
            "no chunk contains the query's words; these results are only semantically similar"
        )
    else:
        corrected = {c["from"] for c in plan.corrections}
        absent = [w for w in dict.fromkeys(plan.zero_hit_words) if w not in corrected]
        if hits and absent:
            missing = " or ".join(repr(w) for w in absent)
            response.notices.append(f"no chunk contains {missing}; the results match the other words")
    if not hits:
        response.empty_reason = _why_empty(plan, funnel, found, filters, ctx)
    clock.lap("present")
    return response


def _present(ranked, ctx: SearchContext, plan: QueryPlan, found, scoring, params, detail: str, explain: bool):
    """Turn ranked (id, score) pairs into hits.

    detail="heads" reads only what a ranked list needs (document key, title, location), which is what
    eval and benchmarks use; "full" adds metadata, a snippet with the matched terms marked, and the
    match reasons (which words, phrases and glossary aliases matched, in which field).
    """
    ids = [cid for cid, _ in ranked]
    hits = []
    if detail == "heads":
        cached = ctx.heads or {}
        heads = cached if all(c in cached for c in ids) else ctx.store.chunk_heads(ids)
        for cid, score in ranked:
            doc_key, title, path, start, end, page, when = heads[cid]
            hits.append(Hit(cid, score, title, path, doc_key, start, end, page, when))
    else:
        rows = ctx.store.chunks_by_ids(ids)
        term_set = set(plan.terms)
        for cid, score in ranked:
            row = rows[cid]
            hits.append(
                Hit(
                    cid,
                    score,
                    row.title,
                    row.path,
                    row.doc_key,
                    row.start_line,
                    row.end_line,
                    row.page,
                    row.time,
                    row.meta,
                    make_snippet(row.body, term_set, ctx.analyzer),
                )
            )
        for hit in hits:
            hit.match_reasons = _match_reasons(hit.id, plan, found, ctx.view)
    if explain:
        for hit in hits:
            hit.explain = {"lexical": ctx.view.explain(hit.id, scoring, found, params)}
    return hits


def _evidence(hit: Hit, plan: QueryPlan) -> dict:
    dense = hit.channels.get("dense") or {}
    cosine = dense.get("query_cosine", dense.get("score"))
    return {
        "clauses_matched": len({reason["clause"] for reason in hit.match_reasons}),
        "clauses": len(plan.clauses),
        "query_cosine": None if cosine is None else float(cosine),
    }


def _match_reasons(chunk_id: int, plan: QueryPlan, found, view) -> list[dict]:
    reasons = []
    for clause in plan.clauses:
        for item in clause.items:
            if item.docs is not None and chunk_id not in item.docs:
                continue
            fields = set()
            if len(item.spec) > 1:  # a phrase: the fields where the words line up
                this = BitMap([chunk_id])
                for f in [item.item.field] if item.item.field else ["title", "body"]:
                    if view.phrase_docs(item.spec, this, f):
                        fields.add(f)
            else:
                for term in item.terms:
                    tf_title, tf_body = view.term_frequencies(found.get(term), chunk_id)
                    if tf_title and item.item.field != "body":
                        fields.add("title")
                    if tf_body and item.item.field != "title":
                        fields.add("body")
            if fields:
                reasons.append(
                    {
                        "clause": clause.label,
                        "matched": item.describe(),
                        "via_glossary": item.via,
                        "fields": sorted(fields),
                    }
                )
    return reasons


def _why_empty(plan: QueryPlan, funnel: Funnel, found, filters: Filters, ctx: SearchContext) -> str:
    """Say which term, clause or filter emptied the result, instead of an empty list alone."""
    if not plan.clauses:
        if plan.exclusions:
            return "the query only excludes; add a word to search for"
        return "nothing to search for (no words with letters or digits)"
    scope = f" in {'; '.join(filters.describe())}" if not filters.is_empty() else ""
    for clause in plan.clauses:
        if clause.required and not any(found.get(t) is not None for i in clause.items for t in i.terms):
            return f"{clause.label} has no postings: no indexed chunk contains it"
    words = ", ".join(dict.fromkeys(i.describe() for c in plan.clauses for i in c.items))
    if funnel.gathered == 0:
        return f"no indexed chunk contains {words}"
    before = funnel.gathered
    for step in funnel.constraints:
        if step["remaining"] == 0:
            if step["kind"] == "filter":
                required = [c.label for c in plan.clauses if c.required]
                what = required[0] if required else words
                return f"{what} has no postings{scope} ({before} candidate(s) outside it)"
            if step["kind"] == "required" and not filters.is_empty():
                return f"{step['constraint']} has no postings{scope}"
            return f"nothing left after {step['constraint']} ({before} candidate(s) before)"
        before = step["remaining"]
    return "no chunk matched"
