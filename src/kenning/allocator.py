"""Give big freed buffers back to the OS: glibc's malloc otherwise keeps them.

Indexing passes tens of megabytes at a time between processes (pickled batches, encoded segments,
merge ranges). glibc raises its mmap threshold each time such a buffer is freed, so later ones come
from the heap, and a heap fragmented by them is not returned: on 300k synthetic chunks with two
analysis workers, all processes peaked at 1,095 MB with the default and 848 MB with the threshold
held at 1 MiB (4% slower; benchmarks/scale.py --worker index). Holding the threshold is a process-wide
choice, so kenning makes it only for processes it owns: the `kenning` command and its analysis
workers; a program that imports kenning keeps its allocator as it is.
"""

from __future__ import annotations

import ctypes

MMAP_THRESHOLD = 1 << 20  # buffers from 1 MiB up are mapped apart and unmapped when freed
MMAP_THRESHOLD_ENV = "MALLOC_MMAP_THRESHOLD_"  # glibc reads it at a new process's start
_M_MMAP_THRESHOLD = -3  # mallopt parameter number, from glibc's malloc.h


def worker_environment(env: dict) -> dict:
    """`env` for a worker process, with the threshold held unless the user set it."""
    env.setdefault(MMAP_THRESHOLD_ENV, str(MMAP_THRESHOLD))
    return env


def hold_mmap_threshold() -> bool:
    """Hold this process's mmap threshold at MMAP_THRESHOLD (glibc only; True when it was set)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this interpreter runs on
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to hold
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
