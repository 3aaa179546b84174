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
