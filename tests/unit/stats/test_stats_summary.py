"""summarize and percentile_ci against scipy and textbook order-statistic ranks."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.stats import percentile_ci, summarize


def test_summary_matches_numpy_and_scipy_t_interval() -> None:
    x = np.random.default_rng(7).normal(5.0, 0.4, 23)
    s = summarize(x, confidence=0.95)
    lo, hi = sps.t.interval(0.95, df=22, loc=x.mean(), scale=sps.sem(x))
    assert s.n == 23
    assert s.mean == pytest.approx(x.mean())
    assert s.median == pytest.approx(np.median(x))
    assert s.sd == pytest.approx(x.std(ddof=1))
    assert s.cv == pytest.approx(x.std(ddof=1) / x.mean())
    assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi))
    assert s.ci_half_width_rel == pytest.approx((hi - lo) / 2 / x.mean())
    assert (s.minimum, s.maximum) == (x.min(), x.max())


def test_summary_other_confidence_is_wider_at_99() -> None:
    x = [1.0, 2.0, 3.0, 4.0, 10.0]
    s95, s99 = summarize(x, 0.95), summarize(x, 0.99)
    lo, hi = sps.t.interval(0.99, df=4, loc=4.0, scale=sps.sem(x))
    assert (s99.ci_low, s99.ci_high) == pytest.approx((lo, hi))
    assert s99.ci_high - s99.ci_low > s95.ci_high - s95.ci_low


def test_summary_single_value_has_nan_spread() -> None:
    s = summarize([3.0])
    assert s.n == 1 and s.mean == 3.0 and s.median == 3.0
    assert all(math.isnan(v) for v in (s.sd, s.cv, s.ci_low, s.ci_high, s.ci_half_width_rel))


def test_summary_zero_mean_gives_nan_relative_values() -> None:
    s = summarize([-1.0, 0.0, 1.0])
    assert math.isnan(s.cv) and math.isnan(s.ci_half_width_rel)
    assert s.ci_low < 0 < s.ci_high


def test_summary_rejects_empty_and_nan() -> None:
    with pytest.raises(ValueError, match="empty"):
        summarize([])
    with pytest.raises(ValueError, match="NaN"):
        summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        summarize([1.0, 2.0], confidence=95)


def test_percentile_ci_median_ranks_n100() -> None:
    # Distribution-free 95 % CI of the median for n = 100 is [x_(40), x_(61)]
    # (binomial(100, 0.5) ranks; e.g. Conover, Practical Nonparametric Statistics, 3rd ed., §3.2).
    x = np.arange(1.0, 101.0)
    est, lo, hi = percentile_ci(np.random.default_rng(0).permutation(x), 0.5)
    assert est == pytest.approx(50.5)
    assert (lo, hi) == (40.0, 61.0)
    # the ranks' coverage is at least 95 %
    assert sps.binom.cdf(60, 100, 0.5) - sps.binom.cdf(39, 100, 0.5) >= 0.95


def test_percentile_ci_unattainable_upper_bound_is_nan() -> None:
    est, lo, hi = percentile_ci(np.arange(100.0), 0.99)
    assert est == pytest.approx(np.quantile(np.arange(100.0), 0.99))
    assert not math.isnan(lo) and math.isnan(hi)


def test_percentile_ci_rejects_percent_instead_of_fraction() -> None:
    with pytest.raises(ValueError, match="fraction"):
        percentile_ci([1.0, 2.0, 3.0], 99)


def test_percentile_ci_coverage_on_exponential_p90() -> None:
    # true p90 of Exp(1) is ln 10; coverage over 400 seeded samples must be near/above 95 %
    rng = np.random.default_rng(42)
    truth = math.log(10.0)
    hits = 0
    for _ in range(400):
        _, lo, hi = percentile_ci(rng.exponential(1.0, 200), 0.9)
        hits += lo <= truth <= hi
    assert 0.92 <= hits / 400 <= 1.0


def test_percentile_ci_narrows_with_n() -> None:
    rng = np.random.default_rng(3)
    _, lo_s, hi_s = percentile_ci(rng.exponential(1.0, 500), 0.99)
    _, lo_l, hi_l = percentile_ci(rng.exponential(1.0, 50_000), 0.99)
    assert hi_l - lo_l < hi_s - lo_s
    assert lo_l <= math.log(100.0) <= hi_l


def test_percentile_ci_p99_upper_bound_needs_368_samples() -> None:
    # q^n ≤ α/2  <=>  n ≥ ln(0.025)/ln(0.99) = 367.04 (the figure quoted in docs/statistics.md)
    assert math.isnan(percentile_ci(np.arange(367.0), 0.99)[2])
    assert not math.isnan(percentile_ci(np.arange(368.0), 0.99)[2])
