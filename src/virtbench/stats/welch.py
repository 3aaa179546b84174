"""Welch's unequal-variance t-test from scipy.special: the same statistic and two-sided p as
scipy.stats.ttest_ind(equal_var=False), without importing scipy.stats (seconds of start-up for
`virtbench history`, whose change points and intervals need only this). scipy.special itself is
imported by the first test (a quarter of a second that a report of one variant never needs)."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["welch_t_p"]


def welch_t_p(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(t, two-sided p) of mean(x) − mean(y); nan where scipy gives nan (e.g. no variance)."""
    from scipy import special

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vx = np.var(x, ddof=1) / x.size
        vy = np.var(y, ddof=1) / y.size
        se2 = vx + vy
        t = (np.mean(x) - np.mean(y)) / np.sqrt(se2)
        df = se2 ** 2 / (vx ** 2 / (x.size - 1) + vy ** 2 / (y.size - 1))
        return float(t), float(2.0 * special.stdtr(df, -np.abs(t)))
