"""The substring signal: query words found verbatim (case-insensitively) in chunks' raw text.

It catches what analysis changes: version strings, error codes, numbers, identifiers and words that
stemming conflates. Each chunk scores the share of the query's words it contains, so a chunk
containing every word ranks first; chunks that hold as many go by lowest id (kenning.kernels.topk's rule).
How often a word occurs is the lexical signal's business, not this one's: counting it would make the
trigram view read every candidate of a common word.

Two views answer it, with the same scores:
- SubstringView (an index without the substring index): the raw texts of one generation joined into
  one casefolded string in memory, each word located by C-level `str.find` scans and mapped back to
  chunks by offset. Memory and the first query of a generation grow with the corpus.
- TrigramSubstrings (`kenning index --substring-index`): each word's candidate chunks from the
  store's trigram index (kenning.store.sqlite.substrings), a superset; the candidates are read and
  confirmed best bound first until no unread one can enter the top k (a threshold algorithm), so the
  top k and every score shown are exact. Words under three characters cannot be looked up by
  trigrams: the channel reports them as skipped.
"""

from __future__ import annotations

import re

import numpy as np

from kenning.kernels.arrays import unique_counts
from kenning.kernels.topk import top_k
from kenning.signals.base import Channel
from kenning.store.records import MIN_TRIGRAM_WORD, substring_text

MIN_WORD = 2
_WORD = re.compile(r"\S+")
_TRIM = "\"'`.,;:!?()[]{}<>"


def substring_words(texts: list[str], analyzer) -> list[str]:
    """The words to look for: whitespace-separated, trimmed of outer punctuation, no stopwords."""
    words: dict[str, None] = {}
    for text in texts:
        for raw in _WORD.findall(text):
            word = raw.strip(_TRIM).casefold()
            if len(word) >= MIN_WORD and not analyzer.is_stopword(word):
                words.setdefault(word, None)
    return list(words)


class SubstringView:
    """Casefolded raw text of one generation's live chunks, searchable by substring."""

    kind = "memory"

    def __init__(self, store, live_ids: np.ndarray):
        parts, starts, ids = [], [], []
        offset = 0
        wanted = set(live_ids.tolist())
        for cid, title, body in store.iter_chunk_texts():
            if cid not in wanted:
                continue
            text = substring_text(title, body)
            ids.append(cid)
            starts.append(offset)
            parts.append(text)
            offset += len(text) + 1
        self.text = "\x00".join(parts)
        self.starts = np.array(starts, dtype=np.int64)
        self.ends = np.append(self.starts[1:] - 1, len(self.text)) if len(starts) else self.starts
        self.ids = np.array(ids, dtype=np.int64)

    def holders(self, word: str) -> np.ndarray:
        """Ids of the chunks whose text holds `word`: one scan step per chunk that holds it (the
        scan jumps to the end of a chunk once the word is found in it)."""
        found = []
        find, at = self.text.find, self.text.find(word)
        while at != -1:
            i = int(np.searchsorted(self.starts, at, side="right")) - 1
            found.append(i)
            at = find(word, int(self.ends[i]))
        return self.ids[found] if found else np.zeros(0, dtype=np.int64)

    def score_all(self, words: list[str]) -> dict[int, float]:
        """Every chunk holding any of the words: the share of the words it holds."""
        held = np.concatenate([self.holders(w) for w in words]) if words else np.zeros(0, np.int64)
        ids, counts = unique_counts(held)
        return dict(zip(ids.tolist(), (counts / len(words)).tolist(), strict=True))

    def top(self, words: list[str], k: int, allowed: np.ndarray | None):
        """(ids, scores, score_of, skipped words) of the k best chunks."""
        every = self.score_all(words) if words else {}
        ids, scores = top_scores(every, k, allowed)

        def score_of(chunk_ids):
            return np.array([every.get(c, 0.0) for c in np.asarray(chunk_ids).tolist()])

        return ids, scores, score_of, []


def chunk_score(text: str, words: list[str]) -> float:
    """One chunk's substring score from its casefolded text: the share of the words it holds."""
    return sum(word in text for word in words) / len(words)


