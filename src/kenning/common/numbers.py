"""One rule for every number a user can set (flag, environment, kenning.toml, Python keyword, MCP):
it is a finite number inside a range that means something, or a ValueError naming the setting.

NaN slips through `<` and `>` comparisons and inf turns BM25 and fusion scores into NaN, so ranges are
checked with both ends, and an absurd value (k1 = 1e300) is refused rather than silently ranking
nothing.
"""

from __future__ import annotations

import math


def check_number(
    name: str,
    value,
    low: float,
    high: float,
    *,
    integer: bool = False,
    low_open: bool = False,
) -> None:
    """Raise ValueError unless `low <= value <= high` (or `low < value` when low_open) and finite."""
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if integer and (not float(value).is_integer()):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    below = value <= low if low_open else value < low
    if not math.isfinite(value) or below or value > high:
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must be {kind} in {bracket}{_show(low)}, {_show(high)}], got {value!r}")


def _show(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 else f"{x:,.0f}"
