"""PostgreSQL's dialect, as psycopg speaks it.

- Parameters are `%s` (a literal `%` doubled); a list of values is one array parameter,
  `column = ANY(%s)`, in one round trip.
- A new row's id comes back with `RETURNING id`; ids restored from another store move the sequence
  past them.
- Titles and bodies are kept as UTF-8 bytes (bytea), not `text`: PostgreSQL's text refuses a NUL
  character and an unpaired surrogate, which a file can hold and the embedded store keeps; bytea
  keeps every character, and PostgreSQL compresses large values itself (TOAST).
- Vectors go in as float32 arrays (pgvector's adapter); a whole table is read in keyset pages, so no
  cursor is held open across a long scan.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

from kenning.store.sql.dialect import Dialect

PAGE = 2000  # rows per page when streaming a whole table

# after a row is restored under its own id: the sequence that numbers the table moves past it
_NEXT_IDS = {"chunks": "SELECT nextval('chunk_ids') FROM generate_series(1, %s)"}
_IDS_FOLLOW = {
    "sources": "SELECT setval(pg_get_serial_sequence('sources', 'id'),"
    " greatest(%s, (SELECT max(id) FROM sources)))",
    "chunks": "SELECT setval('chunk_ids', greatest(%s, nextval('chunk_ids')))",
}


def to_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def to_text(data) -> str:
    return bytes(data).decode("utf-8", "surrogatepass")


@lru_cache(maxsize=512)
def _percent_marks(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


class PostgresDialect(Dialect):
    bytewise = ' COLLATE "C"'

    def sql(self, statement: str) -> str:
        return _percent_marks(statement)

    def member_of(self, column: str, values: Sequence) -> Iterator[tuple[str, list]]:
        yield f"{column} = ANY(?)", [list(values)]

    returning = True

    def new_ids(self, conn, table: str, n: int) -> list[int]:
        """`n` ids from the table's sequence (chunks: `chunk_ids`), in one round trip."""
        rows = conn.execute(_NEXT_IDS[table], (n,)).fetchall()
        return [int(r[0]) for r in rows]

    def ids_follow(self, conn, table: str, row_id: int) -> None:
        conn.execute(_IDS_FOLLOW[table], (row_id,))

    def executemany(self, conn, statement: str, rows) -> None:
        with conn.cursor() as cur:
            cur.executemany(statement, rows)

    def text_in(self, text: str) -> bytes:
        return to_bytes(text)

    converts_text = True

    def text_out(self, stored) -> str:
        return to_text(stored)

    body_in, body_out = text_in, text_out

    def vector_in(self, vector):
        return vector

    def rows_by_id(self, conn, columns: str, table: str = "chunks") -> Iterator[tuple]:
        after = -1
        while True:
            rows = conn.execute(
                f"SELECT {columns} FROM {table} WHERE id > %s ORDER BY id LIMIT %s",  # noqa: S608 - fixed names
                (after, PAGE),
            ).fetchall()
            yield from rows
            if len(rows) < PAGE:
                return
            after = rows[-1][0]


POSTGRES = PostgresDialect()
