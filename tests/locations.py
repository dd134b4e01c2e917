"""Where the tests find the checkout, its benchmark scripts, and the dev sets beside it
(../shared/data), wherever in tests/ a test file stands."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
SHARED_DATA = REPO.parent / "shared" / "data"
BOOKS = SHARED_DATA / "books"
