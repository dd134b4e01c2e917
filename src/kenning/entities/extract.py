"""Entity extraction at index time: what a chunk is about, as keys the graph can count.

Four kinds, all without a model:
- name: runs of capitalised words inside a sentence ("Marie Curie", "Van Gogh", "Zürich"), the
  whole run (two to four words) and each of its words; a capitalised word that only ever opens a
  sentence in this chunk is not taken on its own (it is capitalised because it comes first);
- code: identifiers in source code and in Markdown backticks with two or more parts
  (`parseQueryString`, `max_retries`, `HttpClient`);
- tag: front-matter `tags`, `keywords` and `categories`;
- glossary: the canonical term of any glossary group one of whose members occurs in the chunk.

Keys are case- and accent-folded words joined by one space ("marie curie"), so a query typed
without accents meets the text that has them. EXTRACTOR_VERSION names these rules: when they change,
the next `kenning index` extracts every chunk again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kenning.analysis.analyzer import fold, identifier_parts
from kenning.analysis.stopwords import ENGLISH_QUERY_STOPWORDS

EXTRACTOR_VERSION = 1
MAX_NAME_WORDS = 4

_WORD = re.compile(r"[^\W\d_]+")
_WORD_SPLIT = re.compile(r"([^\W\d_]+)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_SENTENCE_END = set('.!?:;"“”«»()[]—–-*#>|')
# lower-case words that may sit inside a name: "Duke of Wellington", "Ludwig van Beethoven"
_PARTICLES = {"of", "de", "du", "da", "del", "della", "di", "van", "von", "der", "den", "la", "le", "y"}
# capitalised words that are never a name on their own (titles, pronouns, months and the like)
NOT_NAMES = set(ENGLISH_QUERY_STOPWORDS) | {
    "mr",
    "mrs",
    "miss",
    "ms",
    "dr",
    "sir",
    "madam",
    "madame",
    "monsieur",
    "mademoiselle",
    "mme",
    "mlle",
    "st",
    "captain",
    "professor",
    "doctor",
    "lord",
    "lady",
    "oh",
    "ah",
    "yes",
    "no",
    "chapter",
    "note",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
}
# abbreviations whose full stop does not end a sentence: "Dr. Smith", "M. Dupont"
_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "m",
    "mme",
    "mlle",
    "prof",
    "capt",
    "col",
    "gen",
    "lt",
    "rev",
}
TAG_KEYS = ("tags", "keywords", "categories")


def entity_key(words: Iterable[str]) -> str:
    return " ".join(fold(w) for w in words)


def extract(body: str, meta: dict | None = None, glossary: GlossaryMatcher | None = None) -> dict[str, tuple]:
    """{key: (surface, kind)} for one chunk's text and metadata."""
    found: dict[str, tuple[str, str]] = {}
    meta = meta or {}
    if meta.get("language"):
        _code_identifiers(body, found)
    else:
        _names(body, found)
        for span in _BACKTICKED.findall(body):
            _code_identifiers(span, found)
    for tag in _tags(meta.get("front_matter")):
        found.setdefault(entity_key(tag.split()), (tag, "tag"))
    if glossary is not None:
        for canonical in glossary.canonicals_in(body):
            found.setdefault(entity_key(canonical.split()), (canonical, "glossary"))
    return found


