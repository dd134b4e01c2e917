"""Entity extraction at index time: what a chunk is about, as keys the graph can count.

Four kinds, all without a model:
- name: runs of capitalised words inside a sentence ("Marie Curie", "Van Gogh", "Zürich"), the
  whole run (two to four words) and each of its words. A run holds only words separated by spaces
  (or joined by a hyphen or apostrophe), so "Julie, Julie" and "Italy; Sinbad" are two names, and
  it never repeats a word. A capitalised word that opens a sentence in this chunk and is nowhere
  capitalised inside one here is capitalised perhaps only because it comes first: it is recorded
  under OPENING + its key (and so is a run it opens), and the entity graph keeps it only if the
  corpus shows the word capitalised inside a sentence somewhere (kenning.entities.graph);
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

EXTRACTOR_VERSION = 2
MAX_NAME_WORDS = 4
OPENING = "\x1f"  # prefixes the key of a name whose first word may be capitalised only as an opener

_WORD = re.compile(r"[^\W\d_]+")
_WORD_SPLIT = re.compile(r"([^\W\d_]+)")
_ASCII_WORD_SPLIT = re.compile(r"([A-Za-z]+)")  # the same split of an ASCII text, made faster
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
_SENTENCE_END = set('.!?:;"“”«»()[]—–-*#>|')
_INSIDE_NAME = {"-", "'", "’"}  # what may join two words of one name with no space: "Buda-Pesth"
# lower-case words that may sit inside a name: "Duke of Wellington", "Ludwig van Beethoven"
PARTICLES = {"of", "de", "du", "da", "del", "della", "di", "van", "von", "der", "den", "la", "le", "y"}
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
    "hon",
    "rev",
    "god",  # mostly an exclamation in running text ("thank God", "God knows")
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
    "hon",
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
    parts = (_ASCII_WORD_SPLIT if text.isascii() else _WORD_SPLIT).split(text)  # gap, word, ..., gap
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
            elif _SENTENCE_END.isdisjoint(before) or before in _INSIDE_NAME:
                first = False
            elif before.strip() == "." and (len(words[i - 1]) == 1 or fold(words[i - 1]) in _ABBREVIATIONS):
                first = False  # "Dr. Smith", "Quincey P. Morris": a title's or an initial's full stop
            else:
                first = True
            if not first and words[i - 1].lower() == "s" and gaps[i - 1][-1:] in ("'", "’"):
                first = True  # "Seward's Diary": a word after a possessive is capitalised as a title
            opened[i] = first
        return first

    def joined(i: int) -> bool:
        """Whether words[i] may continue a name begun by words[i - 1]: only spaces between them (or a
        hyphen or apostrophe with no space), and no sentence opening there."""
        gap = gaps[i]
        initial = gap.strip() == "." and len(words[i - 1]) == 1 and words[i - 1].isupper()
        return (gap.isspace() or gap in _INSIDE_NAME or initial) and not opens(i)

    def next_is_name(i: int) -> bool:
        if i + 1 >= len(words) or not joined(i + 1):
            return False
        following = words[i + 1]
        return _capitalised(following) and fold(following) not in NOT_NAMES

    # capitalised words seen inside a sentence: names wherever they stand
    inside = {
        fold(words[i]) for i in starts if not (opens(i) or words[i].islower()) and _capitalised(words[i])
    }
    lowered: set[str] | None = None  # the chunk's lower-case words, worked out when first asked

    def common(folded: str) -> bool:
        """A word this chunk also writes in lower case ("Poor Lucy", "poor man") is a common word."""
        nonlocal lowered
        if lowered is None:
            lowered = {w for w in words if w.islower()}
        return folded in lowered

    run: list[str] = []
    opener = False  # whether run[0] may be capitalised only because it opens a sentence

    def close() -> None:
        nonlocal opener
        while run and ((last := fold(run[-1])) in PARTICLES or last in NOT_NAMES):
            run.pop()
        if opener and run:
            # the opener and any run it begins are kept only where the corpus shows it capitalised
            # inside a sentence; the rest of the run is a name either way ("Happily Van Helsing")
            first = run.pop(0)
            if len(run) + 1 <= MAX_NAME_WORDS:
                found.setdefault(OPENING + entity_key([first, *run]), (" ".join([first, *run]), "name"))
            found.setdefault(OPENING + fold(first), (first, "name"))
            while run and run[0].islower():  # "Happily of ...": a lower-case particle opens no name
                run.pop(0)
        opener = False
        kept = [w for w in run if fold(w) not in PARTICLES]
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
        if run and not joined(i - 1):
            close()
        if folded == "s" and gaps[i - 1][-1:] in ("'", "’"):  # a possessive ends the name
            if run:
                close()
            continue
        if _capitalised(word):
            if run and folded in {fold(w) for w in run}:
                close()  # "Julie Julie", "Emmanuel Emmanuel": a name does not repeat a word
            if not run and folded in NOT_NAMES:
                continue
            if not run and opens(i - 1) and folded not in inside:
                if common(word.lower()) and not next_is_name(i - 1):
                    continue  # "Now", "Poor": written in lower case here too
                opener = True
            run.append(word)
        elif run and folded in PARTICLES and next_is_name(i - 1):
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
