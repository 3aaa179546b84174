"""Ordinary least squares of a metric on a numeric knob (e.g. time vs background load).

The fit is scipy.stats.linregress, imported when a line is fitted (not with this module: its
import costs about a second, which every command importing the statistics would pay)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.stats._sample import SampleLike, as_sample, check_confidence, t_quantile

__all__ = ["LinearFit", "linear_fit"]


@dataclass(frozen=True)
class LinearFit:
    """y ≈ intercept + slope·x. slope is in unit(y)/unit(x), intercept in unit(y); the slope CI
    is the two-sided t interval with n-2 df (nan when n < 3); r_squared is unitless."""

    slope: float
    intercept: float
    slope_ci_low: float
    slope_ci_high: float
    r_squared: float
    n: int


def linear_fit(x: SampleLike, y: SampleLike, confidence: float = 0.95) -> LinearFit:
    """OLS fit on all samples (not on per-level means), by scipy.stats.linregress."""
    check_confidence(confidence)
    xa, ya = as_sample(x, "x"), as_sample(y, "y")
    if xa.size != ya.size:
        raise ValueError(f"x and y: lengths differ ({xa.size} vs {ya.size})")
    n = int(xa.size)
    if n < 2:
        raise ValueError(f"x, y: need at least 2 points for a line, got {n}")
    if np.ptp(xa) == 0.0:
        raise ValueError("x: all values are identical; the slope is undefined")
    from scipy import stats

    res = stats.linregress(xa, ya)
    slope = float(res.slope)
    if n < 3:
        lo = hi = math.nan
    else:
        half = t_quantile(confidence, n - 2) * float(res.stderr)
        lo, hi = slope - half, slope + half
    return LinearFit(
        slope=slope,
        intercept=float(res.intercept),
        slope_ci_low=lo,
        slope_ci_high=hi,
        r_squared=float(res.rvalue) ** 2,
        n=n,
    )
