"""What one SQL engine does differently from another, as one small object the shared SQL asks.

The shared modules of kenning.store.sql write each statement once, with `?` for its parameters,
and ask the store's dialect for the rest: the driver's parameter marks, how a list of values is
matched, the id of a row just inserted, how text is stored, how a whole table is read. This is the
role of Django's `DatabaseOperations` or SQLAlchemy's dialects, kept to what kenning's statements
need. The upsert needs no entry: both engines take the same `INSERT ... ON CONFLICT ... DO UPDATE`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

BATCH = 500  # values per `IN (...)` list: well under SQLite's limit on bound parameters


def batches(items: Sequence, size: int = BATCH) -> Iterator[Sequence]:
    """Consecutive slices of `items`, each short enough for one `IN (...)` list."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(n: int) -> str:
    """`?,?,?` for n bound parameters."""
    return ",".join("?" * n)


class Dialect:
    """The defaults are plain DB-API with `?` marks (sqlite3's); an engine's dialect overrides what
    its driver or its SQL does otherwise."""

    # appended to an ORDER BY on text so that it sorts by bytes, as the embedded store does
    bytewise = ""

    def sql(self, statement: str) -> str:
        """`statement` (parameters marked `?`) as the driver takes it."""
        return statement

    def member_of(self, column: str, values: Sequence) -> Iterator[tuple[str, list]]:
        """`column` is one of `values`, as (condition, its parameters) pairs; a statement runs once a
        pair and its results are the union. By default `IN (...)` lists of BATCH values."""
        for batch in batches(list(values)):
            yield f"{column} IN ({marks(len(batch))})", list(batch)

    returning = False  # the engine answers `RETURNING id` (one round trip for an upsert's id)

    def insert_id(self, conn, statement: str, params: Sequence) -> int:
        """Run an INSERT into a table keyed by `id` (an upsert too, where `returning`), and return
        the row's id."""
        if self.returning:
            return int(conn.execute(statement + " RETURNING id", params).fetchone()[0])
        return int(conn.execute(statement, params).lastrowid)

    def new_ids(self, conn, table: str, n: int) -> list[int]:
        """Ids for `n` rows about to be inserted into `table` together (one statement for all of
        them). SQLite's: after the largest its AUTOINCREMENT key ever gave (kept in sqlite_sequence,
        which inserting them moves on), so an id is never given twice."""
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        largest = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]  # noqa: S608
        last = max(int(row[0]) if row else 0, int(largest))
        return list(range(last + 1, last + 1 + n))

    def ids_follow(self, conn, table: str, row_id: int) -> None:
        """A row was written under its own `row_id` (a copy from another store): ids given later come
        after it. SQLite's keys do that by themselves."""

    def executemany(self, conn, statement: str, rows) -> None:
        conn.executemany(statement, rows)

    def text_in(self, text: str):
        """A chunk's title as its column keeps it."""
        return text

    converts_text = False  # whether text_out does anything (else a read skips calling it)

    def text_out(self, stored) -> str:
        return stored

    def body_in(self, text: str):
        """A chunk's body as its column keeps it."""
        return text

    def body_out(self, stored) -> str:
        """The body back (raises one of kenning.store.compact.DAMAGED_TEXT for bytes it cannot read)."""
        return stored

    def vector_in(self, vector):
        """A float32 vector as the `embeddings.vector` column takes it: by default its bytes."""
        return vector.tobytes()

    def rows_by_id(self, conn, columns: str, table: str = "chunks") -> Iterator[tuple]:
        """Every row's `columns` (the first is its id), ids ascending, streamed."""
        yield from conn.execute(f"SELECT {columns} FROM {table} ORDER BY id")  # noqa: S608 - fixed names
