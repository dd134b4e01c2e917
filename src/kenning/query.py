"""The query dialect: a small web-search-style language, parsed into clauses the pipeline can run.

    word            soft: ranked by BM25 with coordination (required with --strict)
    "exact phrase"  required; the words must be adjacent (checked on token positions)
    +word           required term
    -word -"phrase" excluded
    A OR B          a disjunction group (uppercase OR); the group counts as one clause
    title:word      required in that field (also body:, and title:"a phrase")

Documented best readings, so no input ever crashes the parser:
- an unclosed quote runs to the end of the query; a lone `-` or `+`, a field prefix with nothing
  after it, and an `OR` with nothing on one side are ignored; each gives a notice.
- words with no letters or digits (`&&`, `|`, `!`, `?`) are ignored: they match nothing.
- control characters count as spaces.
- parentheses group nothing. In a query that also uses operators they would change its meaning, so
  the parser refuses it and names the position; in a query of plain words they are punctuation.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_WORD_CHARS = re.compile(r"\w")
MAX_QUERY_CHARS = 10_000


class QuerySyntaxError(ValueError):
    """A query that cannot be read without guessing; names the character position (0-based)."""

    def __init__(self, message: str, position: int):
        super().__init__(f"{message} (at position {position})")
        self.position = position


@dataclass(slots=True)
class Word:
    """A single query word (it may still analyse into several terms, e.g. `sign-in`)."""

    text: str
    field: str | None = None

    def describe(self) -> str:
        return f"{self.field}:{self.text}" if self.field else self.text


@dataclass(slots=True)
class Phrase:
    text: str
    field: str | None = None

    def describe(self) -> str:
        quoted = f'"{self.text}"'
        return f"{self.field}:{quoted}" if self.field else quoted


Item = Word | Phrase


@dataclass(slots=True)
class Clause:
    """One unit of the query: a single item or an OR group of alternatives.

    kind: plain (soft word), required (+word or --strict), phrase, field, or or (a group).
    """

    alternatives: list[Item]
    required: bool
    kind: str
    origin: str = ""  # how the user typed it, for explanations

    def describe(self) -> str:
        body = " OR ".join(a.describe() for a in self.alternatives)
        return f"+{body}" if self.kind == "required" else body


@dataclass
class ParsedQuery:
    text: str
    clauses: list[Clause] = field(default_factory=list)
    exclusions: list[Item] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    strict: bool = False

    @property
    def plain_words(self) -> list[str]:
        return [c.alternatives[0].text for c in self.clauses if c.kind == "plain"]

    @property
    def is_plain(self) -> bool:
        return not self.exclusions and all(c.kind == "plain" for c in self.clauses)

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "strict": self.strict,
            "clauses": [
                {
                    "kind": c.kind,
                    "required": c.required,
                    "alternatives": [a.describe() for a in c.alternatives],
                    "origin": c.origin,
                }
                for c in self.clauses
            ],
            "exclusions": [e.describe() for e in self.exclusions],
            "notices": self.notices,
        }

    def describe(self) -> str:
        parts = [c.describe() for c in self.clauses] + [f"-{e.describe()}" for e in self.exclusions]
        return " ".join(parts) if parts else "(nothing to search for)"


@dataclass
class _Token:
    kind: str  # word, phrase, or
    text: str
    sign: str | None
    field: str | None
    start: int
    end: int


# Anything that could make a query more than plain words: quotes, parentheses, a leading + or -,
# an uppercase OR, or a field prefix.
_OPERATOR_HINT = re.compile(r"""["()]|(?:^|\s)[+-]|\bOR\b|(?i:\b(?:title|body):)""")
_CONTROL_TO_SPACE = {i: " " for i in [*range(32), *range(0x7F, 0xA0)]}
_SCAN = re.compile(
    r"""(?P<space>\s+)|(?P<paren>[()])|(?P<sign>[+-])?(?P<field>(?i:title|body):)?"""
    r"""(?:"(?P<phrase>[^"]*)(?P<close>"?)|(?P<word>[^\s"()]+))?"""
)


def _clean(text: str) -> str:
    """Unicode NFC; control characters count as spaces; over-long input is cut (with a notice)."""
    return unicodedata.normalize("NFC", text[:MAX_QUERY_CHARS].translate(_CONTROL_TO_SPACE))


