"""Protected terms: words the synonym miners must never put into a group.

Three kinds of word are protected, because clustering them by similarity does more harm than good
(`OTP` is not a spelling of `opt`, a project codename is not a synonym of the common noun it looks
like, `Monday` is not a synonym of `Tuesday` although they share every context):

- **acronym**: an upper-case token of 2 to 8 letters and digits that starts with a letter and has at
  least two capitals (`JWT`, `OTP`, `TLS`, `HTTP2`), optionally with a plural `s` (`APIs`).
- **identifier**: a code identifier: snake_case (`parse_query`, `MAX_SIZE`, `__init__`) or camelCase /
  PascalCase with an internal lower-to-upper step (`parseQueryString`, `HttpServer`).
- **proper-noun**: a word that is capitalised in nearly all of its mid-sentence occurrences in the
  indexed text. There is no general English word list on the machine, so the corpus decides: a word
  is a proper noun when it was seen mid-sentence (not after `.`, `!`, `?`, `:`, a quote, a bracket or a
  blank line, where any word may be capitalised) at least `MIN_MID_SENTENCE` times, at least
  `PROPER_RATIO` of those times capitalised, and it is neither a stopword nor a title (`Madame`,
  `Professor`, `Count`: general words that prefix names). `Beethoven` is a proper noun wherever it
  is written; `count` is not (a text says "the count" far more often than "the Count").

Protected terms still match exactly and through the analyzer's normalisation (case, accents,
stemming). The distributional and morphological miners skip them. Two miners may still pair them,
because they read a relation stated in the text rather than guess from similarity: acronym
definitions ("JSON Web Token (JWT)") and name variants (a full name and the parts or titles it is
written with). A person may add any term by hand; it keeps its protected flag.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kenning.analysis.analyzer import fold
from kenning.analysis.stopwords import ENGLISH_QUERY_STOPWORDS

ACRONYM_RE = re.compile(r"^(?=(?:[^A-Z]*[A-Z]){2})[A-Z][A-Z0-9]{1,7}s?$")
SNAKE_RE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$|^__[A-Za-z0-9]+__$")
CAMEL_RE = re.compile(r"^[A-Za-z][a-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*$")

MIN_MID_SENTENCE = 3
PROPER_RATIO = 0.9

# Words that prefix a name ("Madame de Staël", "Dr. Jane Goodall", "the Duke of Wellington").
# They are general words, so never proper nouns themselves. The value is the gender and marital class
# the title implies: m(ale), f(emale, married), u(nmarried female), or - (says neither).
TITLES: dict[str, str] = {
    **dict.fromkeys(["mr", "m", "monsieur", "sir", "lord", "signor", "senor", "herr", "don"], "m"),
    **dict.fromkeys(["count", "comte", "baron", "viscount", "vicomte", "marquis", "duke", "prince"], "m"),
    **dict.fromkeys(["king", "emperor", "father", "brother", "abbe", "abbot", "master"], "m"),
    **dict.fromkeys(["mrs", "mme", "madame", "madam", "lady", "countess", "comtesse", "baroness"], "f"),
    **dict.fromkeys(["marquise", "marchioness", "duchess", "princess", "queen", "signora", "frau"], "f"),
    **dict.fromkeys(["miss", "mlle", "mademoiselle", "signorina", "fraulein"], "u"),
    **dict.fromkeys(["ms", "dr", "doctor", "professor", "prof", "captain", "colonel", "general"], "-"),
    **dict.fromkeys(["lieutenant", "major", "sergeant", "judge", "saint", "st", "sister", "mother"], "-"),
    **dict.fromkeys(["president", "senator", "governor", "reverend", "rev", "inspector", "admiral"], "-"),
    **dict.fromkeys(["duc", "earl", "cardinal", "pope", "bishop", "pasha", "bey", "vizier", "sultan"], "m"),
    **dict.fromkeys(["czar", "tsar", "archduke"], "m"),
    **dict.fromkeys(["duchesse", "empress", "czarina", "tsarina"], "f"),
}
# Titles written as abbreviations, which a dot may follow inside a name ("Dr. Jane Goodall").
ABBREVIATED_TITLES = frozenset(["mr", "mrs", "ms", "m", "mme", "mlle", "dr", "st", "prof", "rev"])
# Lower-case words that may join the parts of one name: "Ludwig van Beethoven", "Duke of Wellington".
NAME_PARTICLES = frozenset(["de", "du", "des", "d", "of", "van", "von", "der", "den", "la", "le", "da", "di"])


def protected_reason(word: str) -> str | None:
    """Why the shape of `word` alone protects it: "acronym", "identifier", or None.

    `JWT` -> acronym, `parse_query` / `parseQueryString` -> identifier, `opt` / `Opt` / `sign-in` -> None.
    """
    word = word.strip()
    if not word or any(c.isspace() for c in word):
        return None
    if ACRONYM_RE.match(word):
        return "acronym"
    if SNAKE_RE.match(word) or CAMEL_RE.match(word):
        return "identifier"
    return None


def is_title(word: str) -> bool:
    return fold(word).rstrip(".") in TITLES


@dataclass
class CaseStats:
    """How a corpus writes each word, counted by its case- and accent-folded form.

    `capital_mid` / `lower_mid`: mid-sentence occurrences written Capitalised / lower-case;
    `upper`: occurrences written in capitals (an acronym shape); `total`: every occurrence.
    """

    capital_mid: Counter = field(default_factory=Counter)
    lower_mid: Counter = field(default_factory=Counter)
    upper: Counter = field(default_factory=Counter)
    total: Counter = field(default_factory=Counter)

    def add(self, raw: str, mid_sentence: bool) -> None:
        """Count one occurrence of a word as written (`raw`), and whether it stood mid-sentence."""
        key = fold(raw)
        self.total[key] += 1
        if ACRONYM_RE.match(raw):
            self.upper[key] += 1
            return
        if not mid_sentence or not raw[:1].isalpha():
            return
        if raw[0].isupper():
            self.capital_mid[key] += 1
        elif raw[0].islower():
            self.lower_mid[key] += 1

    def update(self, other: CaseStats) -> None:
        self.capital_mid.update(other.capital_mid)
        self.lower_mid.update(other.lower_mid)
        self.upper.update(other.upper)
        self.total.update(other.total)

    def is_proper_noun(self, word: str) -> bool:
        key = fold(word)
        if len(key) < 2 or key in ENGLISH_QUERY_STOPWORDS or key in TITLES or not key[:1].isalpha():
            return False
        cap, low = self.capital_mid[key], self.lower_mid[key]
        return cap + low >= MIN_MID_SENTENCE and cap >= PROPER_RATIO * (cap + low)

    def mostly_acronym(self, word: str) -> bool:
        """Written as an acronym in most of its occurrences (`OTP` even where a line starts with it)."""
        key = fold(word)
        total = self.total[key]
        return total > 0 and self.upper[key] >= 0.6 * total

    def reason(self, word: str) -> str | None:
        """Why a single word is protected in this corpus (shape first, then usage), or None."""
        shape = protected_reason(word)
        if shape:
            return shape
        if self.mostly_acronym(word):
            return "acronym"
        if self.is_proper_noun(word):
            return "proper-noun"
        return None

    def phrase_reason(self, phrase: str) -> str | None:
        """A term of several words is protected as a proper noun when it is a name: every word is a
        proper noun, a title or a name particle, and at least one is a proper noun ("Ludwig van
        Beethoven", "Dr. Jane Goodall"). A single word gets `reason`."""
        words = WORD_RE.findall(phrase)
        if len(words) == 1:
            return self.reason(words[0])
        if not words:
            return None
        proper = [self.is_proper_noun(w) for w in words]
        others_ok = all(
            p or is_title(w) or fold(w) in NAME_PARTICLES for w, p in zip(words, proper, strict=True)
        )
        return "proper-noun" if any(proper) and others_ok else None


# A word for case statistics: letters and digits, with inner hyphens, apostrophes and underscores.
WORD_RE = re.compile(r"[^\W_]+(?:(?:[-'’]|_+)[^\W_]+)*")
# What may stand between two words for the second to count as mid-sentence: spaces, one line break,
# and at most a comma or semicolon. Anything else (., !, ?, :, quotes, brackets, a blank line,
# Markdown marks) may legitimately be followed by a capital.
MID_GAP_RE = re.compile(r"[ \t]*[,;]?[ \t]*\n?[ \t]*")


def iter_words(text: str) -> Iterable[tuple[str, int, int, bool]]:
    """(word, start, end, mid_sentence) for every word of a text; a possessive `'s` is cut off."""
    prev_end = None
    for m in WORD_RE.finditer(text):
        word, start, end = m.group(), m.start(), m.end()
        if len(word) > 2 and word[-2] in "'’" and word[-1] in "sS":
            word, end = word[:-2], end - 2
        mid = prev_end is not None and MID_GAP_RE.fullmatch(text, prev_end, start) is not None
        yield word, start, end, mid
        prev_end = m.end()


def case_stats(texts: Iterable[str]) -> CaseStats:
    """Case statistics of every word in some texts."""
    stats = CaseStats()
    for text in texts:
        for word, _start, _end, mid in iter_words(text):
            stats.add(word, mid)
    return stats
