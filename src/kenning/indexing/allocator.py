"""Give freed memory back to the OS during indexing: glibc's malloc otherwise keeps it.

Indexing passes tens of megabytes at a time between processes (pickled batches, encoded segments,
merge ranges). glibc raises its mmap threshold each time such a buffer is freed, so later ones come
from the heap, and heap pages freed between live blocks are kept: a large build's processes grow
well past what they hold. So:

- the analysis workers (kenning's own processes, which only index) start with the threshold held at
  32 MiB (`MALLOC_MMAP_THRESHOLD_`, unless the user set it): big buffers are mapped apart and given
  back when freed, while the many smaller arrays a segment needs stay on the heap, which is faster;
- the writer may be a program that imports kenning with allocation needs of its own, so its
  threshold is left alone (holding it made every query map and unmap its corpus-sized score
  arrays); instead it trims the heap (`malloc_trim`) after each segment it writes and each merge
  range.
"""

from __future__ import annotations

import ctypes

MMAP_THRESHOLD = 32 << 20  # in workers, buffers from 32 MiB up are mapped apart and unmapped when freed
MMAP_THRESHOLD_ENV = "MALLOC_MMAP_THRESHOLD_"  # glibc reads it at a new process's start


def worker_environment(env: dict) -> dict:
    """`env` for an analysis worker, with the threshold held unless the user set it."""
    env.setdefault(MMAP_THRESHOLD_ENV, str(MMAP_THRESHOLD))
    return env


def release_freed_memory() -> bool:
    """Hand the heap's free pages back to the OS (glibc's malloc_trim; True when it released any,
    False where there is no glibc)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library this interpreter runs on
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    return bool(trim(0))
