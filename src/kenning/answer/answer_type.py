"""What kind of value a question asks for, and whether a sentence states one.

A question that asks for a specific value ("How old is...", "What was the name of...", "In what
year...") is answered only by a sentence that states a value of that kind; a passage about the right
people that never states it does not answer the question, however well it matches. This is the
expected answer type of open-domain question answering (the TREC QA systems), kept to the types a
rule can recognise in running text without a model, each with its own evidence:

- name (what is the name of, what was it called, under what name, first name): a naming phrase
  ("is called Brookfield", "named Rex", "we call him Sam"), or a title the question uses before
  a name ("the captain of the ship": "Captain Smith"), whose name the question does not hold;
- year (what year, in which year): a four-digit year;
- money (how much money, what price, what sum): an amount with its currency ("a thousand pounds",
  "£20", "two hundred francs");
- duration (how long): a number with a unit of time ("three days", "a fortnight");
- number (how many, how old, what age): a numeral or number word that is not part of a date
  ("THREE proposals", "nine-and-twenty", "aged 59", not "28 September"); "one" does not count, since
  it is mostly a pronoun ("no one", "one of them").

Every other question (why, how, who, what happened) asks for something a rule cannot recognise, so
it has no type and the check passes.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kenning.analysis.analyzer import fold
from kenning.entities.extract import NOT_NAMES

NAME, YEAR, MONEY, DURATION, NUMBER = "name", "year", "money", "duration", "number"
# the words that say what kind of value is asked for; the rest of the question says what about
TYPE_WORDS = ("name", "names", "called", "call", "named", "first", "last", "full", "age", "old", "year",
              "many", "much", "long", "money", "number", "price", "sum")  # fmt: skip

_QUESTION_TYPES = [
    (
        NAME,
        r"\b(what (is|was|were|are) (the |his |her |their |its )?(\w+ )?names?\b|what names?\b|"
        r"which names?\b|under what name|by what name|"
        r"(what|how) (is|was|were|are) [\w'’]+(?: [\w'’]+){0,3} (called|named)\b|"
        r"what did [\w'’]+(?: [\w'’]+){0,3} (call|name)\b|"
        r"\b(first|last|full|christian|maiden|real) name\b|what (does|did) .+ stand for)",
    ),
    (YEAR, r"\b(what|which) year\b"),
    (
        MONEY,
        r"\b(how much (money|did [\w'’]+(?: [\w'’]+){0,6} (pay|cost|spend|charge|owe|earn|give))|"
        r"what (price|sum))\b",
    ),
    (DURATION, r"\bhow long\b"),
    (NUMBER, r"\b(how (many|old)|(what|which) age|at what age|what number)\b"),
]
_QUESTION_TYPES = [(kind, re.compile(pattern, re.I)) for kind, pattern in _QUESTION_TYPES]

_NUMBER_WORDS = {
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
    "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand",
    "million", "dozen", "score",
}  # fmt: skip
_MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
}  # fmt: skip
_CURRENCY = (
    r"(pounds?|shillings?|pence|guineas?|sovereigns?|crowns?|francs?|sous|louis|livres|piastres|"
    r"florins?|ducats?|dollars?|cents?|euros?|marks?|roubles?|rubles?|lire|yen|£|\$|€)"
)
_TIME_UNITS = r"(seconds?|minutes?|hours?|days?|nights?|weeks?|fortnights?|months?|years?|centur(y|ies))"
_WORD = r"[^\W\d_]+(?:-[^\W\d_]+)*"
_NUMBER_TOKEN = re.compile(r"\d[\d,.]*|" + _WORD)
_TITLES = {
    "captain", "mr", "mrs", "miss", "dr", "doctor", "lord", "lady", "sir", "count", "countess",
    "baron", "baroness", "monsieur", "madame", "mademoiselle", "m", "mme", "mlle", "father",
    "sister", "brother", "professor", "king", "queen", "prince", "princess", "general", "colonel",
    "major", "abbé", "signor", "señor", "herr", "frau",
}  # fmt: skip
_NAMING = re.compile(
    r"\b(called|calls|call (?:him|her|it|them|me)|named|names? (?:is|was|were)|stands? for|stood for|"
    r"christened|known as|styled|entitled|by (?:the )?name(?: of)?)\s+((?:[\w’'-]+\s+){0,3}?)"
    r"([\"“‘_]?)([A-ZÀ-Þ][^\W\d_]*(?:['’-][^\W\d_]+)*)",
)
# words that, between "called" and a capitalised word, make it a summons or a visit, not a name
_NOT_NAMING = {"to", "on", "upon", "for", "out", "in", "at", "by", "from", "into", "with", "away", "back"}
_TITLED = re.compile(r"\b([A-Z][a-z]*)\.?\s+([A-ZÀ-Þ][^\W\d_]*(?:['’-][^\W\d_]+)*)")
_CLOCK = re.compile(r"\b(\d+|[^\W\d_]+)\s+o['’]\s?clock\b", re.I)
_YEAR = re.compile(r"(?<![\d£$])\b1[0-9]{3}\b(?![\d,])|\b20[0-9]{2}\b")
_CURRENCY_AFTER = re.compile(r"\b" + _CURRENCY + r"(?=\W|$)", re.I)
_SIGN_AMOUNT = re.compile(r"[£$€]\s?\d")
_UNIT_AFTER = re.compile(r"\b" + _TIME_UNITS + r"\b|\bfortnight\b", re.I)


def question_type(question: str) -> str | None:
    """The kind of value the question asks for, or None when a rule cannot tell."""
    for kind, pattern in _QUESTION_TYPES:
        if pattern.search(question):
            return kind
    return None


def states_answer(sentence: str, kind: str | None, question: str) -> bool:
    """Whether `sentence` states a value of the kind the question asks for (and, for names, one the
    question does not already hold)."""
    if kind is None:
        return True
    if kind == NAME:
        return _states_name(sentence, question)
    sentence = _CLOCK.sub(" ", sentence)  # "two o'clock" is a time of day, not a count
    if kind == YEAR:
        return bool(_YEAR.search(sentence))
    if kind == MONEY:
        return bool(_SIGN_AMOUNT.search(sentence)) or _counted(sentence, _CURRENCY_AFTER)
    if kind == DURATION:
        return _counted(sentence, _UNIT_AFTER)
    return _states_number(sentence)


def _counted(sentence: str, unit: re.Pattern) -> bool:
    """A unit (a currency, a unit of time) with a count just before it: "forty thousand francs",
    "3 days", "a fortnight"."""
    for match in unit.finditer(sentence):
        before = re.findall(r"\d[\d,.]*|[^\W\d_]+", sentence[: match.start()])[-3:]
        if match.group(0).lower() == "fortnight" or any(_is_count(w) for w in before):
            return True
        if before and before[-1].lower() in {"a", "an"}:  # "a week", "an hour"
            return True
    return False


def _is_count(word: str) -> bool:
    return word[:1].isdigit() or any(part in _NUMBER_WORDS for part in word.lower().split("-"))


def _states_number(sentence: str) -> bool:
    tokens = _NUMBER_TOKEN.findall(sentence)
    lowered = [t.lower().strip(".,") for t in tokens]
    for i, token in enumerate(lowered):
        if not _is_count(token):
            continue
        around = lowered[max(0, i - 1) : i] + lowered[i + 1 : i + 2]
        if any(w in _MONTHS for w in around):  # "28 September", "July 27": a date, not a count
            continue
        return True
    return False


@lru_cache(maxsize=64)
def _asked(question: str) -> frozenset[str]:
    """The question's folded words, worked out once per question, not once per sentence checked."""
    return frozenset(fold(w) for w in re.findall(r"[^\W\d_]+", question))


