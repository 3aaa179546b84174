"""The verdicts' error rates, checked by seeded simulation (figures: docs/statistics.md).

Vectorised: each scenario draws all its simulated comparisons as one matrix and runs the same
array code `compare` runs for one pair (virtbench.stats.verdict).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from virtbench.model import Better
from virtbench.stats.verdict import (
    ALPHA,
    LogRatioMoments,
    equivalence_p,
    log_ratio_moments,
    ratio_verdict,
    worse_p,
)

SIMULATIONS = 4000  # per scenario


def _moments(base: np.ndarray, new: np.ndarray) -> LogRatioMoments:
    n_b, n_n = np.full(base.shape[0], base.shape[1]), np.full(new.shape[0], new.shape[1])
    return log_ratio_moments(base.mean(1), base.var(1, ddof=1), n_b, new.mean(1),
                             new.var(1, ddof=1), n_n)


def _draw(rng: np.random.Generator, dist: str, cv: float, n: int, scale: float = 1.0
          ) -> np.ndarray:
    if dist == "normal":
        return rng.normal(scale, cv * scale, (SIMULATIONS, n))
    sigma = math.sqrt(math.log1p(cv * cv))  # log-normal with this CV and mean `scale`
    return scale * rng.lognormal(-sigma * sigma / 2, sigma, (SIMULATIONS, n))


def _upper(rate: float, trials: int) -> float:
    """Nominal rate plus three Monte-Carlo standard errors."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


@pytest.mark.parametrize("dist", ["normal", "lognormal"])
def test_gate_at_zero_fires_at_most_nominally_on_equal_distributions(dist: str) -> None:
    rng = np.random.default_rng(20261123)
    fired = total = 0
    for n in (5, 10, 20, 30):
        for cv in (0.01, 0.05, 0.2):
            for better in (Better.LOWER, Better.HIGHER):
                m = _moments(_draw(rng, dist, cv, n), _draw(rng, dist, cv, n))
                fired += int(np.count_nonzero(worse_p(m, better, 0.0) < ALPHA))
                total += SIMULATIONS
    rate = fired / total
    assert rate <= _upper(ALPHA, total), f"{dist}: fired in {rate:.4f} of {total}"
    assert rate >= ALPHA / 2  # a test that never fires would pass the bound above vacuously


@pytest.mark.parametrize(("planted", "better"), [(1.10, Better.LOWER), (1 / 1.10, Better.HIGHER)])
def test_gate_finds_a_planted_10_percent_regression(planted: float, better: Better) -> None:
    rng = np.random.default_rng(1)
    m = _moments(_draw(rng, "normal", 0.02, 10), _draw(rng, "normal", 0.02, 10, planted))
    power = float(np.mean(worse_p(m, better, 5.0) < ALPHA))
    assert power >= 0.90, power


def test_gate_ignores_a_planted_3_percent_regression_at_5() -> None:
    rng = np.random.default_rng(2)
    m = _moments(_draw(rng, "normal", 0.02, 10), _draw(rng, "normal", 0.02, 10, 1.03))
    rate = float(np.mean(worse_p(m, Better.LOWER, 5.0) < ALPHA))
    assert rate <= 0.05, rate


def test_tost_says_equivalent_when_there_is_no_difference() -> None:
    rng = np.random.default_rng(3)
    m = _moments(_draw(rng, "normal", 0.01, 20), _draw(rng, "normal", 0.01, 20))
    rate = float(np.mean(equivalence_p(m, 2.0) < ALPHA))
    assert rate >= 0.90, rate


def test_scalar_verdict_matches_the_vectorised_core() -> None:
    rng = np.random.default_rng(4)
    base, new = rng.normal(1.0, 0.02, 10), rng.normal(1.1, 0.02, 10)
    scalar = ratio_verdict(base, new, Better.LOWER, fail_pct=5.0)
    vector = worse_p(_moments(base[None, :], new[None, :]), Better.LOWER, 5.0)
    assert scalar.p_worse == pytest.approx(float(vector[0]))
    assert scalar.verdict == "worse"
    assert scalar.ci_low < scalar.ratio < scalar.ci_high
