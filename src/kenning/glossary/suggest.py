"""Mining candidate synonyms from the indexed text itself, for the glossary's pending queue.

Every miner returns `Suggestion`s: a canonical term, an alias, the kind of evidence, a confidence
score in 0..1, the counts behind it and a short example from the text with its chunk id. A person
reads them in `kenning glossary pending`, so the miners favour precision over coverage.

Miners (`kind`):

- `acronym`: a definition written in the text, "JSON Web Token (JWT)" or "JWT (JSON Web Token)". The
  letters of the acronym must be found, in order, in the words before (or inside) the brackets, the
  first one starting a word.
- `name-variant`: a full name and a part of it used alone ("Ada Lovelace" / "Lovelace"), when that
  full name accounts for most of the full names containing the part, and the part is not a family
  name (used alone with both male and female titles: "M. de Laval", "Madame de Laval").
- `name-title`: a female title with a surname ("Mrs. Okafor", "Mademoiselle Laval") and the one
  full name with that surname whose first name takes the same kind of title, married or unmarried
  ("Madam Ngozi" -> "Ngozi Okafor"). Male titles tell nobody apart: "M." is father and son alike.
- `title`: a title used alone as a name ("the Professor") and the name the title is written with in
  most cases in the same document ("Professor Van Dijk"), unless another name written with that
  title shares more than half as many of the passages where the bare title is used (when "the
  Captain" is one officer as often as another, nothing is proposed).
- `morphology`: spellings of one word: hyphenated and closed compounds ("to-day" / "today") and
  British / American spellings ("colour" / "color", "realise" / "realize"), both seen in the text.
- `distributional`: words whose contexts (the words one and two positions left and right, weighted
  by positive PMI) are each other's nearest neighbour with a cosine of at least 0.38, that are never
  coordinated ("X and Y", "X or Y": how siblings like "mother" / "father" show themselves) and are
  not written side by side as one phrase ("hundred thousand").

Protected terms (see kenning.analysis.protected) are never given to the morphology and distributional miners.
The acronym and name miners read a relation the text states, so they may pair protected terms.

Counting works on the live chunks' raw text; overlapping windows of one section are cut back to
their new lines so a passage is not counted twice.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from kenning.analysis.analyzer import TOKEN_RE, Analyzer, fold
from kenning.analysis.protected import (
    ABBREVIATED_TITLES,
    ACRONYM_RE,
    NAME_PARTICLES,
    TITLES,
    CaseStats,
    iter_words,
)
from kenning.analysis.stopwords import ENGLISH_QUERY_STOPWORDS

SNIPPET_CHARS = 160

# Gaps allowed inside one name: spaces and at most one line break; after an abbreviated title also a dot.
_NAME_GAP = re.compile(r"[ \t]*\n?[ \t]*")
_TITLE_GAP = re.compile(r"\.?[ \t]*\n?[ \t]*")
_COORD_WORDS = frozenset(["and", "or", "nor"])
# Words an acronym may skip inside its long form ("Bureau of Labor Statistics" -> BLS); never its first.
_FUNCTION_WORDS = frozenset(["of", "and", "the", "for", "in", "on", "to", "a", "an", "with", "by"])


@dataclass
class Suggestion:
    """One candidate pair for the pending queue, with the evidence that suggested it."""

    canonical: str
    alias: str
    kind: str
    score: float
    counts: dict = field(default_factory=dict)
    examples: list[dict] = field(default_factory=list)  # [{"chunk": id, "text": "..."}]
    note: str = ""
    source: str | None = None

    def evidence(self) -> dict:
        out = {
            "kind": self.kind,
            "score": round(self.score, 3),
            "counts": self.counts,
            "examples": self.examples,
            "note": self.note,
        }
        if self.source:
            out["source"] = self.source
        return out


@dataclass
class Passage:
    chunk_id: int
    source: str
    text: str

    @property
    def words(self) -> list[tuple[str, int, int, bool]]:
        """(word, start, end, mid_sentence) for each word, made again on each use: kept for every
        passage they were ~27 KB a chunk (2.7 GB for 100k chunks), where the text is ~1.8 KB."""
        return list(iter_words(self.text))


def snippet(text: str, start: int, end: int, width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of text around [start, end), on one line."""
    pad = max(0, (width - (end - start)) // 2)
    a, b = max(0, start - pad), min(len(text), end + pad)
    out = " ".join(text[a:b].split())
    return ("…" if a > 0 else "") + out + ("…" if b < len(text) else "")


# chunks mined at most: whole documents spread over the index are taken up to this many. Mining reads
# every word in Python (~0.8 ms a chunk); a 1M-chunk index took over 5 minutes and 9.7 GB before it
# was stopped. The pairs the miners look for recur, so a spread of documents finds the frequent ones.
MINE_CHUNKS = 50_000


@dataclass
class MinedShare:
    """How much of the index the miners read: `chunks` of the `of` chunks they could have read, in
    `sources` documents."""

    chunks: int
    of: int
    sources: int


def load_passages(
    store, collection: str | None = None, max_chunks: int | None = None, share: list | None = None
) -> list[Passage]:
    """The live chunks' text in document order, with the overlap of consecutive windows removed.

    With `collection`, only chunks of sources in that collection. With more than `max_chunks` live
    chunks (None: no bound), whole documents evenly spread over the index (every k-th by id) up to
    about that many chunks. `share`, when given, receives a MinedShare."""
    with store.reading():
        live = store.read_snapshot().live
        sources = sorted(store.sources(), key=lambda s: s.id)
        if collection is not None:
            sources = [s for s in sources if getattr(s, "collection", "") == collection]
        total = sum(s.n_chunks or 0 for s in sources)
        whole = collection is None  # every live chunk, not some documents' chunks
        if max_chunks is not None and total > max_chunks:
            sources, whole = sources[:: -(-total // max_chunks)], False  # every k-th, k rounded up
        if whole:
            ids = list(live)
        else:
            ids = [cid for s in sources for cid, _ in store.chunk_hashes(s.id) if cid in live]
        rows = []
        for start in range(0, len(ids), 500):
            rows.extend(store.chunks_by_ids(ids[start : start + 500]).values())
    if share is not None:
        share.append(MinedShare(len(rows), total, len({r.source_id for r in rows})))
    rows.sort(key=lambda r: (r.source_id, r.ordinal))
    passages: list[Passage] = []
    prev = None
    for row in rows:
        body = row.body
        if (
            prev is not None
            and prev.source_id == row.source_id
            and prev.title == row.title
            and row.start_line is not None
            and prev.end_line is not None
            and row.start_line <= prev.end_line
        ):
            overlap = prev.end_line - row.start_line + 1
            body = "\n".join(body.split("\n")[overlap:])
        passages.append(Passage(row.id, row.path or row.doc_key, body))
        prev = row
    return passages


class Corpus:
    """Tokenised passages plus the counts every miner shares."""

    def __init__(self, passages: list[Passage], analyzer: Analyzer):
        self.passages = passages
        self.analyzer = analyzer
        self.case = CaseStats()
        self.words = Counter()  # folded word -> count (hyphenated words kept whole)
        self.surfaces: dict[str, Counter] = defaultdict(Counter)  # folded word -> raw forms
        self.first_seen: dict[str, tuple[int, int, int]] = {}  # folded word -> (passage, start, end)
        for pi, p in enumerate(passages):
            for w, s, e, mid in p.words:
                self.case.add(w, mid)
                if "-" in w:  # "Champs-Élysées": the parts are capitalised words too
                    for k, part in enumerate(w.split("-")):
                        if part:
                            self.case.add(part, mid or k > 0)
                key = fold(w)
                self.words[key] += 1
                self.surfaces[key][w] += 1
                if key not in self.first_seen:
                    self.first_seen[key] = (pi, s, e)
        self._proper: dict[str, bool] = {}
        self._seq = None
        self.share: MinedShare | None = None  # how much of the index `mine` read

    def term_sequence(self) -> tuple[np.ndarray, dict[str, int], list[Counter], np.ndarray]:
        """Every passage's analysed terms as ids in one array (-1 between passages), the term -> id map,
        per id the folded words it was written as, and per id how often it was only a fragment of a
        longer word ("don" of "don't", "champs" of "Champs-Élysées")."""
        if self._seq is None:
            term_ids: dict[str, int] = {}
            forms: list[Counter] = []
            fragments: Counter = Counter()
            chunks = []
            token_terms = self.analyzer.token_terms
            for p in self.passages:
                ids = []
                for w, *_ in p.words:
                    raws = TOKEN_RE.findall(w)
                    for raw in raws:
                        term = token_terms(raw)[0]
                        tid = term_ids.get(term)
                        if tid is None:
                            tid = term_ids[term] = len(term_ids)
                            forms.append(Counter())
                        ids.append(tid)
                        forms[tid][fold(raw)] += 1
                        if len(raws) > 1:
                            fragments[tid] += 1
                ids.append(-1)
                chunks.append(np.asarray(ids, dtype=np.int64))
            seq = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
            frag = np.zeros(len(term_ids), dtype=np.int64)
            for tid, n in fragments.items():
                frag[tid] = n
            self._seq = (seq, term_ids, forms, frag)
        return self._seq

    def is_proper(self, raw: str) -> bool:
        hit = self._proper.get(raw)
        if hit is None:
            hit = raw[:1].isupper() and self.case.is_proper_noun(raw)
            self._proper[raw] = hit
        return hit

    def example(self, pi: int, start: int, end: int) -> dict:
        p = self.passages[pi]
        return {"chunk": p.chunk_id, "text": snippet(p.text, start, end)}

    def example_of(self, folded: str) -> dict | None:
        at = self.first_seen.get(folded)
        return self.example(*at) if at else None

    def term_key(self, text: str) -> str:
        return " ".join(self.analyzer.token_terms(t)[0] for t in TOKEN_RE.findall(text))

    def phrase_protection(self, text: str) -> str | None:
        """Why a term (one word or several) is protected in this corpus, or None."""
        return self.case.phrase_reason(text)

    def protected(self, folded: str) -> str | None:
        """The protection of a folded word, judged on its most common written form."""
        forms = self.surfaces.get(folded)
        if not forms:
            return None
        return self.case.reason(forms.most_common(1)[0][0])


# ----------------------------------------------------------------------------------------- acronyms
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


# ----------------------------------------------------------------------------------------- names
@dataclass
class Mention:
    titles: tuple[str, ...]  # folded titles, "dr", "count"
    title_forms: tuple[str, ...]  # as written
    name: tuple[str, ...]  # folded name words, particles left out
    surface: str  # the name as written, particles inside kept: "Albert de Laval"
    full_surface: str  # titles included: "Dr. Van Dijk"
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
    after an abbreviated title ("Dr. Van Dijk")."""
    if after_title and fold(before[0]) in ABBREVIATED_TITLES:
        return _TITLE_GAP.fullmatch(text, before[2], after[1]) is not None
    return _NAME_GAP.fullmatch(text, before[2], after[1]) is not None


def find_mentions(corpus: Corpus) -> tuple[list[Mention], dict]:
    """Name mentions ([titles] name-words with particles) and bare title uses ("the Professor").

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
                    name_words.pop(0)  # a leading particle: "de Laval" -> "Laval"
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
    # a title somewhere): a place like "Café de Paris" must not claim "Paris".
    for word, n_alone in alone.items():
        fulls = containing.get(word)
        if n_alone < 5 or not fulls:
            continue
        (name, n_full), total = fulls.most_common(1)[0], sum(fulls.values())
        share = n_full / total
        if n_full < 4 or share < 0.8 or family(word) or max(titled_words[w] for w in name) < 2:
            continue
        if " of " in full_forms[name].most_common(1)[0][0]:
            continue  # "Bay of Biscay", "King of Rome": places and titles, not a person's name
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
    # classes (married / unmarried) tell family members apart: "M." is father and son alike.
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
    # A bare title ("the Professor") <-> the name that title goes with in the same document: most names
    # written with the title are that name, and no other such name shares as many of the passages where
    # the bare title is used (one captain as often as another: no suggestion).
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


# ----------------------------------------------------------------------------------------- morphology
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
    words (French "chambre" in "valet de chambre" is not "chamber").
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
        # Show the pair of written forms with the most evidence ("realize" / "realise", not "realised").
        a, b, rule = max(group, key=lambda x: (min(vocab[x[0]], vocab[x[1]]), x))
        if min(totals.values()) < 2:
            continue
        na, nb = totals[corpus.term_key(a)], totals[corpus.term_key(b)]
        canonical, alias, nc, nal = (a, b, na, nb) if na >= nb else (b, a, nb, na)
        examples = [e for e in (corpus.example_of(alias), corpus.example_of(canonical)) if e]
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


# ----------------------------------------------------------------------------------------- distributional
def mine_distributional(
    corpus: Corpus,
    min_count: int = 20,
    max_targets: int = 3000,
    max_contexts: int = 2000,
    min_cosine: float = 0.38,
) -> list[Suggestion]:
    """Mutual nearest neighbours by positive-PMI context vectors, never coordinated in the text."""
    seq, term_ids, forms, fragments = corpus.term_sequence()
    if not len(seq):
        return []
    n_terms = len(term_ids)
    # "X and Y", "X or Y", "X nor Y": coordinated words are siblings (mother/father), not synonyms.
    coord_ids = [term_ids[w] for w in _COORD_WORDS if w in term_ids]
    mid = np.isin(seq[1:-1], coord_ids)
    coord_pairs = Counter(
        (min(a, b), max(a, b)) for a, b in zip(seq[:-2][mid].tolist(), seq[2:][mid].tolist(), strict=True)
    )
    freq = np.bincount(seq[seq >= 0], minlength=n_terms)
    names = [""] * n_terms
    for t, i in term_ids.items():
        names[i] = t

    def eligible(i: int) -> bool:
        t = names[i]
        if freq[i] < min_count or len(t) < 3 or not t.isalpha() or t in ENGLISH_QUERY_STOPWORDS:
            return False
        if 2 * fragments[i] >= freq[i]:
            return False
        top = forms[i].most_common(1)[0][0]
        return top not in ENGLISH_QUERY_STOPWORDS and corpus.protected(top) is None

    order = np.argsort(-freq, kind="stable")
    targets = [int(i) for i in order if eligible(int(i))][:max_targets]
    contexts = [int(i) for i in order[:max_contexts]]
    if len(targets) < 2:
        return []
    row_of = np.full(n_terms + 1, -1, dtype=np.int64)
    row_of[targets] = np.arange(len(targets))
    col_of = np.full(n_terms + 1, -1, dtype=np.int64)
    col_of[contexts] = np.arange(len(contexts))
    n_rows, n_cols = len(targets), 2 * len(contexts)
    cells = []
    for d in (1, 2):
        left, right = seq[:-d], seq[d:]
        ok = (left >= 0) & (right >= 0)
        if d == 2:
            ok &= seq[1:-1] >= 0
        left, right = left[ok], right[ok]
        # right word as context of the left word (block 1), left word as context of the right (block 0)
        r, c = row_of[left], col_of[right]
        m = (r >= 0) & (c >= 0)
        cells.append(r[m] * n_cols + len(contexts) + c[m])
        r, c = row_of[right], col_of[left]
        m = (r >= 0) & (c >= 0)
        cells.append(r[m] * n_cols + c[m])
    counts = np.bincount(np.concatenate(cells), minlength=n_rows * n_cols)
    mat = counts.reshape(n_rows, n_cols).astype(np.float32)
    total = mat.sum()
    if total == 0:
        return []
    col = mat.sum(axis=0) ** 0.75
    col /= col.sum()
    row = mat.sum(axis=1, keepdims=True) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log((mat / total) / (row * col[None, :]))
    pmi[~np.isfinite(pmi)] = 0
    np.maximum(pmi, 0, out=pmi)
    norms = np.linalg.norm(pmi, axis=1, keepdims=True)
    norms[norms == 0] = 1
    vec = pmi / norms
    sims = vec @ vec.T
    np.fill_diagonal(sims, -1)
    best = sims.argmax(axis=1)
    out = []
    for a in range(n_rows):
        b = int(best[a])
        if b <= a or int(best[b]) != a or sims[a, b] < min_cosine:
            continue
        ta, tb = targets[a], targets[b]
        if coord_pairs[(ta, tb) if ta < tb else (tb, ta)]:
            continue
        fa, fb = int(freq[ta]), int(freq[tb])
        # Words written side by side ("hundred thousand") are parts of one phrase, not alternatives.
        side_by_side = int(np.count_nonzero((seq[:-1] == ta) & (seq[1:] == tb))) + int(
            np.count_nonzero((seq[:-1] == tb) & (seq[1:] == ta))
        )
        if side_by_side > max(2, 0.02 * min(fa, fb)):
            continue
        wa, wb = forms[ta].most_common(1)[0][0], forms[tb].most_common(1)[0][0]
        canonical, alias = (wa, wb) if fa >= fb else (wb, wa)
        examples = [e for e in (corpus.example_of(alias), corpus.example_of(canonical)) if e]
        cos = float(sims[a, b])
        out.append(
            Suggestion(
                canonical=canonical,
                alias=alias,
                kind="distributional",
                score=0.3 + 0.4 * cos,
                counts={"canonical": max(fa, fb), "alias": min(fa, fb), "cosine": round(cos, 3)},
                examples=examples,
                note=f"each is the other's nearest neighbour by context (cosine {cos:.2f}); "
                'not coordinated ("X and Y") and not a phrase',
            )
        )
    return out


MINERS: dict[str, Callable[[Corpus], list[Suggestion]]] = {
    "acronym": mine_acronyms,
    "names": mine_names,
    "morphology": mine_morphology,
    "distributional": mine_distributional,
}


def mine(
    store, analyzer: Analyzer, miners: Iterable[str] | None = None, collection: str | None = None
) -> tuple[list[Suggestion], Corpus]:
    """Run the miners (all by default) over the live index, or one collection of it; best first."""
    unknown = [m for m in miners or () if m not in MINERS]
    if unknown:
        raise ValueError(f"unknown miner(s) {', '.join(unknown)}: choose from {', '.join(MINERS)}")
    share: list[MinedShare] = []
    corpus = Corpus(load_passages(store, collection, MINE_CHUNKS, share), analyzer)
    corpus.share = share[0]
    out: list[Suggestion] = []
    for name in miners or MINERS:
        out.extend(MINERS[name](corpus))
    out.sort(key=lambda s: (-s.score, s.kind, s.canonical, s.alias))
    return out, corpus
