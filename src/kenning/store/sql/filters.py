"""Scope filters in any SQL store: each source's facets, and the chunks of the sources that pass
the collection, kind and path scopes whose time and front matter match, as one SQL condition over
`chunks`. How a front-matter condition is written is each engine's (`_front_matter_condition`).

A date range alone (`--since`, `--before`, with or without scopes) reads the chunks' time index
on the first date-filtered search of a generation (a command that searches once pays only that);
from the second on, the chunks' times are held in memory, sorted, for that generation, and a range
is two binary searches and the ids between them. On a million chat messages the statement without
an index read every chunk's row, a hundred times longer than the search itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

from kenning.store.records import FrontMatterPairs, SourceFacets
from kenning.store.sql.documents import plain_ids
from kenning.store.sql.statements import SqlStatements


@dataclass(frozen=True)
class ChunkTimes:
    """Every dated chunk of one generation, sorted by time: its time, id and source."""

    generation: int
    times: np.ndarray  # float64, ascending
    ids: np.ndarray  # int64, in the order of `times`
    sources: np.ndarray  # int64, in the order of `times`
    n_sources: int  # how many sources the store had (a scope naming all of them is no scope)

    def between(self, since: float | None, before: float | None, source_ids: Sequence[int] | None) -> BitMap:
        """The ids of chunks with since <= time < before, of the given sources (None: of all)."""
        lo = 0 if since is None else int(np.searchsorted(self.times, since, side="left"))
        hi = len(self.times) if before is None else int(np.searchsorted(self.times, before, side="left"))
        ids = self.ids[lo:hi]
        if source_ids is not None and len(set(source_ids)) < self.n_sources:
            ids = ids[np.isin(self.sources[lo:hi], np.asarray(source_ids, dtype=np.int64))]
        return BitMap(np.sort(ids).astype(np.uint32))


class SqlFilters(SqlStatements):
    """The MetadataFilters protocol; an engine supplies `_front_matter_condition`."""

    _chunk_times: ChunkTimes | None = None
    _dated_searches: tuple[int, int] = (-1, 0)  # (generation, date-filtered searches in it)
    _facets: tuple[int, list[SourceFacets]] | None = None  # (generation, facets)

    def source_facets(self) -> list[SourceFacets]:
        """Every source's id, path, collection and kind (read once per generation: a scope filter
        reads them on every search, and a chat export can be ten thousand files)."""
        generation = self.generation()
        cached = self._facets
        if cached is None or cached[0] != generation:
            rows = self._run("SELECT id, path, collection, kind FROM sources").fetchall()
            cached = self._facets = (generation, [SourceFacets(*r) for r in rows])
        return list(cached[1])

    def chunks_matching(
        self,
        source_ids: Sequence[int] | None,
        since: float | None,
        before: float | None,
        meta: FrontMatterPairs,
    ) -> BitMap:
        if source_ids is not None and not len(source_ids):
            return BitMap()
        if not meta and (since is not None or before is not None):
            generation = self.generation()
            seen, count = self._dated_searches
            self._dated_searches = (generation, count + 1 if seen == generation else 1)
            cached = self._chunk_times
            warm = (cached is not None and cached.generation == generation) or self._dated_searches[1] > 1
            if warm and not getattr(self, "_in_txn", False):  # a write may still be rolled back
                return self.chunk_times(generation).between(since, before, source_ids)
        query, params = self.matching_query(since, before, meta)
        if source_ids is None:
            return BitMap(r[0] for r in self._run(query.format("1 = 1"), params).fetchall())
        return BitMap(r[0] for r in self._rows_in(query, "c.source_id", plain_ids(source_ids), params))

    def chunk_times(self, generation: int | None = None) -> ChunkTimes:
        """The dated chunks of the current generation (the caller may have read it), sorted by time
        (read once per generation)."""
        generation = self.generation() if generation is None else generation
        cached = self._chunk_times
        if cached is not None and cached.generation == generation:
            return cached
        rows = self._run("SELECT time, id, source_id FROM chunks WHERE time IS NOT NULL").fetchall()
        # a time that is not a number (a damaged or crafted row) matches no date range here
        rows = [r for r in rows if isinstance(r[0], int | float) and not isinstance(r[0], bool)]
        table = np.array(rows, dtype=np.float64).reshape(-1, 3)
        order = np.argsort(table[:, 0], kind="stable")
        n_sources = self._run("SELECT count(*) FROM sources").fetchone()[0]
        cached = ChunkTimes(
            generation,
            table[order, 0],
            table[order, 1].astype(np.int64),
            table[order, 2].astype(np.int64),
            int(n_sources),
        )
        self._chunk_times = cached
        return cached

    def matching_query(
        self, since: float | None, before: float | None, meta: FrontMatterPairs
    ) -> tuple[str, list]:
        """The SQL of a scope filter, `{}` standing for the source condition, and the parameters
        after that condition's: conditions the table's indexes answer (tests/store/test_postgres_store.py
        reads a plan)."""
        where, params = ["{}"], []
        if since is not None:
            where.append("c.time >= ?")
            params.append(since)
        if before is not None:
            where.append("c.time < ?")
            params.append(before)
        if meta:
            condition, values = self._front_matter_condition(meta)
            where.append(condition)
            params.extend(values)
        return f"SELECT c.id FROM chunks c WHERE {' AND '.join(where)}", params

    def _front_matter_condition(self, meta: FrontMatterPairs) -> tuple[str, list]:
        """A condition on chunk `c` that its front matter has each (key, value) (a list value
        matches any of its items; case does not matter), and its parameters."""
        raise NotImplementedError

    def _filter_columns(self, meta: str) -> dict:
        """Columns an engine keeps beside each chunk for its filter index, from the chunk's metadata
        (JSON text), as column -> value; none by default."""
        return {}
