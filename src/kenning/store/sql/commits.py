"""The Commits protocol's SQL common to every SQL store: the vector graph's metadata, the segment
list, counts, clearing and closing. Transactions, reads and metadata rows are each engine's
(kenning.store.sqlite.connection, kenning.store.postgres.connection)."""

from __future__ import annotations

from pyroaring import BitMap

from kenning.store.base import CommitsCommon
from kenning.store.records import VECTOR_GRAPH_LACKS_META, VECTOR_GRAPH_META
from kenning.store.sql.statements import SqlStatements


class SqlCommits(CommitsCommon, SqlStatements):
    """What CommitsCommon leaves to a store, where SQL says it the same way everywhere."""

    # what `clear` empties (vectors and the glossary stay)
    CONTENT_TABLES: tuple[str, ...] = (
        "postings",
        "segments",
        "chunks",
        "text_blocks",
        "sources",
        "vocabulary",
        "entities",
    )

    def forget_vector_graph(self) -> None:
        """The saved vector graph no longer matches what this transaction commits."""
        self._run("DELETE FROM meta WHERE key IN (?, ?)", (VECTOR_GRAPH_META, VECTOR_GRAPH_LACKS_META))

    def _segment_ids(self) -> tuple[int, ...]:
        return tuple(r[0] for r in self._run("SELECT id FROM segments ORDER BY id"))

    def counts(self) -> dict:
        with self.reading():
            return {
                "sources": self._value("SELECT count(*) FROM sources"),
                "chunks": self._value("SELECT count(*) FROM chunks"),
                "documents": self._value(
                    "SELECT count(DISTINCT CASE WHEN c.doc_key = '' THEN s.path ELSE c.doc_key END)"
                    " FROM chunks c JOIN sources s ON s.id = c.source_id"
                ),
                "segments": self._value("SELECT count(*) FROM segments"),
            }

    def clear(self) -> None:
        self._require_txn()
        for table in self.CONTENT_TABLES:
            if table == "text_blocks" and not self.text_blocks:  # type: ignore[attr-defined]
                continue  # an index kept at a schema from before blocks has no such table
            self._run(f"DELETE FROM {table}")  # noqa: S608 - fixed names
        self._clear_substrings()
        self.set_live(BitMap())

    def close(self) -> None:
        self.conn.close()
