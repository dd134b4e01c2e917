"""BM25 over one committed generation: the postings reader and scorer behind the lexical signal.

A LexicalView reads each query term's live postings from the segments (through the store), scores
them with the formula in kenning.lexical.bm25, prunes with block maxima (kenning.lexical.pruning),
checks phrases on positions or text, and explains any chunk's score term by term.

Speed: a view of one committed generation keeps, per term, its live postings and, per parameter set,
its weighted field scores, in the index's bounded cache (kenning.common.cache), so a repeated query
is a few numpy scatter-adds per term. The explain path recomputes every number from the raw term
frequencies, and tests hold both paths equal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

from kenning import kernels
from kenning.common.cache import BoundedCache, IndexCaches, nbytes
from kenning.kernels.arrays import bitmap_of, sorted_unique
from kenning.lexical.bm25 import (
    Bm25Params,
    ScoringClause,
    field_frequency,
    idf,
    joint_saturate,
    saturate,
    saturate_once,
)
from kenning.lexical.pruning import BLOCK_BITS
from kenning.sidefiles.lengths_file import LengthsFile, build_lengths
from kenning.store.records import own_text

_ABSENT = object()  # "not cached" (None is a cached answer: the term has no postings)


@dataclass
class TermPostings:
    """One term's live postings across all segments, ids ascending."""

    # uint32 chunk ids and uint8 or uint16 term frequencies: as stored when one segment holds them all
    # and none is deleted (no copy), else joined and widened to uint16. Kept narrow: a process's
    # first query pays for every new memory page it fills
    ids: np.ndarray
    tf_title: np.ndarray
    tf_body: np.ndarray

    @property
    def df(self) -> int:
        return len(self.ids)

    @functools.cached_property
    def bitmap(self) -> BitMap:
        """Its chunks as a roaring bitmap, made when first asked for: a query's candidates are made
        from the ids themselves (kenning.kernels.arrays.union_of), and building a common word's bitmap
        costs about 0.3 ms, so it is built only for the queries that need it."""
        return bitmap_of(self.ids)


# phrase candidates up to this many are checked on their text, re-analysed, instead of on stored
# positions: a common word's positions fill megabytes at a million chunks ("the" in a pasted
# sentence), a few chunks' text a few kilobytes
PHRASE_TEXT_CHECK = 64
# what each way of checking a phrase on a few candidates costs, to pick the cheaper (both give the same
# answer): a token of a candidate's text re-analysed; a posting's positions read (per posting of the
# words already read, from their df); one term's positions in one field of one segment (a read's own
# cost), in microseconds, as they stand on a large index; only their ratios decide
TEXT_TOKEN_US = 1.7
POSITION_US = 0.017
POSITION_READ_US = 20.0


# up to this many chunks are looked up in a term's ids (a binary search each) rather than intersected
# with its bitmap, which a common term would first have to build (about 0.3 ms)
LOOKUP_UP_TO = 2048


def chunks_holding(docs: BitMap, postings: TermPostings) -> BitMap:
    """Those of `docs` that hold the term of `postings`."""
    if len(docs) > LOOKUP_UP_TO:
        return docs & postings.bitmap
    wanted = np.frombuffer(docs.to_array(), dtype=np.uint32)
    if kernels.NATIVE:
        return bitmap_of(kernels.intersect_ids((wanted, postings.ids)))
    at = np.minimum(np.searchsorted(postings.ids, wanted), max(len(postings.ids) - 1, 0))
    held = postings.ids[at] == wanted if len(postings.ids) else np.zeros(len(wanted), dtype=bool)
    return bitmap_of(wanted[held])


