"""Change points in a series of run means: ruptures proposes, Welch's t-test disposes.

Candidates come from ruptures' PELT search with a linear kernel (the l2 cost: changes in the
mean) on the series scaled by a robust noise estimate, with a BIC-like penalty; each candidate is
then kept only if the segments on either side differ by Welch's t-test at ``alpha`` (the least
significant is dropped and the rest re-tested until all pass), as Hunter/Apache Otava's merge
step does. Validated by simulation in tests/unit/decide; figures in docs/statistics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.stats._sample import SampleLike, as_sample
from virtbench.stats.welch import welch_t_p

__all__ = ["ALPHA", "MIN_SEGMENT", "PENALTY_PER_LOG_N", "ChangePoint", "change_points"]

ALPHA = 0.001
"""Significance a change point must reach (Welch t, two-sided) between its two segments."""
MIN_SEGMENT = 3
"""Fewest runs on either side of a change point."""
PENALTY_PER_LOG_N = 2.0
"""PELT penalty per change point, × log(n), on the noise-scaled series."""


@dataclass(frozen=True)
class ChangePoint:
    """The series' mean changes between ``index - 1`` and ``index`` (0-based)."""

    index: int
    p_value: float
    before: tuple[int, int]
    """[start, end) of the segment before"""
    after: tuple[int, int]


def _noise_scale(x: np.ndarray) -> float:
    """Robust sd of the noise: MAD of first differences / √2 (a step moves one difference only)."""
    d = np.diff(x)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826 / math.sqrt(2.0)
    if mad > 0:
        return mad
    sd = float(np.std(x))
    return sd if sd > 0 else 1.0


def _segment_p(x: np.ndarray, start: int, cut: int, end: int) -> float:
    left, right = x[start:cut], x[cut:end]
    if np.ptp(left) == 0 and np.ptp(right) == 0:
        return 0.0 if left[0] != right[0] else 1.0
    return welch_t_p(left, right)[1]


def change_points(values: SampleLike, alpha: float = ALPHA,
                  min_segment: int = MIN_SEGMENT) -> list[ChangePoint]:
    """Significant changes of the mean in ``values`` (in order), each with its p-value and the
    segments on either side. Series shorter than 2·min_segment have none."""
    import ruptures

    x = as_sample(values)
    n = int(x.size)
    if n < 2 * min_segment or np.ptp(x) == 0:
        return []
    scaled = ((x - float(np.mean(x))) / _noise_scale(x)).reshape(-1, 1)
    search = ruptures.KernelCPD(kernel="linear", min_size=min_segment).fit(scaled)
    cuts = [int(c) for c in search.predict(pen=PENALTY_PER_LOG_N * math.log(n))[:-1]]
    while cuts:
        bounds = [0, *cuts, n]
        ps = [_segment_p(x, bounds[i - 1], bounds[i], bounds[i + 1])
              for i in range(1, len(bounds) - 1)]
        worst = int(np.argmax(ps))
        if ps[worst] < alpha:
            return [ChangePoint(cut, p, (bounds[i], cut), (cut, bounds[i + 2]))
                    for i, (cut, p) in enumerate(zip(cuts, ps, strict=True))]
        cuts.pop(worst)
    return []
