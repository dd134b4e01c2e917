"""Text analysis: the one place where raw text becomes index terms.

The same Analyzer runs at index time and at query time, so a query matches exactly what was indexed:
Unicode NFC, case folding, accent folding (`cafe` matches `Café`), identifier splitting
(`parseQueryString` is also indexed as `parse`, `query`, `string`), CJK bigrams, and optional
Snowball English stemming. Stopwords are removed from queries only, never from the index.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

import Stemmer

from kenning.analysis.stopwords import ENGLISH_QUERY_STOPWORDS

# A token is a run of letters and digits, joined by inner underscores (snake_case stays one token,
# but Markdown _emphasis_ does not keep its underscores); apostrophes split it ("don't" -> don, t).
TOKEN_RE = re.compile(r"[^\W_]+(?:_+[^\W_]+)*")
# the same pattern for ASCII text, where the word characters are ASCII letters and digits: cheaper
# than the Unicode classes, and ASCII needs no normalising (see raw_tokens)
_ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)*")
# an ASCII word whose only capital, if any, is its first letter, with no underscore: it folds by
# lowercasing and has no identifier parts, so it is one term (Analyzer.plain_word_terms)
_PLAIN_WORD = r"[A-Za-z0-9][a-z0-9]*"
_PLAIN_ASCII_WORD = re.compile(_PLAIN_WORD)
_PLAIN_ASCII_LINES = re.compile(rf"{_PLAIN_WORD}(?:\n{_PLAIN_WORD})*")  # one such word a line
_DIGIT = re.compile("[0-9]")
# plain words whose terms an analyzer keeps: ~140 bytes each, 70 MB at most in each process that
# builds segments, and a corpus's commonest words are met first. A large corpus has a few hundred
# thousand such words past its first segments; a smaller bound would have every later segment stem
# the words beyond it again, so the bound is set above that
PLAIN_TERMS_KEPT = 500_000
# combining marks and CJK scripts: patterns over wide ranges of code points, compiled when a text
# first needs them (compiling them costs about a tenth of importing kenning; plain ASCII text never
# needs them)
_COMBINING_MARKS = "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
# lowerUpper, UPPERLower and letter/digit boundaries inside identifiers.
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"


@functools.cache
def _pattern(ranges: str) -> re.Pattern:
    return re.compile(ranges)


# ASCII text with no underscore: every character that is not a letter or digit becomes a space, and
# the tokens are what split() leaves (the same tokens as the pattern, for less work)
_ASCII_SEPARATORS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})


def raw_tokens(text: str) -> list[str]:
    """The raw tokens of a text: TOKEN_RE over its NFC form (tests/search/test_analysis.py holds
    them equal)."""
    if text.isascii():
        if "_" not in text:
            return text.translate(_ASCII_SEPARATORS).split()
        return _ASCII_TOKEN_RE.findall(text)
    return TOKEN_RE.findall(unicodedata.normalize("NFC", text))


def fold(token: str) -> str:
    """Case- and accent-fold one token: `Café` -> `cafe`, `ﬁnal` -> `final`."""
    if token.isascii():  # no marks to strip, and NFKD and NFC change no ASCII character
        return token.lower()
    folded = unicodedata.normalize("NFKD", token.casefold())
    folded = _pattern(_COMBINING_MARKS).sub("", folded)
    return unicodedata.normalize("NFC", folded)


def identifier_parts(token: str) -> list[str]:
    """Split a code identifier into its words: `parseQueryString` -> [parse, Query, String].

    Returns [] when the token is not a compound identifier.
    """
    pieces = [p for p in token.split("_") if p]
    parts: list[str] = []
    for piece in pieces:
        parts.extend(p for p in _CAMEL_BOUNDARY.split(piece) if p)
    return parts if len(parts) > 1 else []


def cjk_bigrams(token: str) -> list[str]:
    """Overlapping character bigrams for a run of CJK text, which has no spaces between words."""
    if len(token) < 2:
        return [token]
    return [token[i : i + 2] for i in range(len(token) - 1)]


@dataclass(frozen=True)
class AnalyzerConfig:
    """Settings that decide which terms an index holds; stored with the index."""

    stem: bool = True
    language: str = "english"

    def to_dict(self) -> dict:
        return {"stem": self.stem, "language": self.language}

    @classmethod
    def from_dict(cls, data: dict) -> AnalyzerConfig:
        if not isinstance(data, dict):
            raise TypeError(f"analyzer settings are an object, not a {type(data).__name__}")
        return cls(stem=bool(data.get("stem", True)), language=str(data.get("language", "english")))


class Analyzer:
    """Turns text into terms. Caches each distinct raw token's terms, since text repeats its words."""

    def __init__(self, config: AnalyzerConfig | None = None):
        self.config = config or AnalyzerConfig()
        self._stemmer = Stemmer.Stemmer(self.config.language) if self.config.stem else None
        if self._stemmer is not None:
            # PyStemmer's own cache (10,000 words) is turned off: the analyzer keeps terms itself, and
            # the words an index build meets are mostly new, so that cache would only add its own
            # upkeep to every word stemmed (several times the cost of stemming the word)
            self._stemmer.maxCacheSize = 0
        self._cache: dict[str, tuple] = {}
        self._stopword_cache: dict[str, bool] = {}
        self._distinct_cache: dict[str, tuple[str, ...]] = {}
        self._vocab_cache: dict[str, tuple[str, ...]] = {}
        self._plain_terms: dict[str, str] = {}  # plain word -> its term (plain_word_terms)

    def normalize_token(self, folded: str) -> str:
        """A folded word to its index term (stemmed when stemming is on)."""
        if self._stemmer is None or not folded.isalpha():
            return folded
        return self._stemmer.stemWord(folded)

    def token_analysis(self, raw: str) -> tuple[tuple[str, ...], tuple[int, ...], int]:
        """(terms, position offsets, width) for one raw token.

        A plain word is one term at offset 0, width 1. A compound identifier is its whole form at
        offset 0 plus its parts at offsets 0, 1, 2, ..., so the phrase "query string" matches inside
        `parseQueryString`. A CJK run is its bigrams at consecutive offsets.
        """
        cached = self._cache.get(raw)
        if cached is not None:
            return cached
        if not raw.isascii() and _pattern(_CJK).search(raw):
            grams = tuple(fold(b) for b in cjk_bigrams(raw))
            entry = (grams, tuple(range(len(grams))), len(grams))
        else:
            whole = self.normalize_token(fold(raw))
            parts = [self.normalize_token(fold(p)) for p in identifier_parts(raw)]
            if parts:
                entry = ((whole, *parts), (0, *range(len(parts))), len(parts))
            else:
                entry = ((whole,), (0,), 1)
        if len(self._cache) < 500_000:
            self._cache[raw] = entry
        return entry

    def plain_word_terms(self, raws) -> tuple[list[str], list[str], list[str]]:
        """(the plain ASCII words among some raw tokens, their one term each, the other tokens).

        A plain word (letters and digits, a capital only first, no underscore) makes the single term
        `token_analysis` gives it. Each segment of an index build meets ~150k raw tokens new to it,
        mostly the same words again: their terms are kept (up to PLAIN_TERMS_KEPT), and the rest
        found with one lowercasing and one C-level stemming call for the lot (analysing them one by
        one would be a large share of the time to build a segment; tests/search/test_analysis.py holds the
        two ways equal)."""
        raws = list(raws)
        if _PLAIN_ASCII_LINES.fullmatch("\n".join(raws)):  # the common case, tested in one pass
            plain, other = raws, []
        else:
            match = _PLAIN_ASCII_WORD.fullmatch
            plain, other = [], []
            for raw in raws:
                (plain if match(raw) else other).append(raw)
        kept = self._plain_terms
        terms = list(map(kept.get, plain))
        if None in terms:
            new = [raw for raw, term in zip(plain, terms, strict=True) if term is None]
            made = self._plain_terms_of(new)
            if len(kept) + len(new) <= PLAIN_TERMS_KEPT:
                kept.update(zip(new, made, strict=True))
            fill = iter(made)
            terms = [term if term is not None else next(fill) for term in terms]
        return plain, terms, other

    def _plain_terms_of(self, words: list[str]) -> list[str]:
        """The terms of plain words, lowercased and (letters only) stemmed in one call."""
        lines = "\n".join(words)
        folded = lines.lower().split("\n") if words else []
        if self._stemmer is None or not folded:
            return folded
        if not _DIGIT.search(lines):  # letters only: all stemmed
            return self._stemmer.stemWords(folded)
        alpha = [i for i, word in enumerate(folded) if word.isalpha()]
        for i, stem in zip(alpha, self._stemmer.stemWords([folded[i] for i in alpha]), strict=True):
            folded[i] = stem
        return folded

    def token_terms(self, raw: str) -> tuple[str, ...]:
        """All distinct index terms of one raw token, the whole token first."""
        terms = self._distinct_cache.get(raw)
        if terms is None:
            terms = tuple(dict.fromkeys(self.token_analysis(raw)[0]))
            if len(self._distinct_cache) < 500_000:
                self._distinct_cache[raw] = terms
        return terms

    def vocabulary_words(self, raws) -> set[str]:
        """Folded surface words (letters only, 2+ characters, identifier parts too) of some raw tokens:
        what spelling corrections may suggest."""
        out: set[str] = set()
        cache = self._vocab_cache
        for raw in raws:
            words = cache.get(raw)
            if words is None:
                words = ()
                if raw.isalpha():
                    words = tuple(
                        w for w in {fold(raw), *(fold(p) for p in identifier_parts(raw))} if len(w) >= 2
                    )
                if len(cache) < 500_000:
                    cache[raw] = words
            out.update(words)
        return out

    def vocabulary_counts(self, raw_counts: dict[str, int]) -> Counter:
        """The vocabulary words of raw tokens with counts, each word's counts summed. A plain ASCII
        word (letters only, a capital only first) is its own lowercase; only the others are folded
        and split one by one (`vocabulary_words`): that path costs several microseconds a token, and a
        large build meets about a million distinct raw tokens."""
        out: Counter = Counter()
        for raw, n in raw_counts.items():
            if not n:
                continue
            if len(raw) > 1 and raw.isascii() and raw.isalpha() and raw[1:].islower():
                out[raw.lower()] += n
            else:
                for word in self.vocabulary_words((raw,)):
                    out[word] += n
        return out

    def positioned_terms(self, text: str) -> tuple[list[str], list[int]]:
        """Every index term of a text with its position (what the index holds for it)."""
        raws = raw_tokens(text)
        cache = self._cache
        entries = [cache.get(raw) or self.token_analysis(raw) for raw in raws]
        if all(e[2] == 1 for e in entries):  # plain words only: one term per position
            return [e[0][0] for e in entries], list(range(len(entries)))
        terms: list[str] = []
        positions: list[int] = []
        pos = 0
        for token_terms, offsets, width in entries:
            if width == 1:
                terms.append(token_terms[0])
                positions.append(pos)
            else:
                terms.extend(token_terms)
                positions.extend(pos + o for o in offsets)
            pos += width
        return terms, positions

    def terms(self, text: str) -> list[str]:
        """Every index term of a text, in order."""
        return self.positioned_terms(text)[0]

    def query_terms(self, text: str, remove_stopwords: bool = True) -> list[str]:
        """Distinct query terms in order of first appearance, with query-side stopwords removed."""
        return self.analyze_query(text, remove_stopwords)[0]

    def analyze_query(self, text: str, remove_stopwords: bool = True) -> tuple[list[str], list[str]]:
        """(distinct query terms, the words dropped as stopwords).

        If every word is a stopword ("how are you"), the stopwords are kept: returning nothing
        would be worse than ranking on them.
        """
        raws = raw_tokens(text)
        kept, dropped = raws, []
        if remove_stopwords:
            content = [r for r in raws if not self.is_stopword(r)]
            if content:
                kept, dropped = content, [r for r in raws if self.is_stopword(r)]
        seen: dict[str, None] = {}
        for raw in kept:
            for term in self.token_terms(raw):
                seen.setdefault(term, None)
        return list(seen), dropped

    def is_stopword(self, raw: str) -> bool:
        cached = self._stopword_cache.get(raw)
        if cached is None:
            cached = self._stopword_cache[raw] = fold(raw) in ENGLISH_QUERY_STOPWORDS
            if len(self._stopword_cache) > 100_000:
                self._stopword_cache.clear()
        return cached

    def token_spans(self, text: str):
        """(start, end, terms) for each token of raw text, for marking matches in snippets."""
        for m in TOKEN_RE.finditer(text):
            yield m.start(), m.end(), self.token_terms(unicodedata.normalize("NFC", m.group()))
