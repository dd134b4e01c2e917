"""What every store does the same way on top of its own few primitives: metadata, the live bitmap,
the commit generation and the snapshot a reader sees.

A store supplies `_meta_raw(key)`, `_meta_keys()`, `_set_meta(key, value)`, `forget_vector_graph()`,
`_segment_ids()` and `reading()`; the rest of the Commits protocol's bookkeeping is here.
"""

from __future__ import annotations

import json
import os

from pyroaring import BitMap

from kenning.store.errors import StorageError, decoding
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META, Snapshot

DEFAULT_LOCK_TIMEOUT = 60.0


class CommitsCommon:
    """Metadata, live set, generation and snapshots, over a store's primitives (see the module)."""

    _in_txn = False

    @property
    def in_transaction(self) -> bool:
        """Inside a write transaction (reads join it; writes belong to it)."""
        return self._in_txn

    def _require_txn(self) -> None:
        if not self._in_txn:
            raise RuntimeError("write outside a transaction")

    # kept by each store for itself, never copied to another (kenning.integrity.migrate)
    OWN_META = frozenset(
        {"schema_version", "generation", "last_commit", VECTOR_GRAPH_META, VECTOR_GRAPH_LACKS_META}
    )

    def meta_items(self) -> dict:
        """Every metadata key and value except the store's own bookkeeping (OWN_META)."""
        return {key: self._meta_raw(key) for key in self._meta_keys() if key not in self.OWN_META}

    def get_meta(self, key: str, default=None):
        value = self._meta_raw(key)
        return default if value is None else value

    def set_meta(self, key: str, value) -> None:
        self._require_txn()
        self._set_meta(key, value)

    def set_live(self, live: BitMap) -> None:
        """The chunks searches see from this commit on; a saved vector graph no longer matches."""
        self._require_txn()
        live.run_optimize()
        self._set_meta("live", live.serialize())
        self.forget_vector_graph()

    @decoding("the commit record")
    def generation(self) -> int:
        return int(self._meta_raw("generation") or 0)

    @decoding("the commit record")
    def read_snapshot(self) -> Snapshot:
        with self.reading():
            live_blob = self._meta_raw("live")
            last = self._meta_raw("last_commit")
            return Snapshot(
                generation=self.generation(),
                live=BitMap.deserialize(live_blob) if live_blob else BitMap(),
                segment_ids=self._segment_ids(),
                analyzer=json.loads(self._meta_raw("analyzer") or "{}"),
                last_commit=float(last) if last else None,
            )


def lock_timeout() -> float:
    """How long a writer waits for another one: KENNING_LOCK_TIMEOUT seconds, else 60."""
    raw = os.environ.get("KENNING_LOCK_TIMEOUT", "").strip()
    try:
        value = float(raw) if raw else DEFAULT_LOCK_TIMEOUT
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:
        raise StorageError(f"KENNING_LOCK_TIMEOUT must be a number of seconds in [0, 86400], not {raw!r}")
    return value
