"""kenning's own matrix products run on one BLAS thread, and nothing else in the process is changed.

Those products are small: one query vector times the chunk vectors (a matrix-vector product of a few
megabytes). Multi-threaded BLAS only adds overhead there, and on a machine with few cores its threads
compete with onnxruntime's, which spin for a while after each embedding call (the query's own, just
before), which can make such a product many times slower. Setting OPENBLAS_NUM_THREADS=1 at import
would fix that for kenning and change it for the whole program that imports kenning, its own numpy
work included; so instead each product runs inside `one_blas_thread()`, which lowers the BLAS
libraries' thread count for that block and puts it back after (threadpoolctl).

The count is a setting of the process, not of one thread (OpenBLAS's usual build), so while a block
runs, BLAS calls of the program's other threads also run on one thread; a block lasts a fraction of
a millisecond. Blocks are run one at a time, each lowering and restoring the count in its own thread:
threadpoolctl lets only one thread at a time change a process-wide count, and blocks that overlapped
would restore each other's setting instead of the program's. A program that holds the limits itself
(a `threadpool_limits` block of its own in another thread) keeps them: kenning's block then changes
nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

KMP_DUPLICATE_LIB_OK = "KMP_DUPLICATE_LIB_OK"
_lock = threading.RLock()  # one block at a time; a block inside a block of the same thread is fine
_controller = None  # threadpoolctl's view of the loaded BLAS libraries, made once: finding them costs


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every BLAS library on one thread, restoring their thread counts after."""
    with _lock, _blas_libraries().limit(limits=1):
        yield


def _blas_libraries():
    """The BLAS libraries this process had loaded when kenning first looked (numpy's among them, the
    one kenning's products use), found once: looking walks every loaded shared library (a quarter of
    a millisecond), too slow per query. One loaded later (scipy's, say) is not numpy's: left alone."""
    global _controller
    with _lock:
        if _controller is None:
            import numpy  # noqa: F401  (its BLAS must be loaded before we look)

            _controller = _threadpoolctl().ThreadpoolController().select(user_api="blas")
        return _controller


def _threadpoolctl():
    """The threadpoolctl module, imported without its side effect: its import sets
    KMP_DUPLICATE_LIB_OK=True in the environment (a blanket leave for two OpenMP runtimes in one
    process, meant for the programs that use it for OpenMP). kenning only counts BLAS threads, and
    threadpoolctl inspects libraries already loaded (it never loads another), so when kenning is the
    one importing it the variable is taken away again; a program that imported it first keeps it."""
    if "threadpoolctl" in sys.modules:
        return sys.modules["threadpoolctl"]
    had = KMP_DUPLICATE_LIB_OK in os.environ
    import threadpoolctl

    if not had:
        os.environ.pop(KMP_DUPLICATE_LIB_OK, None)
    return threadpoolctl
