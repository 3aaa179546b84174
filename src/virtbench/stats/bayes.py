"""How probable is it that NEW is at least X % worse than BASE? A Bayesian read-out of a ratio.

The same quantity the gate tests, L = log(mean_new / mean_base), read as a probability instead
of a p-value. Likelihood: the observed L̂ given L is Student t with the Welch df and the delta-
method standard error (stats.verdict.log_ratio_moments), as the gate's test assumes. Prior: L is
normal with mean 0 (no change expected either way) and a standard deviation that puts 95 % of
its mass on ratios within [1/R, R] (R = ``prior_ratio``, default 2: a change beyond 2× either
way is unlikely before measuring). The posterior is computed on a grid over L (no conjugacy for
a t likelihood), and P(NEW at least X % worse) is its mass beyond the gate's threshold
(stats.verdict.worse_threshold). Vectorised over comparisons, so the validation can run many at
once. Definitions and the calibration check: docs/statistics.md.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from virtbench.model import Better
from virtbench.stats.verdict import LogRatioMoments, worse_threshold

__all__ = ["DEFAULT_PRIOR_RATIO", "prior_sd", "probability_worse"]

Array = npt.NDArray[np.float64]

DEFAULT_PRIOR_RATIO = 2.0
"""95 % of the prior's mass on ratios within [1/2, 2]."""

_GRID = 801
_SPAN = 12.0
"""The grid: the posterior's normal approximation's mean ± _SPAN of its standard deviation,
that computed with the standard error widened for the t likelihood's tails."""
_BLOCK = 256
"""Comparisons per block of the grid computation (256 × 801 doubles: 1.6 MB per array)."""


def prior_sd(prior_ratio: float = DEFAULT_PRIOR_RATIO) -> float:
    """The prior's standard deviation on the log scale: log(R) / z_0.975."""
    if not prior_ratio > 1 or not math.isfinite(prior_ratio):
        raise ValueError(f"prior ratio: must be a finite number above 1, got {prior_ratio}")
    from scipy import special

    return math.log(prior_ratio) / float(special.ndtri(0.975))


def _t_log_pdf(z: Array, df: Array) -> Array:
    """log of Student t's density at z (normal where df is infinite), up to a constant per row
    (each row is normalised on its grid)."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = -(df + 1.0) / 2.0 * np.log1p(np.square(z) / df)
    return np.where(np.isinf(df), -np.square(z) / 2.0, t)


def probability_worse(m: LogRatioMoments, better: Better, pct: float,
                      prior_ratio: float = DEFAULT_PRIOR_RATIO) -> Array:
    """Posterior P(NEW is at least ``pct`` % worse than BASE) for each comparison in ``m``
    (arrays of one shape; nan where the standard error is not positive and finite)."""
    threshold = worse_threshold(better, pct)
    sign = 1.0 if better is Better.LOWER else -1.0
    tau = prior_sd(prior_ratio)
    observed = np.atleast_1d(np.asarray(m.log_ratio, dtype=np.float64))
    se = np.atleast_1d(np.asarray(m.se, dtype=np.float64))
    df = np.atleast_1d(np.asarray(m.df, dtype=np.float64))
    usable = np.isfinite(observed) & np.isfinite(se) & (se > 0)
    se_safe = np.where(usable, se, 1.0)
    centre = np.where(usable, observed, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        widen = np.where(df > 2.5, np.sqrt(df / (df - 2.0)), 3.0)  # t's sd over its scale
    wide_se = se_safe * widen
    post_sd = 1.0 / np.sqrt(1.0 / np.square(wide_se) + 1.0 / tau**2)
    post_mean = centre * tau**2 / (tau**2 + np.square(wide_se))
    steps = np.linspace(-_SPAN, _SPAN, _GRID)
    probability = np.empty(len(centre))
    # In blocks of rows: a (rows × grid) array per step stays in the CPU's cache instead of
    # hundreds of MiB per step (a calibration of 30,000 comparisons: 24 M grid points).
    for start in range(0, len(centre), _BLOCK):
        rows = slice(start, start + _BLOCK)
        grid = post_mean[rows, None] + post_sd[rows, None] * steps[None, :]  # values of L
        log_post = (_t_log_pdf((centre[rows, None] - grid) / se_safe[rows, None],
                               df[rows, None])
                    - np.square(grid) / (2.0 * tau * tau))
        weight = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        worse = (sign * grid) > threshold
        probability[rows] = (weight * worse).sum(axis=1) / weight.sum(axis=1)
    result: Array = np.where(usable, probability, np.nan).reshape(np.shape(m.log_ratio))
    return result
