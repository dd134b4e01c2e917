"""SQLite's dialect: plain DB-API, but a chunk's body is kept compressed when that is shorter
(kenning.store.compact)."""

from __future__ import annotations

import sqlite3

from kenning.store.compact import pack_text, unpack_text
from kenning.store.sql.dialect import Dialect


class SqliteDialect(Dialect):
    returning = sqlite3.sqlite_version_info >= (3, 35, 0)  # RETURNING came in SQLite 3.35

    def body_in(self, text: str):
        return pack_text(text)

    def body_out(self, stored) -> str:
        return unpack_text(stored)


SQLITE = SqliteDialect()
