"""The Postings protocol's SQL common to every SQL store: the segment list, a segment's own row,
checksums and the spelling vocabulary. How posting rows are written and read is each engine's
(kenning.store.sqlite.postings keeps short rows in packs; kenning.store.postgres.postings uses COPY)."""

from __future__ import annotations

from collections.abc import Iterator

from kenning.store.compact import decode_posting_row, decode_segment, encode_posting_row
from kenning.store.errors import IndexDamaged, decoding
from kenning.store.records import SegmentData, SegmentPostings
from kenning.store.sql.statements import SqlStatements


class SqlPostings(SqlStatements):
    """The shared part of the Postings protocol over `segments` and `vocabulary`."""

    # the inverse of posting_encoder, module-level so a merge can decode its term ranges in worker
    # processes (kenning.indexing.segments.merge_segments)
    posting_decoder = staticmethod(decode_posting_row)
    # the function that encodes a posting row as the store keeps it: module-level, so an analysis
    # worker can be handed it and encode a whole segment while the writer goes on
    # (kenning.indexing.analysis); the writer then only inserts the rows
    posting_encoder = staticmethod(encode_posting_row)

    def segment_sizes(self) -> list[tuple[int, int]]:
        return [tuple(r) for r in self._run("SELECT id, n_docs FROM segments ORDER BY id")]

    @decoding("a segment row")
    def load_segment(self, segment_id: int) -> SegmentData:
        row = self._run(
            "SELECT n_docs, doc_ids, title_lens, body_lens FROM segments WHERE id = ?", (segment_id,)
        ).fetchone()
        return decode_segment(segment_id, row)

    def iter_segment_postings(self, segment_id: int) -> Iterator[SegmentPostings]:
        for raw in self.raw_postings(segment_id):
            yield decode_posting_row(raw)

    def segment_checksums(self) -> dict[int, str]:
        return dict(self._run("SELECT id, checksum FROM segments").fetchall())

    def apply_vocabulary(self, delta: dict[str, int]) -> None:
        self._require_txn()
        self._run_many(
            "INSERT INTO vocabulary(word, df) VALUES (?, ?)"
            " ON CONFLICT (word) DO UPDATE SET df = vocabulary.df + excluded.df",
            sorted((w, n) for w, n in delta.items() if n),  # in key order: B-tree pages visited once each
        )
        # only a word whose count went down can reach zero: look at those, never scan the table (a
        # write applies its additions at every segment flush)
        fallen = [w for w, n in delta.items() if n < 0]
        self._run_in("DELETE FROM vocabulary WHERE {} AND df <= 0", "word", fallen)

    def vocabulary(self) -> dict[str, int]:
        words = dict(self._run("SELECT word, df FROM vocabulary").fetchall())
        if not all(isinstance(w, str) and type(df) is int for w, df in words.items()):
            raise IndexDamaged("the vocabulary holds a word or a count of a type kenning never writes")
        return words