class LexicalView:
    """BM25 over one committed generation. Built by `LexicalIndex.view()`; immutable afterwards."""

    def __init__(self, store, snapshot, cache: BoundedCache, analyzer=None):
        self.store = store
        self.analyzer = analyzer  # the index's analyzer, for checking phrases on text
        self.snapshot = snapshot
        self.generation = snapshot.generation
        self.live = snapshot.live
        self.n_docs = len(self.live)
        self.cache = cache  # keys ("seg", segment, ...) and ("gen", generation, ...): kenning.common.cache
        self._params_ids: dict[Bm25Params, int] = {}
        self._held: int | None = None  # chunks the segments hold, deleted ones too (term_counts)
        directory = store.directory
        mapped = LengthsFile(directory).open(store, snapshot) if directory else None
        if mapped is not None:  # the writer saved this generation's arrays (kenning.sidefiles.lengths_file)
            self.title_len, self.body_len, self.live_mask, self.max_id = mapped[:4]
            self.avg_title_len, self.avg_body_len = mapped[4:]
        else:
            built = build_lengths(snapshot, self._segment)
            self.title_len, self.body_len, self.live_mask = built.title_len, built.body_len, built.live_mask
            self.max_id, self.avg_title_len, self.avg_body_len = (
                built.max_id,
                built.avg_title_len,
                built.avg_body_len,
            )

    def _segment(self, seg_id: int):
        return self.cache.get_or_make(("seg", seg_id, "lengths"), lambda: self.store.load_segment(seg_id))

    # ------------------------------------------------------------------ postings
    def postings(self, terms: list[str]) -> dict[str, TermPostings | None]:
        """Live postings for each term (None when no live chunk has it). Call inside store.reading()."""
        out = {t: self.cache.get(self._postings_key(t), _ABSENT) for t in terms}
        missing = [t for t, p in out.items() if p is _ABSENT]
        if missing:
            per_segment = self._raw_postings_of(self.snapshot.segment_ids, missing)
            for t in missing:
                parts = [
                    per_segment[s][t] for s in self.snapshot.segment_ids if per_segment[s][t] is not None
                ]
                out[t] = self._merge_live(parts)
                # (with room for the bitmap it may make later: at most two bytes a chunk)
                size = None if out[t] is None else nbytes(out[t]) + 2 * out[t].df
                self.cache.put(self._postings_key(t), out[t], size)
        return out

    def _postings_key(self, term: str) -> tuple:
        return ("gen", self.generation, "postings", term)

    def _raw_postings(self, seg_id: int, terms: list[str]) -> dict:
        """One segment's postings of each term (None where it has none), read through the cache."""
        return self._raw_postings_of((seg_id,), terms)[seg_id]

    def _raw_postings_of(self, seg_ids, terms: list[str]) -> dict[int, dict]:
        """Each segment's postings of each term, read through the cache; what is missing from it is
        read in one call for all the segments (one round trip on a server store)."""
        got = {s: {t: self.cache.get(("seg", s, "postings", t), _ABSENT) for t in terms} for s in seg_ids}
        need = {s: [t for t, p in row.items() if p is _ABSENT] for s, row in got.items()}
        need = {s: ts for s, ts in need.items() if ts}
        if need:
            found = self.store.load_postings_of(need)
            for s, ts in need.items():
                for t in ts:
                    got[s][t] = found[s].get(t)
                    self.cache.put(("seg", s, "postings", t), got[s][t])
        return got

    def _merge_live(self, parts) -> TermPostings | None:
        if not parts:
            return None
        native = kernels.live_as_stored(parts, self.live_mask) or kernels.live_postings(parts, self.live_mask)
        if native is not None:  # as stored, or joined, filtered and widened in one pass
            ids, tft, tfb = native
        else:
            # deleted chunks are dropped while the columns are in their stored widths (uint32 ids,
            # one or two bytes a frequency), then widened: filtering the narrow columns moves a
            # fraction of the bytes that filtering widened copies would
            ids = np.concatenate([p[0] for p in parts])
            tft = np.concatenate([p[1] for p in parts])
            tfb = np.concatenate([p[2] for p in parts])
            keep = self.live_mask[ids]
            if not keep.all():
                ids, tft, tfb = ids[keep], tft[keep], tfb[keep]
            ids, tft, tfb = ids.astype(np.uint32), tft.astype(np.uint16), tfb.astype(np.uint16)
        if len(ids) == 0:
            return None
        if len(parts) > 1 and not np.all(ids[1:] > ids[:-1]):
            order = np.argsort(ids, kind="stable")
            ids, tft, tfb = ids[order], tft[order], tfb[order]
        return TermPostings(ids, tft, tfb)

    # ------------------------------------------------------------------ fields and phrases
    def field_docs(self, term: str, field: str) -> BitMap:
        """Live chunks holding `term` in one field ("title" or "body")."""
        postings = self.postings([term])[term]
        if postings is None:
            return BitMap()
        tf = postings.tf_title if field == "title" else postings.tf_body
        return bitmap_of(postings.ids[tf > 0])

    def _field_positions(self, seg_id: int, term: str, field: str):
        """(ids, term frequencies, positions) of a term in one field of one segment, or None."""
        key = ("seg", seg_id, "positions", term, field)
        cached = self.cache.get(key, _ABSENT)
        if cached is _ABSENT:
            raw = self._raw_postings(seg_id, [term])[term]
            positions = self.store.load_positions(seg_id, term, field) if raw is not None else None
            if positions is None:
                cached = None
            else:
                tf = raw[1] if field == "title" else raw[2]
                cached = (raw[0], tf if len(tf) else np.zeros(len(raw[0]), dtype=np.uint16), positions)
            self.cache.put(key, cached)
        return cached

    def phrase_docs(
        self, words: list[tuple[str, int]], candidates: BitMap, field: str | None = None
    ) -> BitMap:
        """The candidates in which every (term, offset) occurs at one common start position.

        Terms must be adjacent as the offsets say, inside one field (title or body; `field` picks one).
        Reads token positions, never the raw text. Each occurrence becomes the key
        chunk_id * 2^32 + (position - offset); a phrase match is a key that every term shares.
        """
        terms = list(dict.fromkeys(t for t, _ in words))
        docs = BitMap(candidates)
        # the terms whose postings are already read first: when they leave few candidates, the text
        # check settles the phrase without reading a common word's postings at all
        loaded = [t for t in terms if self.cache.get(self._postings_key(t), _ABSENT) is not _ABSENT]
        unread = [t for t in terms if t not in loaded]
        for group in (loaded, unread):
            found = self.postings(group)
            if any(found[t] is None for t in group):
                return BitMap()
            for t in sorted(group, key=lambda t: found[t].df):  # rarest first: fewest to look up
                docs = chunks_holding(docs, found[t])
                if not docs:
                    return docs
            few = len(words) > 1 and self.analyzer is not None and len(docs) <= PHRASE_TEXT_CHECK
            if few and self._positions_cheaper_than_text(terms, docs, field):
                # a small collection's common words, or words whose positions are already read
                return self._phrase_by_positions(words, docs, field)
            narrowed = False
            if group is loaded and unread and self._positions_first(group, found, docs, field):
                docs = self._sub_phrase_docs(words, set(loaded), docs, field)
                narrowed = True
                if not docs:
                    return docs
            if len(words) > 1 and self.analyzer is not None and len(docs) <= PHRASE_TEXT_CHECK:
                if narrowed and not few and self._positions_cheaper_than_text(terms, docs, field):
                    return self._phrase_by_positions(words, docs, field)  # few now: as above
                rarest = sorted(found, key=lambda t: found[t].df)[:2]
                if not narrowed and len(rarest) == 2 and self._positions_first(rarest, found, docs, field):
                    # the two rarest words at their offsets, from their positions, when that costs less
                    # than re-analysing the candidates' text: random chunks seldom hold them side by
                    # side, so the positions often leave few or no candidates to read
                    docs = self._sub_phrase_docs(words, set(rarest), docs, field)
                    if not docs:
                        return docs
                return self._phrase_in_text(words, docs, field)
        if len(words) == 1:
            return docs if field is None else docs & self.field_docs(words[0][0], field)
        return self._phrase_by_positions(words, docs, field)

    def _positions_first(self, terms: list[str], found: dict, docs: BitMap, field: str | None) -> bool:
        """Whether to narrow `docs` by the stored positions of `terms` (words already read) before
        the rest of a phrase is checked: always for more than PHRASE_TEXT_CHECK candidates, else when
        reading those positions costs less than re-analysing the candidates' text. A long chunk's text
        costs more than a rare word's positions, often by an order of magnitude."""
        if len(docs) > PHRASE_TEXT_CHECK:
            return True
        fields = [field] if field else ["title", "body"]
        tokens = self._text_tokens(docs, fields)
        postings = sum(found[t].df for t in terms)
        reads = len(terms) * len(fields) * len(self.snapshot.segment_ids)
        return postings * POSITION_US + reads * POSITION_READ_US < tokens * TEXT_TOKEN_US

    def _positions_cheaper_than_text(self, terms: list[str], docs: BitMap, field: str | None) -> bool:
        """Whether reading every word's postings and positions (those not read yet) costs less than
        re-analysing the few candidates' text. On a small collection even a stopword's positions are a
        few thousand, and once read they stay in the cache; on a large one a stopword's positions fill
        megabytes and the text wins. A word whose postings are not read yet is priced by its count."""
        fields = [field] if field else ["title", "body"]
        text = self._text_tokens(docs, fields) * TEXT_TOKEN_US
        segments = self.snapshot.segment_ids
        reads = len(terms) * len(fields) * len(segments)
        if reads * POSITION_READ_US >= text:
            return False
        read = {t: self.cache.get(self._postings_key(t), _ABSENT) for t in terms}
        unread = [t for t, p in read.items() if p is _ABSENT]
        df = {t: p.df for t, p in read.items() if p is not _ABSENT and p is not None}
        counted = self.store.posting_counts(segments, unread) if unread else {}
        df.update((t, counted.get(t, 0)) for t in unread)
        cost = sum(df.get(t, 0) for t in unread) * POSITION_US  # their postings
        for t in terms:
            for f in fields:
                if any(self.cache.get(("seg", s, "positions", t, f), _ABSENT) is _ABSENT for s in segments):
                    cost += df.get(t, 0) * POSITION_US  # their positions
        return cost + reads * POSITION_READ_US < text

    def _text_tokens(self, docs: BitMap, fields: list[str]) -> int:
        """The tokens of some chunks' fields: what re-analysing their text costs."""
        ids = np.frombuffer(docs.to_array(), dtype=np.uint32)
        ids = ids[ids <= self.max_id]
        lengths = [self.title_len if f == "title" else self.body_len for f in fields]
        return sum(int(length[ids].sum(dtype=np.int64)) for length in lengths)

    def _sub_phrase_docs(self, words, terms: set[str], docs: BitMap, field: str | None) -> BitMap:
        """The docs where the phrase's words among `terms` stand at their offsets: a chunk holding the
        whole phrase passes, so this narrows the candidates before a common word's postings (a
        stopword's: about as many positions as the index has chunks) are read, often to few enough
        for the text check. Needs two of those words to say anything."""
        part = [w for w in words if w[0] in terms]
        return self._phrase_by_positions(part, docs, field) if len(part) > 1 else docs

    def _phrase_by_positions(self, words: list[tuple[str, int]], docs: BitMap, field: str | None) -> BitMap:
        """The docs in which every (term, offset) shares one start, from the stored positions. The
        rarest words first: the starts shared so far often run out before a common word's positions
        (a stopword's: about as many as the index has chunks) are read at all."""
        wanted = np.frombuffer(docs.to_array(), dtype=np.uint32)
        found = self.postings(list(dict.fromkeys(t for t, _ in words)))
        rarest_first = sorted(words, key=lambda w: found[w[0]].df if found[w[0]] is not None else 0)
        if kernels.NATIVE:
            return self._phrase_by_positions_native(rarest_first, wanted, field)
        wanted = wanted.astype(np.int64)
        matched = BitMap()
        for f in [field] if field else ["title", "body"]:
            shared = None
            for term, offset in rarest_first:
                keys = []
                for seg_id in self.snapshot.segment_ids:
                    entry = self._field_positions(seg_id, term, f)
                    if entry is not None:
                        keys.append(_occurrence_keys(entry, wanted, offset))
                here = sorted_unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
                shared = here if shared is None else np.intersect1d(shared, here, assume_unique=True)
                if len(shared) == 0:
                    break
            if shared is not None and len(shared):
                matched |= bitmap_of(sorted_unique(shared >> 32))
        return matched

    def _phrase_by_positions_native(self, rarest_first, wanted: np.ndarray, field: str | None) -> BitMap:
        """`_phrase_by_positions` in C (kenning.kernels.phrase_chunks): a chunk lies in one segment,
        so each segment's and field's positions are checked on their own and the chunks found joined.
        The words are read rarest first: a word the segment lacks ends it, and the two rarest narrow
        the chunks before the others' positions are read (a stopword's fill megabytes at a million
        chunks, and the rarest two seldom stand side by side)."""
        matched = BitMap()
        for f in [field] if field else ["title", "body"]:
            for seg_id in self.snapshot.segment_ids:
                here: np.ndarray | None = wanted
                words = []
                for term, offset in rarest_first:
                    entry = self._field_positions(seg_id, term, f)
                    if entry is None:
                        here = None  # a word this segment does not hold in this field: none of its chunks
                        break
                    words.append((*entry, offset))
                    if len(words) == 2 and len(rarest_first) > 2:
                        here = kernels.phrase_chunks(here, words)
                        if not len(here):
                            break
                if here is not None and len(here):
                    matched.update(kernels.phrase_chunks(here, words))
        return matched

    def _phrase_in_text(self, words: list[tuple[str, int]], docs: BitMap, field: str | None) -> BitMap:
        """The chunks whose title or body, analysed as at indexing, holds every (term, offset) at one
        common start: the same answer as the stored positions give, read from a few chunks' text."""
        rows = self.store.chunks_by_ids(list(docs))
        wanted = {t for t, _ in words}
        matched = BitMap()
        for chunk_id, row in rows.items():
            for f in [field] if field else ["title", "body"]:
                terms, positions = self.analyzer.positioned_terms(
                    row.title if f == "title" else own_text(row.title, row.body)
                )
                at: dict[str, set[int]] = {}
                for term, position in zip(terms, positions, strict=True):
                    if term in wanted:  # only the phrase's own terms: most of a text is not
                        at.setdefault(term, set()).add(position)
                if len(at) < len(wanted):
                    continue  # a term of the phrase is not in this field
                rarest, offset = min(words, key=lambda w: len(at[w[0]]))  # fewest starts to try
                if any(
                    all(start + o in at[t] for t, o in words) for start in (p - offset for p in at[rarest])
                ):
                    matched.add(chunk_id)
                    break
        return matched

    # ------------------------------------------------------------------ scoring
    def idf(self, term: str) -> float:
        p = self.postings([term])[term]
        return idf(self.n_docs, p.df if p else 0)

    def term_counts(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(chunks the view's segments hold, each term's number of them), deleted chunks included
        until a merge drops them, as Lucene and tantivy count document frequencies: for weighing
        terms by idf alone. Query feedback asks ~70 terms, and reading their postings for exact live
        counts would cost a large share of a hybrid query on a big index once any chunk is deleted,
        while deleted-but-held chunks barely move idf (with a fifth of the chunks deleted, the dev
        sets' rankings hardly change). Scoring still uses the live postings' df."""
        if self._held is None:
            ours = set(self.snapshot.segment_ids)
            self._held = sum(n for segment, n in self.store.segment_sizes() if segment in ours)
        return self._held, self.store.posting_counts(self.snapshot.segment_ids, terms)

    def mask(self, docs: BitMap) -> np.ndarray:
        """A boolean array over chunk ids, True for the chunks in `docs`."""
        out = np.zeros(self.max_id + 1, dtype=bool)
        if docs:
            ids = np.frombuffer(docs.to_array(), dtype=np.uint32)
            out[ids[ids <= self.max_id]] = True
        return out

    def impacts(self, postings: TermPostings, params: Bm25Params, field: str | None = None) -> np.ndarray:
        """Weighted saturated field scores for every posting of a term (idf not applied).

        `field` keeps one field's part only (for `title:word`); None sums both with their weights.
        """
        ids = postings.ids
        if params.variant == "bm25f":
            return joint_saturate(
                postings.tf_title, self.title_len[ids], self.avg_title_len,
                postings.tf_body, self.body_len[ids], self.avg_body_len, params, field,
            )  # fmt: skip
        out = np.zeros(len(ids))
        if field != "body":
            out += params.title_weight * saturate(
                postings.tf_title, self.title_len[ids], self.avg_title_len, params
            )
        if field != "title":
            out += params.body_weight * saturate(
                postings.tf_body, self.body_len[ids], self.avg_body_len, params
            )
        return out

    def weighted(
        self, term: str, postings: TermPostings, params: Bm25Params, field: str | None = None
    ) -> np.ndarray:
        """idf x impacts: a term's whole contribution to each chunk holding it, kept per parameter set
        in the index's cache, so a repeated query is a few scatter-adds."""
        key = ("gen", self.generation, "weighted", self._params_key(params), term, field)
        out = self.cache.get(key)
        if out is None:
            weight = self.postings_idf(postings)
            out = kernels.weigh(
                postings.ids, postings.tf_title, postings.tf_body, self.title_len, self.body_len,
                self.avg_title_len, self.avg_body_len, params, weight, field,
            )  # fmt: skip
            if out is None:  # the same numbers in NumPy
                out = weight * self.impacts(postings, params, field)
            self.cache.put(key, out, out.nbytes + 96)
        return out

    def block_bounds(
        self, term: str, postings: TermPostings, params: Bm25Params, field: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The blocks of 2^BLOCK_BITS chunk ids where the term occurs (ascending), its largest
        weighted score in each, and where each one's postings start in its ids (plus the end): the
        bounds dynamic pruning (kenning.lexical.pruning) skips blocks by. Kept beside the weighted
        scores; only occupied blocks are kept, so a rare term's bounds stay as small as its postings."""
        key = ("gen", self.generation, "blocks", self._params_key(params), term, field)
        out = self.cache.get(key)
        if out is None:
            weighted = self.weighted(term, postings, params, field)
            block = postings.ids >> BLOCK_BITS
            first = np.flatnonzero(np.concatenate(([True], block[1:] != block[:-1]))) if len(block) else block
            maxima = np.maximum.reduceat(weighted, first) if len(first) else np.zeros(0)
            starts = np.append(first, len(block)).astype(np.int64)
            out = (block[first].astype(np.int64), maxima, starts)
            self.cache.put(key, out, sum(a.nbytes for a in out) + 96)
        return out

    def cached_bound(
        self, term: str, params: Bm25Params, field: str | None, weight: float
    ) -> float | tuple[float, float] | None:
        """MaxScore's bound on a term's weighted scores times `weight` (a (title hits, rest) pair for
        a term the kernel searches as two lists), when an earlier query kept it (`keep_bound`); None
        for a term not met in this view."""
        return self.cache.get(self._bound_key(term, params, field, weight))

    def keep_bound(
        self,
        term: str,
        params: Bm25Params,
        field: str | None,
        weight: float,
        value: float | tuple[float, float],
    ) -> None:
        self.cache.put(self._bound_key(term, params, field, weight), value, 96)

    def _bound_key(self, term: str, params: Bm25Params, field: str | None, weight: float) -> tuple:
        return ("gen", self.generation, "bound", self._params_key(params), term, field, weight)

    def postings_idf(self, postings: TermPostings) -> float:
        """The idf `weighted` weighs these postings by (`idf` takes a term and reads its postings)."""
        return idf(self.n_docs, postings.df)

    def _params_key(self, params: Bm25Params) -> int:
        """A small number per parameter set, so that cache keys hash in a few nanoseconds."""
        key = self._params_ids.get(params)
        if key is None:
            key = self._params_ids[params] = len(self._params_ids)
        return key

    def score(
        self,
        clauses: list[ScoringClause],
        found: dict[str, TermPostings | None],
        params: Bm25Params,
        allowed=None,
    ) -> np.ndarray:
        """Dense score array over chunk ids (index = chunk id), coordination over clauses applied.

        `allowed` (a boolean mask over chunk ids) restricts scoring to the funnel's survivors. All
        contributions are gathered first and summed by one bincount, the cheapest way in numpy.
        """
        size = self.max_id + 1
        use_coord = params.coord_floor < 1.0 and len(clauses) > 1
        ids_parts, weight_parts, term_weights, matched_parts, matched_of = [], [], [], [], []
        for n, clause in enumerate(clauses):
            weight = (params.query_weight(clause.qtf) if clause.qtf != 1 else 1.0) * clause.boost
            for st in clause.terms:
                postings = found.get(st.term)
                if postings is None:
                    continue
                ids = postings.ids
                contribution = self.weighted(st.term, postings, params, st.field)
                keep = None if st.docs is None else self.mask(st.docs)[ids]
                if allowed is not None:
                    keep = allowed[ids] if keep is None else keep & allowed[ids]
                if keep is not None:
                    ids, contribution = ids[keep], contribution[keep]
                ids_parts.append(ids)
                weight_parts.append(contribution)
                term_weights.append(weight)
            if use_coord:
                if clause.docs is not None:
                    matched_parts.append(np.frombuffer(clause.docs.to_array(), dtype=np.uint32))
                    matched_of.append(n)
                elif (postings := found.get(clause.terms[0].term)) is not None:
                    matched_parts.append(postings.ids)
                    matched_of.append(n)
        if not ids_parts:
            return np.zeros(size)
        if kernels.NATIVE:  # the same sums and products in one C pass (kenning.kernels.sum_scores)
            coordination = self._coordination(clauses, found, params, matched_of) if matched_parts else None
            parts = (ids_parts, weight_parts, term_weights)
            return kernels.sum_scores(size, *parts, matched_parts, coordination)
        weight_parts = [c * w if w != 1.0 else c for c, w in zip(weight_parts, term_weights, strict=True)]
        scores = np.bincount(np.concatenate(ids_parts), weights=np.concatenate(weight_parts), minlength=size)
        scores = scores.astype(np.float64, copy=False)  # bincount of nothing comes back as int64
        if use_coord and matched_parts and params.coordination == "idf":
            weights = self.clause_weights(clauses, found)
            each = [np.full(len(ids), weights[n]) for ids, n in zip(matched_parts, matched_of, strict=True)]
            held = np.bincount(np.concatenate(matched_parts), weights=np.concatenate(each), minlength=size)
            scores *= params.coord_floor + (1.0 - params.coord_floor) * (held / sum(weights))
        elif use_coord and matched_parts:
            matched = np.bincount(np.concatenate(matched_parts), minlength=size)
            scores *= params.coord_floor + (1.0 - params.coord_floor) * (matched / len(clauses))
        return scores

    def _coordination(self, clauses, found, params: Bm25Params, matched_of: list[int]):
        """(each matched id array's weight, the floor, the divisor): what `score` multiplies a chunk's
        score by, floor + (1 - floor) x (its matched arrays' weights summed / divisor)."""
        if params.coordination == "idf":
            weights = self.clause_weights(clauses, found)
            return [weights[n] for n in matched_of], params.coord_floor, sum(weights)
        return [1.0] * len(matched_of), params.coord_floor, len(clauses)

    def clause_weights(self, clauses: list[ScoringClause], found) -> list[float]:
        """Each clause's weight in idf coordination: the idf of its rarest term; a clause no chunk
        holds weighs as a word one chunk would hold (the rarest a word can be)."""
        rarest = idf(self.n_docs, 1)
        out = []
        for clause in clauses:
            held = [found[t.term].df for t in clause.terms if found.get(t.term) is not None]
            out.append(idf(self.n_docs, min(held)) if held else rarest)
        return out

    def term_frequencies(self, postings: TermPostings | None, chunk_id: int) -> tuple[float, float]:
        """(title tf, body tf) of one chunk in a term's postings."""
        if postings is None:
            return 0.0, 0.0
        pos = int(np.searchsorted(postings.ids, chunk_id))
        if pos < len(postings.ids) and postings.ids[pos] == chunk_id:
            return float(postings.tf_title[pos]), float(postings.tf_body[pos])
        return 0.0, 0.0

    def _joint_parts(self, tf_t, t_len, tf_b, b_len, params: Bm25Params, field) -> tuple[float, float]:
        """BM25F's one saturated value for a chunk, split between title and body in proportion to
        the weighted, normalised frequency each field brought (idf not applied)."""
        t_title = float(field_frequency(tf_t, t_len, self.avg_title_len, params.title_weight, params.b))
        t_body = float(field_frequency(tf_b, b_len, self.avg_body_len, params.body_weight, params.b))
        t_title, t_body = (0.0 if field == "body" else t_title), (0.0 if field == "title" else t_body)
        if t_title + t_body <= 0:
            return 0.0, 0.0
        whole = float(saturate_once(t_title + t_body, params.k1))
        return whole * t_title / (t_title + t_body), whole * t_body / (t_title + t_body)

    def explain(
        self,
        chunk_id: int,
        clauses: list[ScoringClause],
        found: dict[str, TermPostings | None],
        params: Bm25Params,
    ) -> dict:
        """Every number behind one chunk's lexical score, recomputed from raw term frequencies."""
        rows = []
        total = 0.0
        matched = 0
        held_flags: list[bool] = []
        t_len = float(self.title_len[chunk_id]) if chunk_id <= self.max_id else 0.0
        b_len = float(self.body_len[chunk_id]) if chunk_id <= self.max_id else 0.0
        for clause in clauses:
            weight = params.query_weight(clause.qtf) * clause.boost
            for st in clause.terms:
                postings = found.get(st.term)
                df = postings.df if postings is not None else 0
                term_idf = idf(self.n_docs, df)
                tf_t, tf_b = self.term_frequencies(postings, chunk_id)
                counts = st.docs is None or chunk_id in st.docs
                w_idf = weight * term_idf
                if params.variant == "bm25f":  # one saturation, shared by the fields as their frequencies are
                    title_part, body_part = self._joint_parts(tf_t, t_len, tf_b, b_len, params, st.field)
                    title_part, body_part = (w_idf * title_part, w_idf * body_part) if counts else (0.0, 0.0)
                else:
                    s_t = float(saturate(np.array([tf_t]), np.array([t_len]), self.avg_title_len, params)[0])
                    s_b = float(saturate(np.array([tf_b]), np.array([b_len]), self.avg_body_len, params)[0])
                    title_part = w_idf * params.title_weight * s_t if counts and st.field != "body" else 0.0
                    body_part = w_idf * params.body_weight * s_b if counts and st.field != "title" else 0.0
                total += title_part + body_part
                rows.append(
                    {
                        "term": st.term,
                        "clause": clause.label,
                        "field": st.field,
                        "df": df,
                        "idf": term_idf,
                        "qtf": clause.qtf,
                        "query_weight": weight,
                        "title": {"tf": tf_t, "length": t_len, "contribution": title_part},
                        "body": {"tf": tf_b, "length": b_len, "contribution": body_part},
                        "contribution": title_part + body_part,
                    }
                )
            if clause.docs is not None:
                held = chunk_id in clause.docs
            else:
                held = any(
                    self.term_frequencies(found.get(st.term), chunk_id) != (0.0, 0.0) for st in clause.terms
                )
            matched += held
            held_flags.append(held)
        use_coord = params.coord_floor < 1.0 and len(clauses) > 1
        share = matched / len(clauses) if clauses else 0.0
        if params.coordination == "idf" and clauses:
            weights = self.clause_weights(clauses, found)
            share = sum(w for w, h in zip(weights, held_flags, strict=True) if h) / sum(weights)
        coord = params.coord_floor + (1.0 - params.coord_floor) * share if use_coord else 1.0
        return {
            "terms": rows,
            "matched_clauses": matched,
            "clauses": len(clauses),
            "matched_share": share,  # of the clauses, or of their idf (coordination="idf")
            "sum": total,
            "coordination": coord,
            "score": total * coord,
            "params": params.to_dict(),
            "corpus": {
                "docs": self.n_docs,
                "avg_title_len": self.avg_title_len,
                "avg_body_len": self.avg_body_len,
            },
        }


def _occurrence_keys(entry, wanted: np.ndarray, offset: int) -> np.ndarray:
    """chunk_id * 2^32 + (position - offset) for each occurrence of a term in the `wanted` chunks
    (ascending ids), reading only those chunks' slices of the term's positions."""
    ids, tf, positions = entry
    at = np.searchsorted(ids, wanted)
    inside = at < len(ids)
    at, owners = at[inside], wanted[inside]
    hit = ids[at] == owners
    at, owners = at[hit], owners[hit]
    lengths = tf[at].astype(np.int64)
    if not lengths.sum():
        return np.zeros(0, dtype=np.int64)
    starts = _starts_at(tf, at)
    first = np.repeat(starts, lengths)
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    start = positions[first + within].astype(np.int64) - offset
    # a word nearer the text's start than its offset starts no phrase there (and its key would name
    # the chunk before it)
    keep = start >= 0
    return (np.repeat(owners, lengths)[keep] << 32) + start[keep]


def _starts_at(tf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Where the positions of postings `at` (ascending, distinct) begin: the term frequencies before
    each, summed. By the runs between them (np.add.reduceat), not a prefix sum of every posting: that
    would fill three arrays of the term's postings' size, new memory pages a new process pays for on
    a common word's first phrase check."""
    if at[0] == 0:  # the first run starts at the first posting: nothing before it
        runs = np.add.reduceat(tf, at, dtype=np.int64)
        return np.concatenate(([0], np.cumsum(runs[:-1])))
    runs = np.add.reduceat(tf, np.concatenate(([0], at)), dtype=np.int64)
    return np.cumsum(runs[:-1])


class LexicalIndex:
    """Keeps one LexicalView per committed generation; what views read goes through the index's
    one bounded cache (kenning.common.cache)."""

    def __init__(self, store, caches: IndexCaches, analyzer=None):
        self.store = store
        self.caches = caches
        self.analyzer = analyzer  # a callable giving the index's current analyzer (phrases on text)
        self._view: LexicalView | None = None

    def view(self) -> LexicalView:
        """The view of the current generation. Call inside store.reading()."""
        generation = self.store.generation()
        if self._view is None or self._view.generation != generation:
            snapshot = self.store.read_snapshot()
            live_segments = set(snapshot.segment_ids)
            self.caches.enter(generation)
            self.caches.bounded.drop(lambda k: k[0] != "seg" or k[1] in live_segments)
            analyzer = self.analyzer() if self.analyzer is not None else None
            self._view = LexicalView(self.store, snapshot, self.caches.bounded, analyzer)
        return self._view
