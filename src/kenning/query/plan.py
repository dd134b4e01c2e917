"""The query plan: parsed clauses turned into terms the index can run, with the analysis applied.

plan_query drops stopwords from plain words only (if every plain word is one, they stay), counts
repeated words (their query term frequency, for k3), adds glossary aliases to plain, +, OR and field
words (a field word's aliases keep its field), and, when asked, replaces a word no chunk holds by the
closest frequent index word. A glossary term of several words that the parser read as one word is
matched as a phrase, or by any other member of its group, in one clause.

The plan reads the index through the search context (`ctx`: its view's postings, the glossary, the
speller and the analyzer; see kenning.search.context) without importing the search package, which
sits above it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from pyroaring import BitMap

from kenning.analysis.analyzer import TOKEN_RE
from kenning.query.parser import Clause, Item, ParsedQuery, Phrase, Word


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
    group: str | None = None  # its glossary group: an alias's, or the typed word's that was expanded

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

    @property
    def group(self) -> str | None:
        """The glossary group (its canonical term) the clause was expanded by, if any."""
        return next((i.group for i in self.items if i.group), None)


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
                    "glossary_group": c.group,
                    "items": [
                        {
                            "match": i.describe(),
                            "terms": i.terms,
                            "via_glossary": i.via,
                            "glossary_group": i.group,
                        }
                        for i in c.items
                    ],
                }
                for c in self.clauses
            ],
            "exclusions": [{"match": i.describe(), "terms": i.terms} for i in self.exclusions],
            "dropped_stopwords": self.dropped_stopwords,
            "corrections": self.corrections,
            "expansions": self.expansions,
        }


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


def _expand(word: Word, ctx, scopes, plan: QueryPlan) -> list[PlannedItem]:
    """The other approved members of the word's glossary group, each in the word's field if it has
    one (several words make a phrase)."""
    if ctx.glossary is None:
        return []
    alternatives = ctx.glossary.expansions(word.text, scopes)
    items = []
    for alt in alternatives:
        several = len(TOKEN_RE.findall(alt.surface)) > 1
        alias_item = Phrase(alt.surface, word.field) if several else Word(alt.surface, word.field)
        items.append(plan_item(alias_item, ctx.analyzer, via=alt.canonical))
        items[-1].group = alt.canonical
    if items:
        plan.expansions.append(
            {
                "word": word.text,
                "group": alternatives[0].canonical,
                "alternatives": [a.surface for a in alternatives],
            }
        )
    return items


def _correct(word: Word, ctx, spell: bool, plan: QueryPlan) -> Word:
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


def plan_query(parsed: ParsedQuery, ctx, spell: bool, scopes) -> QueryPlan:
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
        plan.dropped_stopwords = [  # a glossary term's words stay in it ("sign in")
            raw for c, raw in plain_raws if analyzer.is_stopword(raw) and " " not in c.alternatives[0].text
        ]
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
                items[0].group = expansions[0].group
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
            if isinstance(alt, Word) and clause.kind in ("required", "or", "field"):
                if clause.kind != "field":  # a field word is taken as typed (no spelling), as before
                    alt = _correct(alt, ctx, spell, plan)
                items.append(plan_item(alt, analyzer))
                expansions = _expand(alt, ctx, scopes, plan)
                if expansions:
                    items[-1].group = expansions[0].group
                items.extend(expansions)
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


def semantic_text(parsed: ParsedQuery, plan: QueryPlan) -> str:
    """What the embedder reads: the whole question for plain queries (function words help a sentence
    embedding), else the positive words and phrases without operators."""
    if parsed.is_plain:
        return parsed.text
    return " ".join(i.item.text for c in plan.clauses for i in c.items if i.via is None)
