"""linear_fit against scipy.stats.linregress."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.stats import linear_fit


def test_matches_linregress_and_t_interval() -> None:
    rng = np.random.default_rng(11)
    x = np.repeat([0.0, 100.0, 200.0, 400.0], 10)  # e.g. background Mbit/s, 10 samples per level
    y = 2.0 + 0.01 * x + rng.normal(0, 0.3, x.size)
    fit = linear_fit(x, y)
    ref = sps.linregress(x, y)
    t = sps.t.ppf(0.975, x.size - 2)
    assert fit.n == 40
    assert fit.slope == pytest.approx(ref.slope)
    assert fit.intercept == pytest.approx(ref.intercept)
    assert fit.r_squared == pytest.approx(ref.rvalue**2)
    assert fit.slope_ci_low == pytest.approx(ref.slope - t * ref.stderr)
    assert fit.slope_ci_high == pytest.approx(ref.slope + t * ref.stderr)
    assert fit.slope_ci_low <= 0.01 <= fit.slope_ci_high


def test_exact_line_and_two_points() -> None:
    fit = linear_fit([1.0, 2.0, 3.0], [3.0, 5.0, 7.0])
    assert (fit.slope, fit.intercept, fit.r_squared) == pytest.approx((2.0, 1.0, 1.0))
    two = linear_fit([0.0, 1.0], [1.0, 4.0])
    assert two.slope == pytest.approx(3.0) and math.isnan(two.slope_ci_low)


def test_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="lengths differ"):
        linear_fit([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="x: all values are identical"):
        linear_fit([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 2"):
        linear_fit([1.0], [1.0])
