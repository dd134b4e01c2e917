"""Query-time expansion: the approved other names of a query word or phrase, read on every search.

The search plan (kenning.query.plan) asks for the alternatives of each plain, required, OR and
field word; the query parser asks which runs of words are a glossary term of several words
(`phrases`: "content type" typed without quotes is one term, found in its group); this module is
all they need from the glossary. It reads the approved members (canonical and alias) once per index
generation into a key -> groups map, so a search costs a dictionary lookup per word, and pending or
rejected members never reach a query.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from kenning.analysis.analyzer import TOKEN_RE
from kenning.glossary.terms import APPROVED, term_key

MAX_PHRASE_TERMS = 8  # a glossary phrase is looked for over at most this many analysed words


@dataclass
class Alternative:
    """One way a query word may be matched after expansion."""

    surface: str  # the alias text as written, e.g. "sign-in" or "JSON Web Token"
    group_id: int
    canonical: str
    status: str  # "canonical" or "alias"


class GlossaryExpansion:
    """The approved alias groups of one index, looked up by term key."""

    def __init__(self, store, analyzer):
        self.store = store
        self.analyzer = analyzer
        self._lookup: dict[str, list[tuple[int, str]]] | None = None
        self._members: dict[int, list[tuple[str, str, str]]] = {}
        self._canonical: dict[int, str] = {}
        self._lookup_generation: int | None = None

    def _load_lookup(self) -> None:
        generation = self.store.generation()
        if self._lookup is not None and self._lookup_generation == generation:
            return
        lookup: dict[str, list[tuple[int, str]]] = {}
        members: dict[int, list[tuple[str, str, str]]] = {}
        canonical: dict[int, str] = {}
        with self.store.reading():
            scopes = {g.id: g.scope for g in self.store.glossary_groups()}
            terms = self.store.glossary_terms()
        approved = [t for t in terms if t.status in APPROVED and t.group_id in scopes]
        approved.sort(key=lambda t: (t.group_id, t.status != "canonical", t.id))
        for t in approved:
            members.setdefault(t.group_id, []).append((t.surface, t.key, t.status))
            if t.status == "canonical":
                canonical[t.group_id] = t.surface
            lookup.setdefault(t.key, []).append((t.group_id, scopes[t.group_id]))
        self._lookup, self._members, self._canonical = lookup, members, canonical
        self._lookup_generation = generation

    def is_empty(self) -> bool:
        """No approved group at all: searches can skip glossary lookups entirely."""
        self._load_lookup()
        return not self._lookup

    def phrases(self, scopes: list[str] | None = None) -> GlossaryPhrases | None:
        """The glossary's terms of several words that a query may type without quotes (each in a
        group with another approved member in these scopes), or None when there are none."""
        self._load_lookup()
        allowed = None if scopes is None else {"", *scopes}
        keys = {
            key
            for key, hits in self._lookup.items()
            if " " in key
            and len(key.split()) <= MAX_PHRASE_TERMS
            and any(
                (allowed is None or scope in allowed) and len(self._members[gid]) > 1 for gid, scope in hits
            )
        }
        return GlossaryPhrases(keys, self.analyzer) if keys else None

    def expansions(self, word: str, scopes: list[str] | None = None) -> list[Alternative]:
        """The approved other members of the group(s) holding `word`.

        `scopes=None` looks in every scope; a list looks in the global scope plus those collections.
        """
        self._load_lookup()
        key = term_key(self.analyzer, word)
        hits = self._lookup.get(key) if key else None
        if not hits:
            return []
        allowed = None if scopes is None else {"", *scopes}
        out: list[Alternative] = []
        seen = {key}
        for gid, scope in hits:
            if allowed is not None and scope not in allowed:
                continue
            for surface, member_key, status in self._members.get(gid, []):
                if member_key in seen:
                    continue
                seen.add(member_key)
                out.append(Alternative(surface, gid, self._canonical.get(gid, surface), status))
        return out


class GlossaryPhrases:
    """Finds glossary terms of several words in a query's words: the longest run of words, from a
    given one, whose analysed form (each word's whole index term, as `term_key` reads a term) is a
    term's key. So case and inflection do not matter: "Content Types" finds "content type"."""

    def __init__(self, keys: set[str], analyzer):
        self.keys = keys
        self.analyzer = analyzer

    def _terms(self, text: str) -> list[str]:
        raws = TOKEN_RE.findall(unicodedata.normalize("NFC", text))
        return [self.analyzer.token_terms(raw)[0] for raw in raws]

    def longest(self, words: list[str]) -> int:
        """How many of `words`, from the first, make the longest glossary term of two words or more
        (0: none starts there)."""
        terms: list[str] = []
        best = 0
        for end, word in enumerate(words):
            terms += self._terms(word)
            if len(terms) > MAX_PHRASE_TERMS:
                break
            if end > 0 and " ".join(terms) in self.keys:
                best = end + 1
        return best
