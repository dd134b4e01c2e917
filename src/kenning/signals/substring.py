"""The substring signal: query words found verbatim (case-insensitively) in chunks' raw text.

It catches what analysis changes: version strings, error codes, numbers, identifiers and words that
stemming conflates. Each chunk scores the fraction of the query's words it contains, plus a small
bonus that grows with how often they occur, so a chunk containing every word ranks first.

The raw texts of one generation are joined into one casefolded string, so each word is located by
C-level `str.find` scans and mapped back to chunks by offset.
"""

from __future__ import annotations

import re

import numpy as np

from kenning.arrays import unique_counts
from kenning.signals.base import Channel
from kenning.topk import top_k

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

    def __init__(self, store, live_ids: np.ndarray):
        parts, starts, ids = [], [], []
        offset = 0
        wanted = set(live_ids.tolist())
        for cid, title, body in store.iter_chunk_texts():
            if cid not in wanted:
                continue
            text = f"{title}\n{body}".casefold()
            ids.append(cid)
            starts.append(offset)
            parts.append(text)
            offset += len(text) + 1
        self.text = "\x00".join(parts)
        self.starts = np.array(starts, dtype=np.int64)
        self.ids = np.array(ids, dtype=np.int64)

    def counts(self, word: str, cap: int = 10_000) -> dict[int, int]:
        """Occurrences of `word` per chunk id (scanning stops after `cap` occurrences)."""
        hits = []
        find = self.text.find
        at = find(word)
        while at != -1 and len(hits) < cap:
            hits.append(at)
            at = find(word, at + 1)
        if not hits:
            return {}
        owners = self.ids[np.searchsorted(self.starts, np.array(hits), side="right") - 1]
        unique, counts = unique_counts(owners)
        return dict(zip(unique.tolist(), counts.tolist(), strict=True))

    def score_all(self, words: list[str]) -> dict[int, float]:
        """Every chunk holding any of the words: fraction of words present, plus up to 0.01 for how often."""
        present: dict[int, int] = {}
        total: dict[int, int] = {}
        for word in words:
            for cid, n in self.counts(word).items():
                present[cid] = present.get(cid, 0) + 1
                total[cid] = total.get(cid, 0) + n
        return {c: present[c] / len(words) + 0.01 * min(total[c], 10) / 10 for c in present}


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
        every = ctx.substring().score_all(words) if words else {}
        ids, scores = top_scores(every, query.depth, query.allowed)

        def score_of(chunk_ids):
            return np.array([every.get(c, 0.0) for c in np.asarray(chunk_ids).tolist()])

        return Channel(self.name, ids, scores, score_of, info={"words": words, "returned": len(ids)})
