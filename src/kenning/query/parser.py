"""The query dialect: a small web-search-style language, parsed into clauses the pipeline can run.

    word            soft: ranked by BM25 with coordination (required with --strict)
    "exact phrase"  required; the words must be adjacent (checked on token positions)
    +word           required term
    -word -"phrase" excluded
    A OR B          a disjunction group (uppercase OR); the group counts as one clause
    title:word      required in that field (also body:, and title:"a phrase")

Operators apply only where they are unambiguous; everything else is read as words, so no input ever
raises (docs/query-language.md has the full policy):
- quotes pair left to right; an odd last quote is a plain character, not a phrase to the end.
- `+` and `-` are operators at the start of a word when a letter or a balanced quote follows: `-5`,
  `--x`, `e-mail` and `fault-tolerance` are words. A lone `+` or `-` is ignored, with a notice.
- a field applies only for a known field name (`title:`, `body:`) with a value right after it; any
  other `name:value` is words.
- parentheses group nothing: they separate words, like spaces.
- an `OR` with nothing on one side is ignored; words with no letters or digits match nothing;
  control characters count as spaces; over-long input is cut. Each gives a notice where it matters.

Given the glossary's terms of several words (`phrases`), a run of words that spells one ("content
type", "Content Types") is read as one word, so the plan can find its group: the longest term first,
from the left. The run's words must be alike (all plain, all `+`, or all in one field); a quote or a
negation ends a run, so `"content" type` and `content -type` stay as typed.

A constraint that empties the result is not the end of the search: see kenning.search.relax.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from kenning.common.unicode import has_surrogates, well_formed

_WORD_CHARS = re.compile(r"\w")
MAX_QUERY_CHARS = 10_000


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


FIELDS = ("title", "body")
SYNTAXES = ("dialect", "plain")
_FIELD = re.compile(r"(?i:title|body):")
_CONTROL_TO_SPACE = {i: " " for i in [*range(32), *range(0x7F, 0xA0)]}
_MAX_PHRASE_WORDS = 8  # the longest run of words read as one glossary term
_SEPARATORS = frozenset("()")  # parentheses group nothing: they separate words like spaces
# runs of separators, and of a word's characters up to a separator or a quote (regex \s is exactly
# str.isspace, so these agree with `_separator` character by character)
_SEPARATOR_RUN = re.compile(r"[\s()]*")
_WORD_RUN = re.compile(r'[^\s()"]*')
_OPERATOR_CHARS = re.compile(r'["+\-:]')  # without any of these a query is read word by word
_WORD_OR_SIGN_RUN = re.compile(r"[^\s()]+")


def _clean(text: str) -> str:
    """Unicode NFC; control characters count as spaces; over-long input is cut (with a notice)."""
    return unicodedata.normalize("NFC", text[:MAX_QUERY_CHARS].translate(_CONTROL_TO_SPACE))


def _separator(ch: str) -> bool:
    return ch.isspace() or ch in _SEPARATORS


def _quote_pairs(q: str, notices: list[str]) -> dict[int, int]:
    """Opening quote position -> closing quote position, pairing quotes left to right. An odd last
    quote has no partner: it is read as a plain character (words stay words)."""
    quotes = [i for i, ch in enumerate(q) if ch == '"']
    if len(quotes) % 2:
        notices.append(f"unmatched quote at position {quotes[-1]}: read as a plain character")
    return dict(zip(quotes[0::2], quotes[1::2], strict=False))


def _operand_at(q: str, i: int, pairs: dict[int, int]) -> bool:
    """Whether a sign before position i is an operator: a letter, a balanced quote or a field follows.
    A digit does not (`-5` is a number), nor another sign (`--strict` is a word)."""
    if i >= len(q):
        return False
    ch = q[i]
    return i in pairs or (_WORD_CHARS.match(ch) is not None and not ch.isdigit())


def _tokens(q: str, notices: list[str]) -> list[_Token]:
    """Split a query into words, phrases and OR markers (`_scan_tokens`). A query without a quote,
    a sign or a colon holds words and OR markers only, found by one regular expression."""
    if not _OPERATOR_CHARS.search(q):
        return [
            _Token("or" if m.group() == "OR" else "word", m.group(), None, None, m.start(), m.end())
            for m in _WORD_OR_SIGN_RUN.finditer(q)
        ]
    return _scan_tokens(q, notices)


def _scan_tokens(q: str, notices: list[str]) -> list[_Token]:
    """Split a query into words, phrases and OR markers, applying operators only where they are
    unambiguous: balanced quotes, a sign at the start of a word followed by a letter or a quote, and
    a known field name followed by a value."""
    pairs = _quote_pairs(q, notices)
    if q.count('"') % 2:  # the unmatched quote separates words, like a space
        last = q.rindex('"')
        q = f"{q[:last]} {q[last + 1 :]}"
    tokens: list[_Token] = []
    pos, n = 0, len(q)
    while True:
        pos = _SEPARATOR_RUN.match(q, pos).end()  # type: ignore[union-attr]  (matches the empty string)
        if pos >= n:
            break
        start = pos
        sign = None
        if q[pos] in "+-":
            if pos + 1 >= n or _separator(q[pos + 1]):
                notices.append(f"ignored a lone '{q[pos]}' at position {pos}")
                pos += 1
                continue
            if _operand_at(q, pos + 1, pairs):
                sign, pos = q[pos], pos + 1
        fld = None
        field_match = _FIELD.match(q, pos)
        if field_match:
            after = field_match.end()
            if after >= n or _separator(q[after]):
                notices.append(
                    f"ignored '{q[start:after]}' at position {start}: nothing follows the field name"
                )
                pos = after
                continue
            if _operand_at(q, after, pairs) or q[after].isdigit():
                fld, pos = field_match.group()[:-1].lower(), after
        if pos in pairs:  # a balanced phrase
            close = pairs[pos]
            tokens.append(_Token("phrase", q[pos + 1 : close], sign, fld, start, close + 1))
            pos = close + 1
            continue
        end = _WORD_RUN.match(q, pos).end()  # type: ignore[union-attr]
        while end < n and q[end] == '"' and end not in pairs:  # a quote inside a word, not a phrase's
            end = _WORD_RUN.match(q, end + 1).end()  # type: ignore[union-attr]
        text = q[pos:end]
        kind = "or" if text == "OR" and sign is None and fld is None else "word"
        tokens.append(_Token(kind, text, sign, fld, start, end))
        pos = end
    return tokens


def _item(tok: _Token) -> Item:
    return Phrase(tok.text.strip(), tok.field) if tok.kind == "phrase" else Word(tok.text, tok.field)


def _searchable(tok: _Token) -> bool:
    return bool(_WORD_CHARS.search(tok.text))


def _join_phrases(tokens: list[_Token], phrases) -> list[_Token]:
    """Runs of alike words that spell a glossary term of several words, each joined into one word
    (longest first, from the left); every other token as it was."""
    out: list[_Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        run = [tok]
        if tok.kind == "word" and tok.sign != "-":
            for nxt in tokens[i + 1 : i + _MAX_PHRASE_WORDS]:
                if nxt.kind != "word" or (nxt.sign, nxt.field) != (tok.sign, tok.field):
                    break
                run.append(nxt)
        n = phrases.longest([t.text for t in run]) if len(run) > 1 else 0
        if n > 1:
            text = " ".join(t.text for t in run[:n])
            out.append(_Token("word", text, tok.sign, tok.field, tok.start, run[n - 1].end))
            i += n
        else:
            out.append(tok)
            i += 1
    return out


def _plain_clauses(q: str, strict: bool, phrases) -> list[Clause]:
    """Every piece with a letter or digit, as a plain word: no operators at all (a glossary term of
    several words is still one word)."""
    tokens = [
        _Token("word", m.group(), None, None, m.start(), m.end())
        for m in re.finditer(r"[^\s()]+", q)
        if _WORD_CHARS.search(m.group())
    ]
    if phrases is not None:
        tokens = _join_phrases(tokens, phrases)
    return _word_clauses(q, tokens, strict)


def _word_clauses(q: str, tokens: list[_Token], strict: bool) -> list[Clause]:
    """A clause for each word with a letter or digit (punctuation alone matches nothing): soft, or
    required with --strict."""
    kind = "required" if strict else "plain"
    return [Clause([Word(t.text)], strict, kind, q[t.start : t.end]) for t in tokens if _searchable(t)]


def _grouped_clauses(q: str, tokens: list[_Token], strict: bool, parsed: ParsedQuery) -> None:
    """Tokens into `parsed`'s clauses and exclusions: words joined by OR make one group, a `-` word
    or phrase is an exclusion, and each group becomes a plain, required, phrase, field or OR clause;
    an OR with nothing to join is noted and ignored."""
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


def parse_query(text: str, strict: bool = False, syntax: str = "dialect", phrases=None) -> ParsedQuery:
    """Read a query. Never raises: every input gets a documented reading, with notices.

    syntax "dialect" applies the operators where they are unambiguous; "plain" reads every piece of
    text as a word (what `kenning eval` sends by default, as every peer system does). `phrases`
    (kenning.glossary.expansion.GlossaryPhrases) finds the glossary terms of several words.
    """
    if syntax not in SYNTAXES:
        raise ValueError(f"syntax must be one of {', '.join(SYNTAXES)}, got {syntax!r}")
    if has_surrogates(text):  # bytes that were not UTF-8 (a terminal's \xff), or a lone "\ud800"
        text = well_formed(text)
        notices = ["the query held characters that are not text: each became U+FFFD"]
    else:
        notices = []
    parsed = ParsedQuery(text=text, strict=strict)
    parsed.notices.extend(notices)
    if len(text) > MAX_QUERY_CHARS:
        parsed.notices.append(f"query cut to its first {MAX_QUERY_CHARS} characters")
    q = _clean(text)
    if syntax == "plain":
        parsed.clauses = _plain_clauses(q, strict, phrases)
        return parsed
    tokens = _tokens(q, parsed.notices)
    if phrases is not None:
        tokens = _join_phrases(tokens, phrases)
    if all(t.kind == "word" and t.sign is None and t.field is None for t in tokens):
        parsed.clauses = _word_clauses(q, tokens, strict)  # words alone: each its own clause
        return parsed
    _grouped_clauses(q, tokens, strict, parsed)
    if not parsed.clauses and parsed.exclusions:
        parsed.notices.append("the query only excludes; add a word to search for")
    return parsed
