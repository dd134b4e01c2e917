"""Immutable postings segments and the spelling vocabulary in PostgreSQL.

The rows are the embedded store's rows (kenning.store.compact packs each column), so the same
encoder, decoder, checksums and scoring code serve both stores; a segment's rows go in with one
binary COPY. Terms sort as bytes (COLLATE "C"), the order merges and term ranges rely on.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from kenning.store.checksum import segment_checksum
from kenning.store.compact import ID_HEAD_BYTES, id_count, unpack_frequencies, unpack_ids, unpack_positions
from kenning.store.field_lengths import pack_lengths
from kenning.store.records import ROW_MEMORY_BYTES, RawPostings, range_bounds
from kenning.store.sql import SqlPostings

_ROW = "term, ids, tf_title, tf_body, pos_title, pos_body"


class PostgresPostings(SqlPostings):
    """The Postings protocol over the `segments`, `postings` and `vocabulary` tables."""

    def load_postings(self, segment_id: int, terms: Sequence[str]) -> dict[str, RawPostings]:
        return self.load_postings_of({segment_id: terms})[segment_id]

    def load_postings_of(self, wanted: dict[int, Sequence[str]]) -> dict[int, dict[str, RawPostings]]:
        """Several segments' postings in one statement (one round trip); rows of a term a segment
        was not asked for are dropped."""
        out: dict[int, dict[str, RawPostings]] = {int(seg): {} for seg in wanted}
        asked = {int(seg): set(terms) for seg, terms in wanted.items()}
        terms = sorted(set().union(*asked.values())) if asked else []
        for seg, term, ids, tft, tfb in self.conn.execute(
            "SELECT segment_id, term, ids, tf_title, tf_body FROM postings"
            " WHERE segment_id = ANY(%s) AND term = ANY(%s)",
            (list(out), terms),
        ):
            if term in asked[seg]:
                ids = unpack_ids(ids, (tft, tfb))
                n = len(ids)
                out[seg][term] = RawPostings(ids, unpack_frequencies(tft, n), unpack_frequencies(tfb, n))
        return out

    def posting_counts(self, segment_ids: Sequence[int], terms: Sequence[str]) -> dict[str, int]:
        """Each of `terms` with its number of postings summed over the segments (deleted chunks'
        included), from the length and first bytes of its rows' ids (kenning.store.compact.id_count):
        one round trip, no postings sent."""
        out = dict.fromkeys(terms, 0)
        for term, length, head in self.conn.execute(
            f"SELECT term, octet_length(ids), substring(ids from 1 for {ID_HEAD_BYTES}) FROM postings"
            " WHERE segment_id = ANY(%s) AND term = ANY(%s)",
            ([int(s) for s in segment_ids], sorted(set(terms))),
        ):
            out[term] += id_count(bytes(head), int(length))
        return out

    posting_bundler = None  # a server takes rows as they come

    def raw_postings(self, segment_id: int, low: str | None = None, high: str | None = None) -> list[tuple]:
        where, args = "segment_id = %s", [segment_id]
        if low is not None:
            where, args = where + " AND term >= %s", [*args, low]
        if high is not None:
            where, args = where + " AND term < %s", [*args, high]
        rows = self.conn.execute(f"SELECT {_ROW} FROM postings WHERE {where} ORDER BY term", args)
        return [(r[0], *(bytes(b) for b in r[1:])) for r in rows]

    def raw_posting_part(
        self, segment_id: int, low: str | None = None, high: str | None = None
    ) -> list[tuple]:
        """What a merge hands a worker: the rows themselves (nothing is kept packed here)."""
        return self.raw_postings(segment_id, low, high)

    def term_bounds(self, segment_ids: Sequence[int], budget: int) -> list[str]:
        sizes = self.conn.execute(
            "SELECT term, sum(octet_length(ids) + octet_length(tf_title) + octet_length(tf_body)"
            f" + octet_length(pos_title) + octet_length(pos_body) + {ROW_MEMORY_BYTES})"
            " FROM postings WHERE segment_id = ANY(%s)"
            " GROUP BY term ORDER BY term",
            ([int(s) for s in segment_ids],),
        )
        return range_bounds(sizes, budget)

    def load_positions(self, segment_id: int, term: str, field: str) -> np.ndarray | None:
        tf, pos = {"title": ("tf_title", "pos_title"), "body": ("tf_body", "pos_body")}[field]
        row = self.conn.execute(
            f"SELECT octet_length(ids), substring(ids from 1 for {ID_HEAD_BYTES}), {tf}, {pos} FROM postings"
            " WHERE segment_id = %s AND term = %s",
            (segment_id, term),
        ).fetchone()
        if row is None:
            return None
        count = int(unpack_frequencies(row[2], id_count(bytes(row[1]), int(row[0]))).sum(dtype=np.int64))
        return unpack_positions(bytes(row[3]), count)

    def write_encoded_segment(
        self, doc_ids: np.ndarray, title_lens: np.ndarray, body_lens: np.ndarray, encoded: Iterable[tuple]
    ) -> int:
        """One immutable segment (see kenning.store.protocols.Postings); its rows by binary COPY."""
        self._require_txn()
        doc_ids = np.asarray(doc_ids, dtype=np.uint32)
        title_lens = np.minimum(title_lens, 65535).astype(np.uint16)
        body_lens = np.minimum(body_lens, 65535).astype(np.uint16)
        seg_id = int(
            self._one(
                "INSERT INTO segments(created, n_docs, doc_ids, title_lens, body_lens)"
                " VALUES (%s, %s, %s, %s, %s) RETURNING id",
                (
                    time.time(),
                    len(doc_ids),
                    doc_ids.tobytes(),
                    pack_lengths(title_lens),
                    pack_lengths(body_lens),
                ),
            )
        )
        digests: list[tuple[str, bytes]] = []
        for batch in _bounded_batches(encoded):
            # the rows may be read from this same connection (a merge reads the segments it merges),
            # which cannot answer a query in the middle of a COPY: each batch is taken before its COPY
            with self.conn.cursor() as cur:
                with cur.copy(f"COPY postings (segment_id, {_ROW}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(["bigint", "text", "bytea", "bytea", "bytea", "bytea", "bytea"])
                    for row, digest in batch:
                        digests.append((row[0], digest))
                        copy.write_row((seg_id, *row))
        checksum = segment_checksum(doc_ids, title_lens, body_lens, digests)
        self.conn.execute("UPDATE segments SET checksum = %s WHERE id = %s", (checksum, seg_id))
        return seg_id

    def drop_segments(self, segment_ids: Sequence[int]) -> None:
        self._require_txn()
        ids = [int(s) for s in segment_ids]
        self.conn.execute("DELETE FROM postings WHERE segment_id = ANY(%s)", (ids,))
        self.conn.execute("DELETE FROM segments WHERE id = ANY(%s)", (ids,))

    def drop_postings_range(self, segment_ids: Sequence[int], low: str | None, high: str | None) -> None:
        self._require_txn()
        where, args = "segment_id = ANY(%s)", [[int(s) for s in segment_ids]]
        if low is not None:
            where, args = where + " AND term >= %s", [*args, low]
        if high is not None:
            where, args = where + " AND term < %s", [*args, high]
        self.conn.execute(f"DELETE FROM postings WHERE {where}", args)

    def count_terms(self) -> int:
        return int(self._one("SELECT count(DISTINCT term) FROM postings"))


COPY_BATCH_BYTES = 16 << 20


def _bounded_batches(encoded: Iterable[tuple]) -> Iterator[list[tuple]]:
    """(row, digest) pairs in lists of about COPY_BATCH_BYTES stored bytes: a merge stays streaming."""
    batch, held = [], 0
    for item in encoded:
        batch.append(item)
        held += sum(len(c) for c in item[0][1:])
        if held >= COPY_BATCH_BYTES:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch
