"""Welch's unequal-variance t-test: the statistic and two-sided p of
scipy.stats.ttest_ind(equal_var=False), the p from scipy.special.stdtr (the t distribution
ttest_ind uses), so that `history`'s change points import scipy.special, not scipy.stats."""

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
