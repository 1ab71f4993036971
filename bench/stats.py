"""Small statistics for the benchmark tables: percentiles, medians, ratios."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(samples: Sequence[float], pct: float) -> float:
    """The `pct` percentile (0..100) by the nearest-rank method; NaN for no samples."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def median(samples: Sequence[float]) -> float:
    """The median (mean of the two middle values for an even count); NaN for no samples."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """ours / theirs, or None when either is missing or theirs is zero."""
    if ours is None or theirs is None or theirs == 0 or math.isnan(ours) or math.isnan(theirs):
        return None
    return ours / theirs
