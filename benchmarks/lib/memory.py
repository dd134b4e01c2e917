"""Memory of the measured process: its resident set now, its peak, and the peak of it and its children
together (kenning's analysis workers are child processes; tantivy indexes in threads). Linux /proc."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path


def rss_mb() -> float:
    """This process's resident set now, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """The largest resident set this process has had, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_peak_rss_mb() -> float:
    """The largest resident set any finished child of this process had, in MB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def tree_rss_mb(pid: int | None = None) -> float:
    """The resident set of a process and all its descendants now, in MB."""
    pid = pid or os.getpid()
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, StopIteration):
        return 0.0
    return rss + sum(tree_rss_mb(int(child)) for child in children)


class TreePeak:
    """Samples the resident set of this process and its children every 50 ms until stop(), which
    returns the largest sum seen: children that come and go never show in one getrusage figure."""

    def __init__(self):
        self.peak, self.running = 0.0, True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, tree_rss_mb())
            time.sleep(0.05)

    def stop(self) -> float:
        self.running = False
        self.thread.join()
        return self.peak
