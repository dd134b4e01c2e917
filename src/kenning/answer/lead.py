"""The one-line answer that leads a cited answer: the words that answer the question, taken from the
sentences the answer cites, before the sentences themselves.

The question's form says what kind of words answer it (the expected answer type of TREC-style
question answering, kept to what a rule can find in running text):

- who, whom, whose: a person's name in the evidence that the question does not already name, a name
  the index knows as an entity (so a capitalised word that only opens a sentence is not taken),
  nearest the question's own words in its sentence;
- where: a place name after a word of place ("in", "at", "to", "from", ...), else the phrase that
  word begins ("in his own cell");
- when: a date, a year, a day, a time of day, or a phrase of time ("on the eve of St. George's
  Day", "at midnight");
- the typed values of kenning.answer.answer_type (a name, a year, an amount, a length of time, a
  count): the span stating it ("called Brookfield", "three proposals", "forty thousand francs");
- anything else (what, which, why, how, yes or no): the best cited sentence, cut to LEAD_WORDS.

When no span of the wanted kind is found, the best sentence stands in for it: the lead never claims
more than the cited evidence says.
"""

from __future__ import annotations

import re

from kenning.analysis.analyzer import fold
from kenning.answer.answer_type import DURATION, MONEY, NAME, NUMBER, YEAR, value_spans
from kenning.entities.extract import NOT_NAMES

LEAD_WORDS = 40  # a fallback sentence longer than this is cut, with an ellipsis
WHO, WHERE, WHEN = "who", "where", "when"
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_NAME_RUN = re.compile(
    r"\b[A-ZÀ-Þ][^\W\d_]*(?:['’-][^\W\d_]+)*(?:\s+(?:(?:of|de|du|da|van|von|der|la|le)\s+)?"
    r"[A-ZÀ-Þ][^\W\d_]*(?:['’-][^\W\d_]+)*)*"
)
_PLACE_WORDS = r"(?:in|at|to|from|into|near|on|towards|toward|inside|outside|under|beneath|behind|by)"
_PLACE_PHRASE = re.compile(r"\b" + _PLACE_WORDS + r"\s+((?:[\w'’-]+\s+){0,5}?[\w'’-]+)(?=[,.;:!?]|$)", re.I)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?"
)
_DAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_WHEN_PATTERNS = [
    re.compile(
        r"\b(?:\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTH + r"(?:,?\s+\d{4})?|" + _MONTH + r"\s+\d{1,2}"
        r"(?:st|nd|rd|th)?(?:,?\s+\d{4})?)"
    ),  # fmt: skip
    re.compile(
        r"\b(?:on\s+)?(?:the\s+)?(?:eve|day|night|morning|evening)\s+of\s+(?:[\w'’]+\s+){0,3}?"
        r"[A-Z][\w'’]*(?:\s+[A-Z][\w'’]*)*"
    ),  # fmt: skip
    re.compile(r"\b(?:on\s+)?" + _DAY + r"(?:\s+(?:morning|evening|night|afternoon))?"),
    re.compile(r"\b(?:in\s+)?1[0-9]{3}\b|\b20[0-9]{2}\b"),
    re.compile(
        r"\b(?:at\s+)?(?:\d{1,2}|[a-z]+)\s+o['’]\s?clock\b|\bat\s+(?:midnight|noon|dawn|sunset|sunrise|dusk)\b",
        re.I,
    ),  # fmt: skip
    re.compile(
        r"\b(?:the\s+)?(?:next|following|same|previous)\s+(?:day|night|morning|evening|week|year)\b", re.I
    ),  # fmt: skip
]


def question_form(question: str) -> str:
    """who, where, when, why, how, how many, which, what, yes/no, or other: the question's form, for
    reporting answers by type and choosing what the lead looks for."""
    q = question.strip().lower()
    if re.match(r"(?:\w+\s+){0,4}?(who|whom|whose)\b", q):
        return "who"
    if re.search(r"\bhow (many|much|old|long)\b|\bwhat (age|number)\b", q):
        return "how many"
    for form in ("where", "when", "why", "how", "which", "what"):
        if re.match(r"(?:\w+\s+){0,4}?" + form + r"\b", q):
            return form
    if re.match(r"(is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", q):
        return "yes/no"
    return "other"


def lead_line(question: str, kind: str | None, sentences: list[str], is_name=None) -> str:
    """The one-line answer from the cited `sentences` (best first). `kind` is the question's typed
    value (kenning.answer.answer_type) or None; `is_name(folded key)` says whether the index knows
    a name (None: any capitalised run inside a sentence counts)."""
    if not sentences:
        return ""
    form = question_form(question)
    asked = {fold(w) for w in _WORD.findall(question)}
    for sentence in sentences:
        span = _span(question, form, kind, sentence, asked, is_name)
        if span:
            return span
    return _cut(sentences[0])


def _span(question: str, form: str, kind: str | None, sentence: str, asked: set[str], is_name) -> str | None:
    if kind in (NAME, YEAR, MONEY, DURATION, NUMBER):
        spans = value_spans(sentence, kind, question)
        return spans[0] if spans else None
    if form == WHO:
        return _nearest(_names(sentence, asked, is_name), sentence, asked)
    if form == WHERE:
        return _place(sentence, asked, is_name)
    if form == WHEN:
        for pattern in _WHEN_PATTERNS:
            match = pattern.search(sentence)
            if match:
                return match.group(0).strip()
    return None


def _names(sentence: str, asked: set[str], is_name) -> list[tuple[int, str]]:
    """(offset, text) of the names in the sentence that the question does not hold: runs of
    capitalised words, each cut from the left to the longest tail the index knows as a name
    ("Happily Dantès" gives "Dantès")."""
    out = []
    for match in _NAME_RUN.finditer(sentence):
        pieces = list(_WORD.finditer(match.group(0)))
        for i in range(len(pieces)):
            words = [fold(p.group(0)) for p in pieces[i:]]
            if words[0] in NOT_NAMES or words[-1] in NOT_NAMES or all(w in asked for w in words):
                continue
            if is_name is None or is_name(" ".join(words)):
                start = match.start() + pieces[i].start()
                out.append((start, match.group(0)[pieces[i].start() :]))
                break
    return out


def _nearest(names: list[tuple[int, str]], sentence: str, asked: set[str]) -> str | None:
    """The name closest to the question's own words in the sentence."""
    if not names:
        return None
    folded = fold(sentence)
    spots = [
        m.start() for m in re.finditer(r"[^\W\d_]+", folded) if m.group(0) in asked and len(m.group(0)) > 3
    ]
    if not spots:
        return names[0][1]
    return min(names, key=lambda n: min(abs(n[0] - s) for s in spots))[1]


def _place(sentence: str, asked: set[str], is_name) -> str | None:
    names = _names(sentence, asked, is_name)
    for match in _PLACE_PHRASE.finditer(sentence):
        inside = [text for start, text in names if match.start(1) <= start < match.end(1) + 1]
        if inside:
            return inside[0]
    for match in _PLACE_PHRASE.finditer(sentence):
        phrase = match.group(0)
        if not {fold(w) for w in _WORD.findall(match.group(1))} <= asked:
            return phrase.strip()
    return None


def _cut(sentence: str) -> str:
    words = sentence.split()
    return sentence.strip() if len(words) <= LEAD_WORDS else " ".join(words[:LEAD_WORDS]) + " …"
