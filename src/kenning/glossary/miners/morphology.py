"""The morphology miner (`morphology`): two spellings of one word, both written in the text.

Hyphenated and closed compounds ("e-mail" / "email") and British / American spellings ("colour" /
"color", "organise" / "organize"), paired once per pair of analysed terms.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from kenning.analysis.analyzer import fold
from kenning.glossary.miners.corpus import Corpus, Suggestion

# (british, american) suffix rewrites; the part before the suffix must be at least `min_stem` letters.
_SPELLING_RULES: list[tuple[re.Pattern, str, str]] = [
    (
        re.compile(r"^([a-z]{2,}[^aeiou])our(s|ed|ing|able|ably|ite|ites|er|ers|ful|less)?$"),
        r"\1or\2",
        "our/or",
    ),
    (re.compile(r"^([a-z]{3,})is(e|es|ed|ing|ation|ations|er|ers)$"), r"\1iz\2", "ise/ize"),
    (re.compile(r"^([a-z]{2,})ys(e|es|ed|ing)$"), r"\1yz\2", "yse/yze"),
    (re.compile(r"^([a-z]{3,}[bcdgkpt])re(s|d)?$"), r"\1er\2", "re/er"),
    (re.compile(r"^([a-z]{2,}[aeiou])ll(ed|ing|er|ers|ous|ously)$"), r"\1l\2", "ll/l"),
    (re.compile(r"^([a-z]{3,})ence(s)?$"), r"\1ense\2", "ence/ense"),
    (re.compile(r"^([a-z]{3,})ogue(s)?$"), r"\1og\2", "ogue/og"),
]


def mine_morphology(corpus: Corpus) -> list[Suggestion]:
    """Spellings of one word, both written in the text, paired once per pair of analysed terms.

    A British/American pair is skipped when the rarer form is mostly used in documents that also use
    the other form at least 3 times: one writer keeps one convention, so there the two are different
    words (a text that writes "metre" for the unit and "meter" for the instrument).
    """
    by_source: dict[str, Counter] = defaultdict(Counter)
    for p in corpus.passages:
        for w, *_ in p.words:
            by_source[fold(w)][p.source] += 1
    vocab = corpus.words
    candidates: list[tuple[str, str, str]] = []
    for word in vocab:
        if not word.isascii():
            continue
        if "-" in word:
            parts = word.split("-")
            if len(parts) == 2 and all(x.isalpha() for x in parts) and len(word) >= 5:
                joined = "".join(parts)
                if joined in vocab:
                    candidates.append((word, joined, "hyphen"))
            continue
        if not word.isalpha() or len(word) < 5:
            continue
        for pattern, repl, rule in _SPELLING_RULES:
            if pattern.match(word):
                variant = pattern.sub(repl, word)
                if variant != word and variant in vocab:
                    candidates.append((word, variant, rule))
    pairs: dict[tuple[str, str], list] = defaultdict(list)
    for a, b, rule in candidates:
        if corpus.protected(a) or corpus.protected(b):
            continue
        if rule != "hyphen":
            rare, other = (a, b) if vocab[a] <= vocab[b] else (b, a)
            mixed = sum(n for src, n in by_source[rare].items() if by_source[other][src] >= 3)
            if 2 * mixed > vocab[rare]:
                continue
        ka, kb = corpus.term_key(a), corpus.term_key(b)
        if ka and kb and ka != kb:
            pairs[(ka, kb) if ka < kb else (kb, ka)].append((a, b, rule))
    out = []
    for group in pairs.values():
        totals: Counter = Counter()
        for a, b, _rule in group:
            totals[corpus.term_key(a)] += vocab[a]
            totals[corpus.term_key(b)] += vocab[b]
        # Show the pair of written forms with the most evidence ("organize" / "organise", not "organised").
        a, b, rule = max(group, key=lambda x: (min(vocab[x[0]], vocab[x[1]]), x))
        if min(totals.values()) < 2:
            continue
        na, nb = totals[corpus.term_key(a)], totals[corpus.term_key(b)]
        canonical, alias, nc, nal = (a, b, na, nb) if na >= nb else (b, a, nb, na)
        examples = corpus.examples_of(alias, canonical)
        out.append(
            Suggestion(
                canonical=canonical,
                alias=alias,
                kind="morphology",
                score=min(0.9, 0.6 + 0.1 * math.log1p(min(nc, nal))),
                counts={"canonical": nc, "alias": nal},
                examples=examples,
                note=f"spellings of one word ({rule}): {canonical} {nc}×, {alias} {nal}×"
                + (f" (with {len(group) - 1} more inflected pair(s))" if len(group) > 1 else ""),
            )
        )
    return out
