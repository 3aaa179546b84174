"""Welch's test from scipy.special (virtbench.stats.welch: history must not import scipy.stats,
seconds of start-up) gives scipy.stats.ttest_ind's statistic and p with equal_var=False."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from virtbench.stats.welch import welch_t_p


@pytest.mark.parametrize("seed", range(5))
def test_welch_p_is_scipys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(200):
        left = rng.normal(0.0, 0.5 + 3 * rng.random(), rng.integers(2, 40))
        right = rng.normal(rng.normal(), 0.5 + rng.random(), rng.integers(2, 40))
        expected = stats.ttest_ind(left, right, equal_var=False)
        t, p = welch_t_p(left, right)
        assert t == pytest.approx(expected.statistic, rel=1e-9)
        assert p == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-12)


def test_the_search_finds_the_cuts_ruptures_finds() -> None:
    """pelt_l2 is an exact search: on random series (steps, ties from rounding, segment
    minimums 1-5) it cuts where ruptures' KernelCPD with the linear kernel cuts."""
    import math

    import numpy as np
    import ruptures

    from virtbench.stats.changepoints import pelt_l2

    rng = np.random.default_rng(7)
    compared = 0
    for trial in range(300):
        n = int(rng.integers(6, 200))
        x = rng.normal(size=n)
        for _ in range(int(rng.integers(0, 4))):
            x[int(rng.integers(1, n)):] += rng.normal(0, 3)
        if trial % 5 == 0:
            x = np.round(x)
        min_size = int(rng.integers(1, 6))
        if n < 2 * min_size:
            continue
        penalty = 2.0 * math.log(n)
        reference = ruptures.KernelCPD(kernel="linear", min_size=min_size).fit(
            x.reshape(-1, 1)).predict(pen=penalty)[:-1]
        assert pelt_l2(x, penalty, min_size) == [int(c) for c in reference], (trial, n)
        compared += 1
    assert compared > 250
