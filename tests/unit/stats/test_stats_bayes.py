"""The Bayesian read-out: P(NEW at least X % worse), validated by simulation under its prior."""

from __future__ import annotations

import math

import numpy as np
import pytest

from virtbench.model import Better
from virtbench.stats.bayes import DEFAULT_PRIOR_RATIO, prior_sd, probability_worse
from virtbench.stats.verdict import log_ratio_moments


def _simulated(rng: np.random.Generator, count: int, n: int, cv: float, better: Better
               ) -> tuple[np.ndarray, np.ndarray]:
    """True log ratios drawn from the read-out's own prior, and the moments of samples of n
    values per side (normal, coefficient of variation cv) around those means."""
    true = rng.normal(0.0, prior_sd(), count)
    base = rng.normal(1.0, cv, (count, n))
    new = rng.normal(np.exp(true)[:, None], cv * np.exp(true)[:, None], (count, n))
    moments = log_ratio_moments(base.mean(axis=1), base.var(axis=1, ddof=1), np.full(count, n),
                                new.mean(axis=1), new.var(axis=1, ddof=1), np.full(count, n))
    return true, probability_worse(moments, better, 5.0)


# (n per side, CV, direction, allowed systematic error): at n = 3 the t likelihood of the delta
# method is rougher, and the read-out is up to ~5 points too low around p = 0.85 (docs).
@pytest.mark.parametrize(("n", "cv", "better", "allowed"), [(5, 0.05, Better.LOWER, 0.02),
                                                            (3, 0.10, Better.LOWER, 0.06),
                                                            (10, 0.20, Better.HIGHER, 0.02)])
def test_the_probability_is_calibrated_under_its_prior(n: int, cv: float, better: Better,
                                                       allowed: float) -> None:
    """Among comparisons given probability about p, about a share p are at least 5 % worse:
    checked per tenth of [0, 1] over 30,000 simulated comparisons per case, within ``allowed``
    plus 3 binomial standard errors."""
    rng = np.random.default_rng(11)
    true, said = _simulated(rng, 30_000, n, cv, better)
    threshold = math.log1p(0.05) if better is Better.LOWER else -math.log1p(-0.05)
    worse = (true if better is Better.LOWER else -true) > threshold
    assert not np.isnan(said).any()
    bins = np.minimum((said * 10).astype(int), 9)
    checked = 0
    for b in range(10):
        members = bins == b
        count = int(members.sum())
        if count < 200:
            continue
        checked += 1
        expected = float(said[members].mean())
        tolerance = allowed + 3 * math.sqrt(expected * (1 - expected) / count)
        assert abs(worse[members].mean() - expected) < tolerance, (b, count)
    assert checked >= 4


def test_probabilities_move_with_the_evidence() -> None:
    def read(mean_new: float, var: float, n: int, pct: float = 5.0) -> float:
        m = log_ratio_moments(np.array([1.0]), np.array([var]), np.array([n]),
                              np.array([mean_new]), np.array([var * mean_new**2]), np.array([n]))
        return float(probability_worse(m, Better.LOWER, pct)[0])

    assert read(1.20, 1e-4, 10) > 0.999  # a clear 20 % slowdown
    assert read(1.00, 1e-4, 10) < 1e-6  # no change, precisely measured
    assert 0.2 < read(1.05, 0.01, 3) < 0.8  # at the threshold, noisy: undecided
    assert read(1.10, 0.01, 3) < read(1.10, 0.01, 30)  # more data, more sure
    assert read(1.10, 1e-4, 10, pct=20.0) < 0.01  # worse, but not by 20 %


def test_no_standard_error_gives_no_probability() -> None:
    m = log_ratio_moments(np.array([1.0]), np.array([0.0]), np.array([5]),
                          np.array([1.1]), np.array([0.0]), np.array([5]))
    assert math.isnan(float(probability_worse(m, Better.LOWER, 5.0)[0]))


def test_the_prior_is_stated_and_checked() -> None:
    assert prior_sd(DEFAULT_PRIOR_RATIO) == pytest.approx(math.log(2) / 1.959964, rel=1e-6)
    for bad in (1.0, 0.5, math.inf, math.nan):
        with pytest.raises(ValueError, match="prior ratio"):
            prior_sd(bad)