class TrigramSubstrings:
    """The substring signal over the store's trigram index (see the module docstring); call inside
    store.reading()."""

    BATCH = 64  # candidates read and confirmed at a time
    kind = "trigram"

    def __init__(self, store, live: np.ndarray):
        """`live`: boolean mask over chunk ids of the generation searched."""
        self.store = store
        self.live = live

    def top(self, words: list[str], k: int, allowed: np.ndarray | None):
        searched = [w for w in words if len(w) >= MIN_TRIGRAM_WORD]
        skipped = [w for w in words if len(w) < MIN_TRIGRAM_WORD]
        found = [_within(c, self.live) for c in self._candidates(searched)]
        ids, holds = unique_counts(np.concatenate(found)) if found else (np.zeros(0, np.int64), None)
        candidates = set(ids.tolist())  # live chunks that may hold a word: score_of reads only these
        if allowed is not None:
            keep = _within(ids, allowed, keep=True)
            ids, holds = ids[keep], holds[keep]
        exact: dict[int, float] = {}

        def score_of(chunk_ids):
            chunk_ids = [int(c) for c in np.asarray(chunk_ids).tolist()]
            todo = [c for c in chunk_ids if c not in exact and c in candidates]  # others hold no word
            if todo:
                texts = self.store.substring_texts(todo)
                exact.update({c: chunk_score(texts[c], searched) if c in texts else 0.0 for c in todo})
            return np.array([exact.get(c, 0.0) for c in chunk_ids])

        if not len(ids):
            return np.zeros(0, dtype=np.int64), np.zeros(0), score_of, skipped
        # no chunk holds more of the words than its candidate sets: confirm the best bounds first
        # (ties by lowest id, as top_k breaks them) until the k-th confirmed beats every unread bound
        bound = holds / len(searched)
        order = np.lexsort((ids, -bound))
        ids, bound = ids[order], bound[order]
        for start in range(0, len(ids), self.BATCH):
            best = sorted((-v, c) for c, v in exact.items() if v > 0)
            if len(best) >= k and best[k - 1] < (-bound[start], int(ids[start])):
                break
            score_of(ids[start : start + self.BATCH])
        scored = {c: v for c, v in exact.items() if v > 0}
        top_ids, top_values = top_scores(scored, k, None)
        return top_ids, top_values, score_of, skipped

    def _candidates(self, words: list[str]) -> list[np.ndarray]:
        return [self.store.substring_candidates(w) for w in words]


def _within(ids: np.ndarray, mask: np.ndarray, keep: bool = False) -> np.ndarray:
    """The ids inside a boolean mask over chunk ids (`keep`: the boolean selector instead)."""
    inside = (ids < len(mask)) & mask[np.minimum(ids, len(mask) - 1)] if len(mask) else ids < 0
    return inside if keep else ids[inside]


def top_scores(scores: dict[int, float], k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k (chunk ids, scores), best first, among `allowed` chunks (a boolean mask over ids)."""
    ids = np.array(list(scores), dtype=np.int64)
    values = np.array(list(scores.values()), dtype=np.float64)
    if allowed is not None and len(ids):
        keep = (ids < len(allowed)) & allowed[np.minimum(ids, len(allowed) - 1)]
        ids, values = ids[keep], values[keep]
    return top_k(ids, values, k)


# ------------------------------------------------------------------------------------------ the signal
class SubstringSignal:
    """Raw-text matches of the query's words, for codes and identifiers the analyzer splits (v2.3.1,
    ERR_42). Off by default (weight 0): `--w-substring 1` turns it on."""

    name = "substring"
    weight = 0.0
    knobs = ()
    help = "raw substring matches of the query's words"

    def channel(self, ctx, query) -> Channel | None:
        if ctx.substring is None:
            return None
        words = substring_words(query.words, ctx.analyzer)
        view = ctx.substring()
        ids, scores, score_of, skipped = view.top(words, query.depth, query.allowed)
        info = {"words": words, "returned": len(ids), "index": view.kind}
        if skipped:
            info["skipped"] = skipped  # too short for the trigram index
        return Channel(self.name, ids, scores, score_of, info=info)
