"""SQLite's dialect: plain DB-API, but a chunk's body is kept compressed when that is shorter
(kenning.store.compact)."""

from __future__ import annotations

from kenning.store.compact import pack_text, unpack_text
from kenning.store.sql.dialect import Dialect


class SqliteDialect(Dialect):
    def body_in(self, text: str):
        return pack_text(text)

    def body_out(self, stored) -> str:
        return unpack_text(stored)


SQLITE = SqliteDialect()
