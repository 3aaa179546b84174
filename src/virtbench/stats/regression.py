"""Ordinary least squares of a metric on a numeric knob (e.g. time vs background load).

The fit is scipy.stats.linregress's arithmetic (checked against it in the tests) without
importing scipy, whose import costs a report about a second of start-up."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.stats._sample import SampleLike, as_sample, check_confidence
from virtbench.stats.distributions import t_ppf

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
    """OLS fit on all samples (not on per-level means), as scipy.stats.linregress fits it."""
    check_confidence(confidence)
    xa, ya = as_sample(x, "x"), as_sample(y, "y")
    if xa.size != ya.size:
        raise ValueError(f"x and y: lengths differ ({xa.size} vs {ya.size})")
    n = int(xa.size)
    if n < 2:
        raise ValueError(f"x, y: need at least 2 points for a line, got {n}")
    if np.ptp(xa) == 0.0:
        raise ValueError("x: all values are identical; the slope is undefined")
    dx, dy = xa - xa.mean(), ya - ya.mean()
    ssx, ssy, sxy = float(np.mean(dx * dx)), float(np.mean(dy * dy)), float(np.mean(dx * dy))
    # r is 0 for constant y (no variance to explain), and kept in [-1, 1] against rounding
    r = 0.0 if ssy == 0.0 else max(-1.0, min(1.0, sxy / math.sqrt(ssx * ssy)))
    slope = sxy / ssx
    intercept = float(ya.mean()) - slope * float(xa.mean())
    if n < 3:
        lo = hi = math.nan
    else:
        stderr = math.sqrt((1.0 - r * r) * ssy / ssx / (n - 2))
        half = t_ppf(n - 2, 0.5 + confidence / 2.0) * stderr
        lo, hi = slope - half, slope + half
    return LinearFit(
        slope=slope,
        intercept=intercept,
        slope_ci_low=lo,
        slope_ci_high=hi,
        r_squared=r * r,
        n=n,
    )