def _states_name(sentence: str, question: str) -> bool:
    asked = _asked(question)

    def new(word: str) -> bool:
        key = fold(re.sub(r"['’]s$", "", word.strip("_"))).strip("'’-")
        return len(key) > 1 and key not in asked and key not in NOT_NAMES

    for match in _NAMING.finditer(sentence):
        between = {w.lower() for w in match.group(2).split()}
        if between & _NOT_NAMING:  # "called to London", "called on Anna": summoned, not named
            continue
        if new(match.group(4)):
            return True
    for match in _TITLED.finditer(sentence):  # "Captain Smith", when the question asks of a captain
        title = fold(match.group(1))
        if title in _TITLES and title in asked and new(match.group(2)):
            return True
    return False


def value_spans(sentence: str, kind: str, question: str) -> list[str]:
    """The spans of `sentence` that state a value of `kind`, in order: what a one-line answer quotes
    ("Brookfield", "1893", "forty thousand francs", "three days", "three proposals")."""
    if kind == NAME:
        return _name_spans(sentence, question)
    cleaned = _CLOCK.sub(lambda m: " " * len(m.group(0)), sentence)  # keep offsets
    if kind == YEAR:
        return [m.group(0) for m in _YEAR.finditer(cleaned)]
    if kind == MONEY:
        signed = [
            m.group(0) + sentence[m.end() :].split(maxsplit=1)[0] for m in _SIGN_AMOUNT.finditer(cleaned)
        ]
        return signed + _counted_spans(sentence, cleaned, _CURRENCY_AFTER)
    if kind == DURATION:
        return _counted_spans(sentence, cleaned, _UNIT_AFTER)
    if kind == NUMBER:
        return _number_spans(sentence, cleaned)
    return []


