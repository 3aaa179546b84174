"""The one t quantile the statistics share (stats._sample.t_quantile: scipy.special's stdtrit,
ndtri for infinite df) and the mean intervals' use of it are scipy.stats.t.ppf at the two-sided
level ½ + confidence/2, over a grid with the edges (df near 0, infinite or invalid; n = 1)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from virtbench.stats import intervals
from virtbench.stats._sample import t_quantile

CONFIDENCES = [1e-12, 0.01, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-9, 1 - 1e-15]
DFS = [1e-300, 1e-3, 0.5, 1.0, 1.5, 2.0, 3.0, 4.7, 10.0, 29.0, 100.0, 1e4, 1e8, 1e15, 1e300,
       math.inf, 0.0, -1.0, math.nan]


def _same(got: float, expected: float) -> None:
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=0.0)


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_the_shared_t_quantile_is_t_ppf(confidence: float) -> None:
    # (the ratio intervals', the verdict's, the mean intervals', the fit's and explain's)
    q = 0.5 + confidence / 2.0
    for df in DFS:
        expected = sps.norm.ppf(q) if math.isinf(df) else sps.t.ppf(q, df)
        _same(t_quantile(confidence, df), float(expected))


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_the_mean_intervals_t_is_t_ppf(confidence: float) -> None:
    for n in (1, 2, 3, 4, 5, 10, 31, 1000, 10**6):  # n = 1: df 0, nan as t.ppf says
        _same(intervals._t(confidence, n), float(sps.t.ppf(0.5 + confidence / 2.0, n - 1)))