def _names(text: str, found: dict) -> None:
    """Runs of capitalised words (see the module docstring). Only a word with a capital can start a
    name, so the walk jumps from one to the next and reads the words between only inside a run;
    whether a word opens a sentence is worked out for the words that ask."""
    if text.islower():  # no capital letter anywhere (a C-level check): no name can start
        return
    parts = _WORD_SPLIT.split(text)  # gap, word, gap, word, ..., gap
    words, gaps = parts[1::2], parts[0:-1:2]  # gaps[i]: the text just before words[i]
    starts = [i for i, w in enumerate(words) if w[0].isupper()]  # where a name may start
    opened: dict[int, bool] = {}

    def opens(i: int) -> bool:
        """Whether words[i] opens a sentence (or a line)."""
        first = opened.get(i)
        if first is None:
            before = gaps[i]
            if i == 0 or "\n" in before:
                first = True
            elif _SENTENCE_END.isdisjoint(before):
                first = False
            else:  # "Dr. Smith": a full stop after a title does not open a sentence
                first = not (before.strip() == "." and fold(words[i - 1]) in _ABBREVIATIONS)
            opened[i] = first
        return first

    def next_is_name(i: int) -> bool:
        if i + 1 >= len(words) or opens(i + 1):
            return False
        following = words[i + 1]
        return _capitalised(following) and fold(following) not in NOT_NAMES

    # capitalised words seen inside a sentence: names wherever they stand
    inside = {
        fold(words[i]) for i in starts if not (opens(i) or words[i].islower()) and _capitalised(words[i])
    }
    run: list[str] = []

    def close() -> None:
        while run and (fold(run[-1]) in _PARTICLES or fold(run[-1]) in NOT_NAMES):
            run.pop()
        kept = [w for w in run if fold(w) not in _PARTICLES]
        if len(run) >= 2 and len(run) <= MAX_NAME_WORDS:
            found.setdefault(entity_key(run), (" ".join(run), "name"))
        for w in kept:
            key = fold(w)
            if len(key) >= 2 and key not in NOT_NAMES:
                found.setdefault(key, (w, "name"))
        run.clear()

    i, k = 0, 0
    while True:
        if not run:  # outside a name only a capitalised word matters: go to the next one
            while k < len(starts) and starts[k] < i:
                k += 1
            if k == len(starts):
                break
            i = starts[k]
        if i >= len(words):
            break
        word = words[i]
        i += 1
        folded = word if word.islower() and word.isascii() else fold(word)
        if opens(i - 1) and run:
            close()
        if folded == "s" and gaps[i - 1][-1:] in ("'", "’"):  # a possessive ends the name
            if run:
                close()
            continue
        if _capitalised(word):
            if not run and folded in NOT_NAMES:
                continue
            if opens(i - 1) and folded not in inside and not next_is_name(i - 1):
                continue  # capitalised only because it opens the sentence
            run.append(word)
        elif run and folded in _PARTICLES and next_is_name(i - 1):
            run.append(word)
        elif run:
            close()
    if run:
        close()


def _capitalised(word: str) -> bool:
    return word[0].isupper() and (len(word) == 1 or not word[1:].islower() or word[1:].isalpha())


def _code_identifiers(text: str, found: dict) -> None:
    for ident in _IDENTIFIER.findall(text):
        if len(ident) >= 4 and identifier_parts(ident):
            found.setdefault(fold(ident), (ident, "code"))


def _tags(front_matter) -> list[str]:
    if not isinstance(front_matter, dict):
        return []
    out: list[str] = []
    for key in TAG_KEYS:
        value = front_matter.get(key)
        items = value if isinstance(value, list) else str(value or "").split(",")
        out += [str(v).strip() for v in items if isinstance(v, str) and str(v).strip()]
    return out


class GlossaryMatcher:
    """Finds glossary members in text (folded word sequences) and answers with their canonical term."""

    def __init__(self, groups: dict[str, list[str]]):
        """`groups`: canonical term -> its members (the canonical included)."""
        self.by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for canonical, members in groups.items():
            for member in members:
                words = tuple(fold(w) for w in _WORD.findall(member))
                if words:
                    self.by_first.setdefault(words[0], []).append((words, canonical))

    def canonicals_in(self, text: str) -> set[str]:
        words = [fold(w) for w in _WORD.findall(text)]
        out = set()
        for i, word in enumerate(words):
            for phrase, canonical in self.by_first.get(word, ()):
                if tuple(words[i : i + len(phrase)]) == phrase:
                    out.add(canonical)
        return out

    def __bool__(self) -> bool:
        return bool(self.by_first)