def _counted_spans(sentence: str, cleaned: str, unit: re.Pattern) -> list[str]:
    out = []
    for match in unit.finditer(cleaned):
        before = list(re.finditer(r"\d[\d,.]*|[^\W\d_]+(?:-[^\W\d_]+)*", cleaned[: match.start()]))[-3:]
        counts = [m for m in before if _is_count(m.group(0)) or m.group(0).lower() in {"a", "an"}]
        if counts:
            out.append(sentence[counts[0].start() : match.end()])
        elif match.group(0).lower() == "fortnight":
            out.append(match.group(0))
    return out


def _number_spans(sentence: str, cleaned: str) -> list[str]:
    tokens = list(re.finditer(r"\d[\d,.]*|[^\W\d_]+(?:-[^\W\d_]+)*", cleaned))
    out = []
    for i, token in enumerate(tokens):
        word = token.group(0).lower().strip(".,")
        if not _is_count(word):
            continue
        around = [t.group(0).lower() for t in tokens[max(0, i - 1) : i] + tokens[i + 1 : i + 2]]
        if any(w in _MONTHS for w in around):
            continue
        end = token.end()
        j = i + 1
        while j < len(tokens) and _is_count(tokens[j].group(0)) and j - i < 4:  # "forty thousand"
            end, j = tokens[j].end(), j + 1
        if j < len(tokens) and sentence[end : tokens[j].start()].isspace():  # the thing counted
            end = tokens[j].end()
        out.append(sentence[token.start() : end])
    return out


def _name_spans(sentence: str, question: str) -> list[str]:
    asked = _asked(question)
    out = []
    for match in _NAMING.finditer(sentence):
        between = {w.lower() for w in match.group(2).split()}
        key = fold(re.sub(r"['’]s$", "", match.group(4).strip("_"))).strip("'’-")
        if not between & _NOT_NAMING and len(key) > 1 and key not in asked and key not in NOT_NAMES:
            rest = re.match(r"(?:\s+[A-ZÀ-Þ][^\W\d_]*)*", sentence[match.end(4) :])
            out.append(match.group(4) + (rest.group(0) if rest else ""))
    for match in _TITLED.finditer(sentence):
        title = fold(match.group(1))
        key = fold(match.group(2))
        if title in _TITLES and title in asked and key not in asked and key not in NOT_NAMES:
            out.append(match.group(0))
    return out
