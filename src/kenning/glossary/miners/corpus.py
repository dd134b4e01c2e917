"""The text the miners read and what they return: live chunks as passages, their shared counts, and
the `Suggestion` a miner proposes.

Counting works on the live chunks' raw text; overlapping windows of one section are cut back to
their new lines so a passage is not counted twice.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from kenning.analysis.analyzer import TOKEN_RE, Analyzer, fold
from kenning.analysis.protected import CaseStats, iter_words
from kenning.store.records import own_text

SNIPPET_CHARS = 160


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
        body = own_text(row.title, row.body)
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
                if "-" in w:  # "Rolls-Royce": the parts are capitalised words too
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
        longer word ("don" of "don't", "rolls" of "Rolls-Royce")."""
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

    def examples_of(self, *folded: str) -> list[dict]:
        """An example of each folded word where it is first seen (words never seen give none)."""
        return [self.example(*self.first_seen[f]) for f in folded if f in self.first_seen]

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
