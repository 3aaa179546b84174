"""The verdicts' error rates by seeded simulation (virtbench.decide.validation; the figures are
recorded in docs/statistics.md by benchmarks/decide_validation.py)."""

from __future__ import annotations

import numpy as np
import pytest

from virtbench.decide.validation import gate_rate, null_gate_rate, tost_rate
from virtbench.model import Better
from virtbench.stats.verdict import ALPHA, log_ratio_moments, ratio_verdict, worse_p


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_gate_at_zero_fires_at_most_nominally_on_equal_distributions(dist: str) -> None:
    result = null_gate_rate(dist, seed=20261123)
    assert result.trials >= 1000
    assert result.rate <= ALPHA + 3 * result.mc_error, result
    assert result.rate >= ALPHA / 2, result  # a gate that never fires would pass vacuously


def test_heavy_skew_stays_within_its_documented_limit() -> None:
    """Log-normal values with CV 100 %: the gate at 0 fires more often than α on equal
    distributions (docs/statistics.md gives the limit: 6.9 % at n = 10); it must not get worse."""
    rate = null_gate_rate("lognormal", seed=20261136, sizes=(10,), cvs=(1.0,)).rate
    assert rate <= 0.085, rate


@pytest.mark.parametrize("better", [Better.LOWER, Better.HIGHER])
def test_gate_finds_a_planted_10_percent_regression(better: Better) -> None:
    assert gate_rate(10, 5, n=10, cv=0.02, seed=1, better=better).rate >= 0.90


def test_gate_at_5_ignores_a_planted_3_percent_regression() -> None:
    assert gate_rate(3, 5, n=10, cv=0.02, seed=2).rate <= 0.05


def test_tost_says_equivalent_when_there_is_no_difference() -> None:
    assert tost_rate(2.0, n=20, cv=0.01, seed=3).rate >= 0.90


def test_scalar_verdict_matches_the_vectorised_core() -> None:
    rng = np.random.default_rng(4)
    base, new = rng.normal(1.0, 0.02, 10), rng.normal(1.1, 0.02, 10)
    scalar = ratio_verdict(base, new, Better.LOWER, fail_pct=5.0)
    one = np.ones(1)
    m = log_ratio_moments(base.mean() * one, base.var(ddof=1) * one, 10 * one,
                          new.mean() * one, new.var(ddof=1) * one, 10 * one)
    assert scalar.p_worse == pytest.approx(float(worse_p(m, Better.LOWER, 5.0)[0]))
    assert scalar.verdict == "worse"
    assert 0 < scalar.ci_low < scalar.ratio < scalar.ci_high


def test_degenerate_samples_get_a_verdict_without_an_interval() -> None:
    assert ratio_verdict([1.0], [1.0, 1.1], Better.LOWER).verdict == "insufficient"
    assert ratio_verdict([0.0, 0.0], [1.0, 1.1], Better.LOWER).verdict == "no-ratio"
    same = ratio_verdict([2.0, 2.0, 2.0], [2.0, 2.0, 2.0], Better.LOWER)
    assert same.verdict == "equivalent" and same.ratio == 1.0
