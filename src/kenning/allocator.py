"""Give freed memory back to the OS during indexing: glibc's malloc otherwise keeps it.

Indexing passes tens of megabytes at a time between processes (pickled batches, encoded segments,
merge ranges). glibc raises its mmap threshold each time such a buffer is freed, so later ones come
from the heap, and heap pages freed between live blocks are kept. On the first 300k chunks of the
scale benchmark's 1M corpus with two analysis workers, all processes peaked at 1,095 MB:

- the workers (kenning's own processes, which only index) start with the threshold held
  (`MALLOC_MMAP_THRESHOLD_`, unless the user set it): at 1 MiB, 983 MB in all. Since a worker spills
  its segment to a file instead of sending its rows (kenning.indexing.spill), 32 MiB (glibc's
  largest dynamic threshold) costs little more memory and much less time: every array between 1
  and 32 MiB had been mapped, zero-filled page by page and unmapped again. The 1M build, in turn:
  106.3 s and 721 MB in all at 1 MiB; 94.0 s and 761, then 764 MB at 32 MiB (two runs);
- the writer, which may be a program that imports kenning and has its own allocator needs, is left
  its threshold (held there, it made warm queries 1.98 -> 3.45 ms at 100k chunks: corpus-sized score
  arrays were mapped and unmapped at every query) and instead trims the heap after each segment it
  writes and each merge range (`malloc_trim`): 845-892 MB in all, writer 532 -> 444-452 MB, no
  slower (two runs).
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
