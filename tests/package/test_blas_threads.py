"""kenning.common.blas: inside `one_blas_thread()` BLAS runs on one thread, in whichever thread the block
runs; after it the program's own count is back, however the blocks of several threads interleave."""

import threading

import pytest

from kenning.common.blas import _blas_libraries, one_blas_thread


def blas_threads() -> int:
    """The thread count of numpy's BLAS (and of any other BLAS loaded when kenning first looked: the
    libraries kenning limits; one loaded later, scipy's say, is not numpy's and keeps its count)."""
    return max(lib.get_num_threads() for lib in _blas_libraries().lib_controllers)


@pytest.fixture
def three_threads():
    """The program's own setting (not the default), one kenning must neither keep nor leave changed.
    Set the way a program does it once at its start: not inside a limiting block it still holds."""
    blas = _blas_libraries()
    original = blas.info()
    for lib in blas.lib_controllers:
        lib.set_num_threads(3)
    _release(blas)
    assert blas_threads() == 3
    yield
    for lib, info in zip(blas.lib_controllers, original, strict=True):
        lib.set_num_threads(info["num_threads"])
    _release(blas)


def _release(blas):
    """threadpoolctl (3.8) lets one thread at a time change OpenBLAS's count: the thread that set it
    last, until it lets go. A program's one-off setting lets go here, as `with` blocks do."""
    for lib in blas.lib_controllers:
        clear = getattr(type(lib), "clear_controlling_thread", None)
        if clear is not None:
            clear()


def inside_a_block() -> int:
    with one_blas_thread():
        return blas_threads()


def test_a_block_runs_on_one_thread_and_restores_the_count(three_threads):
    with one_blas_thread():
        assert blas_threads() == 1
        with one_blas_thread():
            assert blas_threads() == 1
        assert blas_threads() == 1  # the outer block still runs
    assert blas_threads() == 3


def test_the_count_comes_back_after_an_error(three_threads):
    with pytest.raises(ValueError), one_blas_thread():
        raise ValueError
    assert blas_threads() == 3


def test_blocks_in_one_thread_after_another_each_run_on_one_thread(three_threads):
    """A server searches in a pool of threads that live on: the second thread's block must limit too
    (had the first kept threadpoolctl's control after its block, every other thread's limit would do
    nothing while it lives)."""
    seen, first_done, second_done = {}, threading.Event(), threading.Event()

    def first():
        seen["first"] = inside_a_block()
        first_done.set()
        second_done.wait(30)  # still alive while the second one runs

    def second():
        first_done.wait(30)
        seen["second"] = inside_a_block()
        seen["second, between its blocks"] = blas_threads()
        seen["second, again"] = inside_a_block()
        second_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen == {"first": 1, "second": 1, "second, between its blocks": 3, "second, again": 1}
    assert inside_a_block() == 1
    assert blas_threads() == 3


def test_blocks_of_many_threads_at_once_restore_the_programs_count(three_threads):
    seen = []

    def search():
        for _ in range(200):
            seen.append(inside_a_block())

    threads = [threading.Thread(target=search) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(seen) == 800 and set(seen) == {1}
    assert blas_threads() == 3
