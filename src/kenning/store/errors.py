"""What the store raises: StorageError (the index cannot be used, and the message says what to do),
and IndexDamaged for a row or side file kenning never writes, with `decoding`, which turns what
decoding a stored value raises into IndexDamaged naming it. Imported by every store module; imports
none of them."""

from __future__ import annotations

import functools
import sqlite3
import struct
import sys


class StorageError(Exception):
    """The index cannot be used; the message says why and what to do."""


class IndexDamaged(StorageError, ValueError):
    """A row or side file of the index holds what kenning never writes. An index folder may come
    from anyone (docs/security.md), so a damaged or crafted value is named in one line that says
    what to run, never trusted, and never a traceback. Also a ValueError, for the callers that
    caught the decoders' ValueError before."""

    def __init__(self, what: str):
        super().__init__(
            f"the index is damaged ({what}): `kenning verify` says what is wrong and `kenning repair` "
            "rebuilds it"
        )


# what decoding a damaged or crafted row raises: a wrong type (an integer where bytes belong), a
# length or offset that does not fit, text that is not UTF-8, JSON that is not JSON, JSON nested
# deeper than Python's stack (a crafted metadata row of a hundred thousand brackets), an allocation a
# claimed size makes impossible
DECODING_ERRORS = (
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    OverflowError,
    RecursionError,
    struct.error,
    MemoryError,
)


class decoding:  # noqa: N801 - read as a verb: `with decoding("chunk 3's metadata"):`
    """Turn what decoding `what` (stored rows) raises into IndexDamaged naming it: a context manager,
    or a decorator of a store method. A class, not a generator: a search passes through it a few
    dozen times, and a generator's context manager costs several microseconds each time."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, traceback) -> bool:
        if exc is not None and not isinstance(exc, IndexDamaged) and isinstance(exc, DECODING_ERRORS):
            raise IndexDamaged(f"{self.what}: {type(exc).__name__}: {exc}") from exc
        return False

    def __call__(self, function):
        what = self.what

        @functools.wraps(function)
        def decoded(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except IndexDamaged:
                raise
            except DECODING_ERRORS as exc:
                raise IndexDamaged(f"{what}: {type(exc).__name__}: {exc}") from exc

        return decoded


def engine_errors() -> tuple[type[BaseException], ...]:
    """The database drivers' own error types (sqlite3's, and psycopg's once it is loaded), for a
    surface to say the index's database failed without importing a driver itself. Called where an
    exception is being matched, so it costs nothing until then."""
    errors: list[type[BaseException]] = [sqlite3.DatabaseError]
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        errors.append(psycopg.Error)
    return tuple(errors)
