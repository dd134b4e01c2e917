"""The name miners: a person's full name and the other ways the text names that person.

- `name-variant`: a full name and a part of it used alone ("Ada Lovelace" / "Lovelace"), when that
  full name accounts for most of the full names containing the part, and the part is not a family
  name (used alone with both male and female titles: "Mr. Okafor", "Mrs. Okafor").
- `name-title`: a female title with a surname ("Mrs. Okafor", "Miss Okafor") and the one full name
  with that surname whose first name takes the same kind of title, married or unmarried ("Mrs.
  Okafor" -> "Ngozi Okafor" when the text writes "Mrs. Ngozi Okafor"). Male titles tell nobody apart:
  "Mr. Okafor" is father and son alike.
- `title`: a title used alone as a name ("the Inspector") and the name the title is written with in
  most cases in the same document ("Inspector Okafor"), unless another name written with that title
  shares more than half as many of the passages where the bare title is used (when "the Sergeant"
  is one officer as often as another, nothing is proposed).

Only persons' names count (some word of the name is written with a title somewhere), so a place is
not taken for a person.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from kenning.analysis.analyzer import fold
from kenning.analysis.protected import ABBREVIATED_TITLES, NAME_PARTICLES, TITLES
from kenning.glossary.miners.corpus import Corpus, Suggestion

# Gaps allowed inside one name: spaces and at most one line break; after an abbreviated title also a dot.
_NAME_GAP = re.compile(r"[ \t]*\n?[ \t]*")
_TITLE_GAP = re.compile(r"\.?[ \t]*\n?[ \t]*")


@dataclass
class Mention:
    titles: tuple[str, ...]  # folded titles, "dr", "sir"
    title_forms: tuple[str, ...]  # as written
    name: tuple[str, ...]  # folded name words, particles left out
    surface: str  # the name as written, particles inside kept: "Vincent van Gogh"
    full_surface: str  # titles included: "Dr. Ngozi Okafor"
    passage: int
    start: int
    end: int


def _title_class(folded_titles: tuple[str, ...]) -> str:
    for t in reversed(folded_titles):
        cls = TITLES.get(t.rstrip("."), "-")
        if cls != "-":
            return cls
    return "-"


def _gap_ok(text: str, before: tuple, after: tuple, after_title: bool) -> bool:
    """May `before` and `after` belong to one name? Only spaces (one line break) between them, or a dot
    after an abbreviated title ("Dr. Okafor")."""
    if after_title and fold(before[0]) in ABBREVIATED_TITLES:
        return _TITLE_GAP.fullmatch(text, before[2], after[1]) is not None
    return _NAME_GAP.fullmatch(text, before[2], after[1]) is not None


def find_mentions(corpus: Corpus) -> tuple[list[Mention], dict]:
    """Name mentions ([titles] name-words with particles) and bare title uses ("the Inspector").

    Returns (mentions, bare) where bare maps (source, folded title) -> Counter of written forms.
    """
    mentions: list[Mention] = []
    bare: dict[tuple[str, str], Counter] = defaultdict(Counter)
    bare_at: dict[tuple[str, str], tuple[int, int, int]] = {}
    bare_passages: dict[tuple[str, str], set[int]] = defaultdict(set)
    for pi, p in enumerate(corpus.passages):
        words, text = p.words, p.text
        n = len(words)
        i = 0
        while i < n:
            j = i
            while j < n and fold(words[j][0]) in TITLES:
                if j > i and not _gap_ok(text, words[j - 1], words[j], True):
                    break
                j += 1
            k, name_end = j, -1
            while k < n:
                w, s, _e, _mid = words[k]
                if k > i and not _gap_ok(text, words[k - 1], words[k], k - 1 < j):
                    break
                if corpus.is_proper(w):
                    name_end = k
                    k += 1
                    continue
                if w[:1].islower() and fold(w) in NAME_PARTICLES and k + 1 < n and k > i:
                    k += 1
                    continue
                break
            if name_end >= 0:
                name_words = [words[x] for x in range(j, name_end + 1)]
                while name_words and not corpus.is_proper(name_words[0][0]):
                    name_words.pop(0)  # a leading particle: "van Gogh" -> "Gogh"
                name = tuple(fold(w) for w, *_ in name_words if corpus.is_proper(w))
                titles = tuple(fold(words[x][0]) for x in range(i, j))
                start_name = name_words[0][1]
                end = words[name_end][2]
                mentions.append(
                    Mention(
                        titles=titles,
                        title_forms=tuple(words[x][0] for x in range(i, j)),
                        name=name,
                        surface=" ".join(text[start_name:end].split()),
                        full_surface=" ".join(text[words[i][1] : end].split()),
                        passage=pi,
                        start=words[i][1],
                        end=end,
                    )
                )
                i = name_end + 1
                continue
            if j > i:
                # Titles with no name after them: a bare title when "the" precedes the last one.
                if (
                    j - i == 1
                    and i > 0
                    and fold(words[i - 1][0]) == "the"
                    and _NAME_GAP.fullmatch(text, words[i - 1][2], words[i][1])
                    and not (
                        j < n and _gap_ok(text, words[i], words[j], True) and corpus.is_proper(words[j][0])
                    )
                ):
                    key = (p.source, fold(words[i][0]))
                    bare[key][f"{words[i - 1][0].lower()} {words[i][0]}"] += 1
                    bare_at.setdefault(key, (pi, words[i - 1][1], words[i][2]))
                    bare_passages[key].add(pi)
                i = j
                continue
            i += 1
    return mentions, {"forms": bare, "at": bare_at, "passages": bare_passages}


def mine_names(corpus: Corpus) -> list[Suggestion]:
    mentions, bare = find_mentions(corpus)
    full: Counter = Counter()  # name tuple (>= 2 words) -> count
    full_forms: dict[tuple, Counter] = defaultdict(Counter)
    full_at: dict[tuple, Mention] = {}
    alone: Counter = Counter()  # single name word -> count (any titles)
    alone_at: dict[str, Mention] = {}
    alone_forms: dict[str, Counter] = defaultdict(Counter)
    alone_titles: dict[str, Counter] = defaultdict(Counter)  # word -> title class counts
    titled_alone: dict[tuple[str, str], Counter] = defaultdict(Counter)  # (class, word) -> written forms
    titled_at: dict[tuple[str, str], Mention] = {}
    first_class: dict[str, Counter] = defaultdict(Counter)  # first name -> title classes it takes
    with_title: dict[tuple[str, str], Counter] = defaultdict(Counter)  # (source, title) -> names
    with_title_forms: dict[tuple[str, str, tuple], Counter] = defaultdict(Counter)
    with_title_at: dict[tuple[str, str, tuple], Mention] = {}
    titled_words: Counter = Counter()  # name word -> mentions with a title (persons take titles)
    for m in mentions:
        if not m.name:
            continue
        if m.titles:
            titled_words.update(set(m.name))
        cls = _title_class(m.titles)
        if len(m.name) >= 2:
            full[m.name] += 1
            full_forms[m.name][m.surface] += 1
            if m.name not in full_at or (full_at[m.name].surface.isupper() and not m.surface.isupper()):
                full_at[m.name] = m  # the first mention, unless it is in a capitals-only heading
            if cls != "-":
                first_class[m.name[0]][cls] += 1
        else:
            word = m.name[0]
            alone[word] += 1
            alone_forms[word][m.surface] += 1
            alone_at.setdefault(word, m)
            alone_titles[word][cls if m.titles else "none"] += 1
            if cls != "-":
                first_class[word][cls] += 1
                titled_alone[(cls, word)][m.full_surface] += 1
                titled_at.setdefault((cls, word), m)
        source = corpus.passages[m.passage].source
        for t in set(m.titles):
            with_title[(source, t)][m.name] += 1
            with_title_forms[(source, t, m.name)][m.full_surface] += 1
            with_title_at.setdefault((source, t, m.name), m)

    containing: dict[str, Counter] = defaultdict(Counter)
    for name, c in full.items():
        for w in set(name):
            containing[w][name] += c

    def family(word: str) -> bool:
        """Used alone with both male and female titles: a family name shared by several people."""
        t = alone_titles[word]
        male, female = t["m"], t["f"] + t["u"]
        return min(male, female) >= max(3, 0.1 * (male + female))

    def surface_of(name: tuple) -> str:
        return (
            full_forms[name].most_common(1)[0][0]
            if name in full_forms
            else alone_forms[name[0]].most_common(1)[0][0]
        )

    def ex(m: Mention) -> dict:
        return corpus.example(m.passage, m.start, m.end)

    out: list[Suggestion] = []
    # Full name <-> a part of it used alone. Only persons' names (some word of the name is written with
    # a title somewhere): a place like "Gare de Lyon" must not claim "Lyon".
    for word, n_alone in alone.items():
        fulls = containing.get(word)
        if n_alone < 5 or not fulls:
            continue
        (name, n_full), total = fulls.most_common(1)[0], sum(fulls.values())
        share = n_full / total
        if n_full < 4 or share < 0.8 or family(word) or max(titled_words[w] for w in name) < 2:
            continue
        if " of " in full_forms[name].most_common(1)[0][0]:
            continue  # "Bank of England", "Duke of York": places and titles, not a person's name
        canonical, alias = surface_of(name), alone_forms[word].most_common(1)[0][0]
        score = share * (1 - 1 / (1 + math.log1p(min(n_full, n_alone))))
        out.append(
            Suggestion(
                canonical=canonical,
                alias=alias,
                kind="name-variant",
                score=0.5 + 0.45 * score,
                counts={"full_name": n_full, "part_alone": n_alone, "full_names_with_part": total},
                examples=[ex(full_at[name]), ex(alone_at[word])],
                note=f'"{alias}" is used alone {n_alone}×; {n_full} of the {total} full names containing it '
                f'are "{canonical}"',
                source=corpus.passages[full_at[name].passage].source,
            )
        )
    # Title + surname <-> the full name whose first name takes the same class of title. Only the female
    # classes (married / unmarried) tell family members apart: "Mr." is father and son alike.
    for (cls, word), forms in titled_alone.items():
        n = sum(forms.values())
        if n < 3 or cls not in ("f", "u"):
            continue
        candidates = []
        for name, c in full.items():
            if len(name) >= 2 and name[-1] == word and c >= 2:
                classes = first_class.get(name[0], Counter())
                total = sum(classes.values())
                if total >= 2 and classes[cls] >= 0.8 * total:
                    candidates.append((name, c, classes[cls]))
        if len(candidates) != 1:
            continue
        name, c, n_first = candidates[0]
        canonical, alias = surface_of(name), forms.most_common(1)[0][0]
        first = surface_of(name).split()[0]
        out.append(
            Suggestion(
                canonical=canonical,
                alias=alias,
                kind="name-title",
                score=0.6 + 0.3 * min(1.0, math.log1p(min(n, c, n_first)) / math.log(30)),
                counts={"titled_form": n, "full_name": c, "first_name_titled": n_first},
                examples=[ex(titled_at[(cls, word)]), ex(full_at[name])],
                note=f'"{alias}" ({n}×) and "{canonical}" ({c}×): the only full name with that surname whose '
                f'first name "{first}" takes the same kind of title ({n_first}×)',
                source=corpus.passages[full_at[name].passage].source,
            )
        )
    # A bare title ("the Inspector") <-> the name that title goes with in the same document: most names
    # written with the title are that name, and no other such name shares as many of the passages where
    # the bare title is used (one sergeant as often as another: no suggestion).
    names_in: dict[int, set] = defaultdict(set)
    for m in mentions:
        names_in[m.passage].add(m.name)
    for (source, title), forms in bare["forms"].items():
        n_bare = sum(forms.values())
        names = with_title.get((source, title))
        if n_bare < 10 or not names:
            continue
        (name, c), total = names.most_common(1)[0], sum(names.values())
        if c < 3 or c / total < 0.6:
            continue
        passages = bare["passages"][(source, title)]
        together = {other: sum(1 for pi in passages if other in names_in[pi]) for other in names}
        if any(other != name and 2 * k > together[name] for other, k in together.items()):
            continue
        if len(name) == 1:
            canonical = with_title_forms[(source, title, name)].most_common(1)[0][0]
        else:
            canonical = surface_of(name)
        alias = forms.most_common(1)[0][0]
        example_titled = with_title_at[(source, title, name)]
        share = c / total
        out.append(
            Suggestion(
                canonical=canonical,
                alias=alias,
                kind="title",
                score=0.5 + 0.4 * share * min(1.0, math.log1p(min(c, n_bare)) / math.log(30)),
                counts={
                    "bare_title": n_bare,
                    "title_with_name": c,
                    "title_with_any_name": total,
                    "passages_with_both": together[name],
                },
                examples=[corpus.example(*bare["at"][(source, title)]), ex(example_titled)],
                note=f'"{alias}" is used {n_bare}× in {source.rsplit("/", 1)[-1]}; {c} of the {total} names '
                f'written with the title are "{surface_of(name)}"',
                source=source,
            )
        )
    return out
