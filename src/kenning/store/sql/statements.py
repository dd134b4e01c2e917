"""How the shared modules run a statement: written once with `?` marks, handed to the store's
connection through its dialect (kenning.store.sql.dialect)."""

from __future__ import annotations

from collections.abc import Sequence

from kenning.store.sql.dialect import Dialect


class SqlStatements:
    """The calls every shared module makes; the store supplies `conn` and `dialect`."""

    conn: object
    dialect: Dialect

    def _run(self, statement: str, params: Sequence = ()):
        return self.conn.execute(self.dialect.sql(statement), params)

    def _value(self, statement: str, params: Sequence = ()):
        """The first column of the first row (None without one)."""
        row = self._run(statement, params).fetchone()
        return None if row is None else row[0]

    def _run_many(self, statement: str, rows) -> None:
        self.dialect.executemany(self.conn, self.dialect.sql(statement), rows)

    def _insert_id(self, statement: str, params: Sequence) -> int:
        return self.dialect.insert_id(self.conn, self.dialect.sql(statement), params)

    def _rows_in(self, statement: str, column: str, values: Sequence, params: Sequence = ()) -> list:
        """The rows of `statement` where `column` is one of `values`: its `{}` stands for that
        condition, whose parameters come before `params`. No values: no rows, and no statement run."""
        rows = []
        if not len(values):
            return rows
        for condition, members in self.dialect.member_of(column, values):
            rows += self._run(statement.format(condition), [*members, *params]).fetchall()
        return rows

    def _run_in(self, statement: str, column: str, values: Sequence, params: Sequence = ()) -> None:
        """`_rows_in` for a statement that returns no rows (a DELETE, an UPDATE)."""
        if not len(values):
            return
        for condition, members in self.dialect.member_of(column, values):
            self._run(statement.format(condition), [*members, *params])
