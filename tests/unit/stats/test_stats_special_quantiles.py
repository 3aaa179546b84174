"""The normal and t distribution values the statistics use (stats/distributions.py: importing
scipy costs up to a second of a report's start-up) are scipy.stats' own: norm.ppf, norm.cdf and
t.ppf where the statistics call them, over a grid with the edges (df = 1, df near 0 and infinite
or invalid, tail probabilities down to 1e-300, p = 0.5). A report's figures did not move."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.stats import compare, intervals
from virtbench.stats._sample import t_quantile
from virtbench.stats.distributions import norm_cdf, norm_ppf

CONFIDENCES = [1e-12, 0.01, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-9, 1 - 1e-15]
DFS = [1e-300, 1e-3, 0.5, 1.0, 1.5, 2.0, 3.0, 4.7, 10.0, 29.0, 100.0, 1e4, 1e8, 1e15, 1e300,
       math.inf, 0.0, -1.0, math.nan]
PROBABILITIES = [0.0, 1e-300, 1e-100, 1e-20, 1e-12, 1e-6, 1e-3, 0.025, 0.1, 0.3, 0.5, 0.7,
                 0.975, 0.999, 1 - 1e-12, 1 - 2**-53, 1.0]
XS = [-math.inf, -40.0, -38.5, -10.0, -5.0, -1.96, -1.0, -1e-300, 0.0, 1e-300, 0.5, 1.96, 8.0,
      9.0, 40.0, math.inf, math.nan]


def _same(got: float, expected: float) -> None:
    """Equal to the relative 1e-9 of stats/distributions.py's contract (a quantile at 0 by
    1e-15: scipy's own ε there, conf 1e-12 gives t ≈ 1e-12)."""
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_the_shared_t_quantile_is_t_ppf(confidence: float) -> None:
    # (the ratio intervals', the verdict's, the mean intervals' and explain's t quantile)
    q = 0.5 + confidence / 2.0
    for df in DFS:
        expected = float(sps.norm.ppf(q) if math.isinf(df) else sps.t.ppf(q, df))
        if df < 0.1 and expected > 300.0:
            # df near 0: the true quantile is beyond any double (P(|T| > t) ~ t^-df); scipy's
            # search stops at its iteration cap (6703.9 at df 1e-300, whatever the level)
            assert t_quantile(confidence, df) >= expected
            continue
        _same(t_quantile(confidence, df), expected)


@pytest.mark.parametrize("confidence", CONFIDENCES)
def test_the_mean_intervals_t_is_t_ppf(confidence: float) -> None:
    q = 0.5 + confidence / 2.0
    for n in (1, 2, 3, 4, 5, 10, 31, 1000, 10**6):  # n = 1: df 0, nan as t.ppf says
        expected = float(sps.t.ppf(q, n - 1))
        if expected == 0.0 and q > 0.5:  # scipy 1.17 at df 4, q = ½ + 5e-13: 0, not a quantile
            assert abs(float(sps.t.cdf(intervals._t(confidence, n), n - 1)) - q) <= 1e-15
            continue
        _same(intervals._t(confidence, n), expected)


def test_the_normal_quantile_and_cdf_are_norm_ppf_and_cdf() -> None:
    for p in PROBABILITIES:
        _same(norm_ppf(p), float(sps.norm.ppf(p)))
    for x in XS:
        _same(norm_cdf(x), float(sps.norm.cdf(x)))


@pytest.mark.parametrize("seed", range(4))
def test_the_bca_levels_are_those_of_scipy_stats(seed: int, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    """_bca_probs as it is, and with its normal functions replaced by scipy.stats.norm's: the
    same levels."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(100):
        x = rng.lognormal(0.0, 0.1 + rng.random(), int(rng.integers(3, 60)))
        y = rng.lognormal(0.0, 0.1 + rng.random(), int(rng.integers(3, 60)))
        r = float(np.mean(x) / np.mean(y))
        boot = r * rng.lognormal(rng.normal(0, 0.05), 0.1, int(rng.integers(1, 2000)))
        cases += [(x, y, r, boot, alpha) for alpha in (1e-12, 0.001, 0.05, 0.5, 0.99)]
    got = [compare._bca_probs(*case) for case in cases]
    monkeypatch.setattr(compare, "norm_ppf", lambda p: float(sps.norm.ppf(p)))
    monkeypatch.setattr(compare, "norm_cdf", lambda x: float(sps.norm.cdf(x)))
    expected = [compare._bca_probs(*case) for case in cases]
    assert sum(e is not None for e in expected) > len(cases) / 2
    for g, e in zip(got, expected, strict=True):
        assert (g is None) == (e is None)
        for g_level, e_level in zip(g or [], e or [], strict=True):
            _same(g_level, e_level)
