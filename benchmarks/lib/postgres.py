"""A PostgreSQL server to measure on: the one a URL names, or a private one started for the run by
tests/pg_server.py (PostgreSQL 18 with pgvector, from the test extra), stopped afterwards."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from lib.datasets import ROOT


@contextmanager
def postgres_server(url: str | None) -> Iterator[str]:
    """The base URL of the given server, or of a private one for the length of the block."""
    if url:
        yield url
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from pg_server import start_server

    server = start_server()
    try:
        yield server.base_url
    finally:
        server.stop()


def new_schema(base_url: str, prefix: str) -> str:
    """The URL of a schema of its own on the server (a fresh name each call)."""
    return f"{base_url}{'&' if '?' in base_url else '?'}schema={prefix}_{uuid.uuid4().hex[:8]}"
