"""The caches of one open index, in one place, with a size bound.

What a search reads again and again is kept between queries: segments' lengths, terms' postings and
positions, merged live postings, BM25 impacts per parameter set, resolved filters. They share one
budget in bytes (`KENNING_CACHE_MB`, default 256), so a long-running process (a server, an agent's
MCP session) does not grow with the queries it has seen: what does not fit is dropped, oldest first,
and recomputed when asked for again. Oldest means first
stored, not least recently read: a read is then one dictionary lookup, which matters at thousands of
queries a second, and a hot entry that falls out comes straight back in. Per-generation views
(vectors, the substring text, the speller) are sized by the corpus, not by the queries, and are
replaced when a commit makes a new generation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

import numpy as np

DEFAULT_BUDGET_MB = 256
_MISSING = object()
T = TypeVar("T")  # what a key's `make` returns, and so what the key holds


def nbytes(value) -> int:
    """A rough size of a cached value: its arrays' bytes plus a little for the objects around them."""
    if isinstance(value, np.ndarray):
        return value.nbytes + 96
    if isinstance(value, tuple | list):
        return sum(nbytes(v) for v in value) + 56
    if hasattr(value, "__dict__"):
        return sum(nbytes(v) for v in vars(value).values()) + 56
    if hasattr(value, "__len__") and hasattr(value, "get_statistics"):  # a roaring bitmap
        return value.get_statistics()["n_bytes_array_containers"] + 64
    return 64


class BoundedCache:
    """A map whose values together stay under `max_bytes`, dropping the first stored first."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._values: dict[Hashable, object] = {}
        self._sizes: dict[Hashable, int] = {}  # insertion order is the eviction order

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: Hashable, default=None):
        return self._values.get(key, default)

    def put(self, key: Hashable, value, size: int | None = None) -> None:
        size = nbytes(value) if size is None else size
        if key in self._sizes:
            self.bytes -= self._sizes.pop(key)
            del self._values[key]
        if size > self.max_bytes:
            return  # bigger than the whole budget: compute it each time instead
        self._values[key] = value
        self._sizes[key] = size
        self.bytes += size
        while self.bytes > self.max_bytes:
            oldest = next(iter(self._sizes))
            self.bytes -= self._sizes.pop(oldest)
            del self._values[oldest]

    def get_or_make(self, key: Hashable, make: Callable[[], T]) -> T:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = make()
            self.put(key, value)
        return cast(T, value)

    def drop(self, keep: Callable[[Hashable], bool]) -> None:
        """Forget every entry whose key `keep` refuses (e.g. data of segments merged away)."""
        for key in [k for k in self._sizes if not keep(k)]:
            self.bytes -= self._sizes.pop(key)
            del self._values[key]

    def clear(self) -> None:
        self._values.clear()
        self._sizes.clear()
        self.bytes = 0


class IndexCaches:
    """All an open index keeps between searches: one bounded cache, and the views of the current
    generation (rebuilt after each commit).

    Keys of the bounded cache say what they depend on: ("seg", segment id, ...) for data of one
    immutable segment, ("gen", generation, ...) for data of one committed generation.
    """

    def __init__(self, budget_bytes: int | None = None):
        if budget_bytes is None:
            budget_bytes = int(float(os.environ.get("KENNING_CACHE_MB", DEFAULT_BUDGET_MB)) * 1024 * 1024)
        self.bounded = BoundedCache(budget_bytes)
        self.generation: int | None = None
        self._views: dict[Hashable, object] = {}

    def enter(self, generation: int) -> None:
        """Switch to a generation: its views start empty, and entries keyed ("gen", older, ...) go."""
        if generation != self.generation:
            self._views.clear()
            self.bounded.drop(lambda k: k[0] != "gen" or k[1] == generation)
            self.generation = generation

    def clear(self) -> None:
        """Forget everything kept (the next search reads and computes it all again)."""
        self.bounded.clear()
        self._views.clear()
        self.generation = None

    def view(self, generation: int, key: Hashable, make: Callable[[], T]) -> T:
        """A view of one generation (vectors, substring text, speller), made once per generation."""
        self.enter(generation)
        if key not in self._views:
            self._views[key] = make()
        return cast(T, self._views[key])
