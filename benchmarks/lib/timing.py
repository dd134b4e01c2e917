"""Summaries of measured latencies."""

from __future__ import annotations

import statistics


def percentile(values, q: float) -> float:
    """The q-quantile (q from 0 to 1) of the values: the nearest rank, no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def p50_p95(values) -> tuple[float, float]:
    """The median and the 95th percentile."""
    return statistics.median(values), percentile(values, 0.95)