def _tokens(q: str, notices: list[str]) -> tuple[list[_Token], list[int]]:
    tokens: list[_Token] = []
    parens: list[int] = []
    pos, n = 0, len(q)
    while pos < n:
        m = _SCAN.match(q, pos)
        start, end = m.start(), m.end()
        if end == start:  # cannot happen with the pattern above; guard against an endless loop
            end = start + 1
        pos = end
        if m.group("space"):
            continue
        if m.group("paren"):
            parens.append(start)
            continue
        sign, fld = m.group("sign"), m.group("field")
        if m.group("phrase") is not None:
            if not m.group("close"):
                quote_at = q.index('"', start)
                notices.append(
                    f"unclosed quote at position {quote_at}: read the rest of the query as the phrase"
                )
            tokens.append(
                _Token("phrase", m.group("phrase"), sign, fld.lower()[:-1] if fld else None, start, end)
            )
        elif m.group("word") is not None:
            text = m.group("word")
            kind = "or" if text == "OR" and sign is None and fld is None else "word"
            tokens.append(_Token(kind, text, sign, fld.lower()[:-1] if fld else None, start, end))
        elif fld:
            notices.append(f"ignored '{q[start:end]}' at position {start}: nothing follows the field name")
        elif sign:
            notices.append(f"ignored a lone '{sign}' at position {start}")
    return tokens, parens


def _has_operator(tokens: list[_Token]) -> bool:
    return any(t.kind in ("or", "phrase") or t.sign or t.field for t in tokens)


def _item(tok: _Token) -> Item:
    return Phrase(tok.text.strip(), tok.field) if tok.kind == "phrase" else Word(tok.text, tok.field)


def _searchable(tok: _Token) -> bool:
    return bool(_WORD_CHARS.search(tok.text))


def parse_query(text: str, strict: bool = False) -> ParsedQuery:
    """Read a query in kenning's dialect. Raises QuerySyntaxError only for parentheses used with
    operators; every other input gets a documented best reading, with notices."""
    parsed = ParsedQuery(text=text, strict=strict)
    if len(text) > MAX_QUERY_CHARS:
        parsed.notices.append(f"query cut to its first {MAX_QUERY_CHARS} characters")
    q = _clean(text)
    if not _OPERATOR_HINT.search(q):  # plain words only: nothing to tokenize but whitespace
        for m in re.finditer(r"\S+", q):
            if _WORD_CHARS.search(m.group()):
                parsed.clauses.append(
                    Clause([Word(m.group())], strict, "required" if strict else "plain", m.group())
                )
        return parsed
    tokens, parens = _tokens(q, parsed.notices)
    if parens and _has_operator(tokens):
        raise QuerySyntaxError(
            "parentheses are not supported; rewrite without them, e.g. '(A OR B) -C' as 'A OR B -C'",
            parens[0],
        )
    groups: list[list[_Token]] = []
    pending_or: _Token | None = None
    for tok in tokens:
        if tok.kind == "or":
            if not groups or pending_or is not None:
                parsed.notices.append(f"ignored 'OR' at position {tok.start}: nothing to join before it")
            else:
                pending_or = tok
            continue
        if not _searchable(tok):
            if pending_or is not None:
                parsed.notices.append(
                    f"ignored 'OR' at position {pending_or.start}: nothing to join after it"
                )
                pending_or = None
            continue  # punctuation only: matches nothing
        if tok.sign == "-":
            parsed.exclusions.append(_item(tok))
            if pending_or is not None:
                parsed.notices.append(
                    f"ignored 'OR' at position {pending_or.start}: an exclusion cannot be an alternative"
                )
                pending_or = None
            continue
        if pending_or is not None:
            groups[-1].append(tok)
            pending_or = None
        else:
            groups.append([tok])
    if pending_or is not None:
        parsed.notices.append(f"ignored 'OR' at position {pending_or.start}: nothing to join after it")

    for group in groups:
        origin = q[group[0].start : group[-1].end]
        items = [_item(t) for t in group]
        if len(group) > 1:
            member_required = all(t.sign == "+" or t.kind == "phrase" or t.field for t in group)
            parsed.clauses.append(Clause(items, strict or member_required, "or", origin))
            continue
        tok = group[0]
        if tok.field:
            parsed.clauses.append(Clause(items, True, "field", origin))
        elif tok.kind == "phrase":
            parsed.clauses.append(Clause(items, True, "phrase", origin))
        elif tok.sign == "+" or strict:
            parsed.clauses.append(Clause(items, True, "required", origin))
        else:
            parsed.clauses.append(Clause(items, False, "plain", origin))
    if not parsed.clauses and parsed.exclusions:
        parsed.notices.append("the query only excludes; add a word to search for")
    return parsed
