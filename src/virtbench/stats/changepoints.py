"""Change points in a series of run means: ruptures proposes, Welch's t-test disposes.

Candidates come from a PELT search (Killick, Fearnhead & Eckley 2012) for the exact minimum of
the l2 cost (sums of squared deviations from each segment's mean: changes in the mean) plus a
BIC-like penalty per change, on the series scaled by a robust noise estimate; each candidate is
then kept only if the segments on either side differ by Welch's t-test at ``alpha`` (the least
significant is dropped and the rest re-tested until all pass), as Hunter/Apache Otava's merge
step does. The search is ours, not ruptures' (importing ruptures imports SciPy's statistics:
over a second of every `virtbench history`); the tests check it finds what ruptures' KernelCPD
finds. Validated by simulation in tests/unit/decide; figures in docs/statistics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.stats._sample import SampleLike, as_sample
from virtbench.stats.welch import welch_t_p

__all__ = ["ALPHA", "MIN_SEGMENT", "PENALTY_PER_LOG_N", "ChangePoint", "change_points",
           "pelt_l2"]

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


def pelt_l2(x: np.ndarray, penalty: float, min_size: int) -> list[int]:
    """The cuts (each the first index of a new segment) that minimise the segments' summed
    squared deviations from their means plus ``penalty`` per cut, every segment at least
    ``min_size`` long: PELT's exact search, pruning a start that can no longer begin the last
    segment of an optimum (valid for this cost, which splitting never increases)."""
    n = int(x.size)
    sums = np.concatenate(([0.0], np.cumsum(x)))
    squares = np.concatenate(([0.0], np.cumsum(x * x)))

    def cost(starts: np.ndarray, end: int) -> np.ndarray:
        total = sums[end] - sums[starts]
        deviations: np.ndarray = (squares[end] - squares[starts]) - total * total / (end - starts)
        return deviations

    best = np.full(n + 1, np.inf)
    best[0] = -penalty  # the first segment has no cut before it
    previous = np.zeros(n + 1, dtype=np.int64)
    starts = np.empty(0, dtype=np.int64)
    for end in range(min_size, n + 1):
        newest = end - min_size  # the latest start whose segment reaches min_size at ``end``
        if newest == 0 or newest >= min_size:
            starts = np.append(starts, newest)
        if starts.size == 0:
            continue
        totals = best[starts] + cost(starts, end) + penalty
        pick = int(np.argmin(totals))
        best[end], previous[end] = totals[pick], starts[pick]
        starts = starts[totals - penalty <= best[end]]
    cuts: list[int] = []
    end = n
    while end > 0:
        end = int(previous[end])
        if end > 0:
            cuts.append(end)
    return cuts[::-1]


def _segment_p(x: np.ndarray, start: int, cut: int, end: int) -> float:
    left, right = x[start:cut], x[cut:end]
    if np.ptp(left) == 0 and np.ptp(right) == 0:
        return 0.0 if left[0] != right[0] else 1.0
    return welch_t_p(left, right)[1]


def change_points(values: SampleLike, alpha: float = ALPHA,
                  min_segment: int = MIN_SEGMENT) -> list[ChangePoint]:
    """Significant changes of the mean in ``values`` (in order), each with its p-value and the
    segments on either side. Series shorter than 2·min_segment have none."""
    x = as_sample(values)
    n = int(x.size)
    if n < 2 * min_segment or np.ptp(x) == 0:
        return []
    scaled = (x - float(np.mean(x))) / _noise_scale(x)
    cuts = pelt_l2(scaled, PENALTY_PER_LOG_N * math.log(n), min_segment)
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
