"""kenning.kernels.arrays: the query path's sorted-unique helpers agree with np.unique, and a lexical search
never loads numpy.ma (whose import np.unique triggers, costing the first query of every process)."""

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning import Index
from kenning.kernels.arrays import sorted_unique, stable_argsort, unique_counts


@given(st.lists(st.integers(-(2**40), 2**40), max_size=200))
def test_they_agree_with_numpy(values):
    array = np.array(values, dtype=np.int64)
    assert np.array_equal(sorted_unique(array), np.unique(array))
    ids, counts = unique_counts(array)
    want_ids, want_counts = np.unique(array, return_counts=True)
    assert np.array_equal(ids, want_ids) and np.array_equal(counts, want_counts)


def test_a_lexical_search_does_not_import_numpy_ma(tmp_path):
    (tmp_path / "notes.md").write_text("# Keys\n\nRotate the signing keys every month.\n")
    with Index(tmp_path / "ix") as index:  # writing may use np.unique; a searching process does not
        index.add([tmp_path / "notes.md"])
    script = (
        "import sys; from kenning import Index\n"
        f"ix = Index({str(tmp_path / 'ix')!r})\n"
        "hits = ix.search('\"signing keys\" rotate', mode='lexical').hits\n"
        "assert hits, 'no hit'\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "False"


def test_a_lexical_search_process_loads_no_module_only_other_features_need(tmp_path):
    """Importing kenning is most of a command's start: logging, tomllib, sockets, thread pools, the
    documents API and the entity graph load with the features that use them, and the wide CJK
    pattern with the first text outside ASCII."""
    (tmp_path / "notes.md").write_text("# Keys\n\nRotate the signing keys every month.\n")
    with Index(tmp_path / "ix") as index:
        index.add([tmp_path / "notes.md"])
    deferred = [
        "logging", "tomllib", "socket", "concurrent.futures", "kenning.api.documents",
        "kenning.entities.graph",
    ]  # fmt: skip
    script = (
        "import sys; from kenning import Index; from kenning.analysis import analyzer\n"
        f"ix = Index({str(tmp_path / 'ix')!r})\n"
        "assert ix.search('signing keys rotate', mode='lexical').hits\n"
        f"print([m for m in {deferred!r} if m in sys.modules], analyzer._pattern.cache_info().currsize)\n"
        "assert ix.search('キー', mode='lexical') is not None\n"
        "print(analyzer._pattern.cache_info().currsize)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[:2] == ["[] 0", "2"]  # both wide patterns, for the first non-ASCII text


def test_opening_an_index_loads_no_module(tmp_path):
    """The default store's code loads with the package, as a compiled engine's code loads with its
    import: opening an index reads the index and nothing else, so a new process's first query is
    the index's work, not module loading (scale.py times the import apart, and both together)."""
    (tmp_path / "notes.md").write_text("# Keys\n\nRotate the signing keys every month.\n")
    with Index(tmp_path / "ix") as index:
        index.add([tmp_path / "notes.md"])
    script = (
        "import sys; from kenning import Index\n"
        "before = set(sys.modules)\n"
        f"ix = Index({str(tmp_path / 'ix')!r})\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]"


def test_bitmap_of_holds_exactly_the_ids_whatever_their_dtype():
    from pyroaring import BitMap

    from kenning.kernels.arrays import bitmap_of

    rng = np.random.default_rng(3)
    ids = np.sort(rng.choice(2**32 - 1, 5000, replace=False))
    for dtype in (np.uint32, np.int64, np.uint64):
        assert bitmap_of(ids.astype(dtype)) == BitMap(ids.tolist())
    assert bitmap_of(ids[::-1].astype(np.int64)) == BitMap(ids.tolist())  # order does not matter
    assert bitmap_of(np.zeros(0, dtype=np.int64)) == BitMap()


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.integers(0, 2**32 - 1), max_size=300)
    | st.lists(st.integers(0, 5), max_size=300)
    | st.lists(st.integers(0, 2**40), max_size=50)
)
def test_stable_argsort_is_numpys_stable_argsort(keys):
    """Ties (many, with few distinct keys) keep their order; keys past 32 bits take numpy's path."""
    for dtype in (np.int64, np.uint64) + ((np.uint32,) if max(keys, default=0) < 2**32 else ()):
        array = np.array(keys, dtype=dtype)
        assert stable_argsort(array).tolist() == np.argsort(array, kind="stable").tolist()
