"""Where a server index lives: a `postgresql://` URL, the PostgreSQL schema that holds its tables,
and the same URL with any password removed (what every message and report shows).

    postgresql://kenning@db.example:5432/search            tables in the schema "kenning"
    postgresql://kenning@db.example/search?schema=team_a   tables in the schema "team_a"

One database can hold many indexes, one per schema. Passwords come from libpq's own places
(PGPASSWORD, ~/.pgpass, a service file), never from an index or from kenning.toml; a password
written into the URL still works for a one-off command but is never printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kenning.store.errors import StorageError

DEFAULT_SCHEMA = "kenning"
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class ServerLocation:
    """A parsed server location: what libpq connects to, and which schema holds the index."""

    conninfo: str  # the URL libpq receives (the schema parameter removed)
    schema: str
    shown: str  # the URL with no password, for messages and reports

    @property
    def has_password(self) -> bool:
        return urlsplit(self.conninfo).password is not None


def parse_location(url: str) -> ServerLocation:
    """Split `url` into libpq's part and kenning's `schema` parameter; a bad schema name is an error
    that names it (it becomes an SQL identifier, so only plain lower-case names are taken)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    kept = []
    for key, value in query:
        if key == "schema":
            schema = value
        else:
            kept.append((key, value))
    if not _SCHEMA_NAME.fullmatch(schema):
        raise StorageError(
            f"schema={schema!r} in the store URL is not a plain lower-case name "
            "(letters, digits and _, starting with a letter or _)"
        )
    conninfo = urlunsplit(parts._replace(query=urlencode(kept)))
    return ServerLocation(conninfo, schema, redact(url))


def redact(url: str) -> str:
    """`url` with its password replaced by ***, so it can be printed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
