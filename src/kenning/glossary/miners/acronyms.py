"""The acronym miner (`acronym`): a definition the text writes out, "JSON Web Token (JWT)" or
"JWT (JSON Web Token)".

The letters of the acronym must be found, in order, in the words before (or inside) the brackets, the
first one starting a word; short function words may be skipped ("Bureau of Labor Statistics (BLS)").
"""

from __future__ import annotations

import re

from kenning.analysis.analyzer import fold
from kenning.analysis.protected import ACRONYM_RE, iter_words
from kenning.glossary.miners.corpus import Corpus, Suggestion

# Words an acronym may skip inside its long form ("Bureau of Labor Statistics" -> BLS); never its first.
_FUNCTION_WORDS = frozenset(["of", "and", "the", "for", "in", "on", "to", "a", "an", "with", "by"])


def _initials_match(abbr: str, words: list[str]) -> bool:
    """Can the acronym's letters be found in order in `words`, the first at the start of words[0]
    and every word contributing its first letter or being a short function word?"""
    letters = [c.lower() for c in abbr if c.isalnum()]
    if abbr.endswith("s") and abbr[:-1].isupper():
        letters = letters[:-1]
    words = [part for w in words for part in re.split(r"[-/]", w) if part]  # "one-time" is two words
    if not words or not letters or words[0][:1].lower() != letters[0] or words[0].lower() in _FUNCTION_WORDS:
        return False
    # Walk the words, matching each letter to a word start or to a capital inside the current word.
    li = 0
    for w in words:
        if li >= len(letters):
            return False  # a word left over: the long form is too long
        if w.lower() in _FUNCTION_WORDS and w[:1].lower() != letters[li]:
            continue
        if w[:1].lower() != letters[li]:
            return False
        li += 1
        for c in w[1:]:
            if li < len(letters) and c.isupper() and c.lower() == letters[li]:
                li += 1
    return li == len(letters)


_PAREN_RE = re.compile(r"\(([^()\n]{1,80})\)")


def mine_acronyms(corpus: Corpus) -> list[Suggestion]:
    found: dict[tuple[str, str], list] = {}
    for pi, p in enumerate(corpus.passages):
        text = p.text
        if "(" not in text:
            continue
        for m in _PAREN_RE.finditer(text):
            inside = m.group(1).strip()
            before = text[max(0, m.start() - 200) : m.start()]
            before = re.split(r"[.!?;:()\[\]\n]\s|\n\n", before)[-1]
            prev_words = [w for w, *_ in iter_words(before)]
            pair = None
            if ACRONYM_RE.match(inside):
                # Long Form (ABBR): try the shortest run of preceding words that spells the acronym.
                for k in range(1, min(len(prev_words), len(inside) + 3) + 1):
                    if _initials_match(inside, prev_words[-k:]):
                        pair = (" ".join(prev_words[-k:]), inside)
                        break
            elif prev_words and ACRONYM_RE.match(prev_words[-1]) and before.rstrip().endswith(prev_words[-1]):
                inner = [w for w, *_ in iter_words(inside)]
                if inner and len(inner) <= len(prev_words[-1]) + 3 and _initials_match(prev_words[-1], inner):
                    pair = (" ".join(inner), prev_words[-1])
            if pair:
                found.setdefault((fold(pair[0]), fold(pair[1])), []).append((pair, pi, m.start(), m.end()))
    out = []
    for hits in found.values():
        (long_form, abbr), pi, s, e = hits[0]
        out.append(
            Suggestion(
                canonical=long_form,
                alias=abbr,
                kind="acronym",
                score=min(0.99, 0.9 + 0.03 * len(hits)),
                counts={"definitions": len(hits), "acronym_uses": corpus.words[fold(abbr)]},
                examples=[corpus.example(pi, s - len(long_form) - 2, e)],
                note=f'defined in the text as "{long_form} ({abbr})"'
                if corpus.passages[pi].text[s + 1 : e - 1].strip() == abbr
                else f'defined in the text as "{abbr} ({long_form})"',
                source=corpus.passages[pi].source,
            )
        )
    return out
