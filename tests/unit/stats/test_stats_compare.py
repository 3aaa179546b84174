"""Speedup / percent-change intervals, significance tests and Holm against references."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.model import Better
from virtbench.stats import (
    choose_test,
    holm,
    mann_whitney_test,
    percent_change_ci,
    ratio_ci_delta,
    ratio_ci_fieller,
    speedup_ci,
    welch_test,
)


def _times(rng: np.random.Generator, mean: float, n: int, cv: float = 0.1) -> np.ndarray:
    return rng.normal(mean, cv * mean, n)


# ---------------------------------------------------------------------------- speedup intervals


def test_speedup_direction_lower_and_higher() -> None:
    base, var = [2.0, 2.2, 1.8, 2.0], [1.0, 1.1, 0.9, 1.0]
    assert speedup_ci(base, var, Better.LOWER).ratio == pytest.approx(2.0)
    assert speedup_ci(base, var, Better.HIGHER).ratio == pytest.approx(0.5)


def test_bootstrap_ci_contains_true_ratio_and_narrows_with_n() -> None:
    rng = np.random.default_rng(2024)
    small = speedup_ci(_times(rng, 2.0, 10), _times(rng, 1.0, 10), Better.LOWER, seed=1)
    large = speedup_ci(_times(rng, 2.0, 900), _times(rng, 1.0, 900), Better.LOWER, seed=1)
    assert small.method == large.method == "bootstrap-bca"
    for ci in (small, large):
        assert ci.ci_low <= 2.0 <= ci.ci_high
        assert ci.ci_low < ci.ratio < ci.ci_high
    assert large.ci_high - large.ci_low < (small.ci_high - small.ci_low) / 5


def test_bootstrap_is_reproducible_by_seed() -> None:
    rng = np.random.default_rng(1)
    b, v = _times(rng, 3.0, 15), _times(rng, 2.0, 15)
    assert speedup_ci(b, v, Better.LOWER, seed=4) == speedup_ci(b, v, Better.LOWER, seed=4)
    assert speedup_ci(b, v, Better.LOWER, seed=4) != speedup_ci(b, v, Better.LOWER, seed=5)


def test_bca_matches_scipy_bootstrap() -> None:
    # same estimator as scipy.stats.bootstrap(method="BCa") on two independent samples;
    # Monte Carlo error at 20000 resamples is well under 1.5 %
    rng = np.random.default_rng(1)
    b = rng.lognormal(np.log(2.0), 0.3, 30)
    v = rng.lognormal(np.log(1.0), 0.3, 25)
    ours = speedup_ci(b, v, Better.LOWER, resamples=20_000, seed=0)
    ref = sps.bootstrap(
        (b, v),
        lambda x, y, axis=-1: x.mean(axis=axis) / y.mean(axis=axis),
        n_resamples=20_000,
        method="BCa",
        random_state=0,
    ).confidence_interval
    assert ours.method == "bootstrap-bca"
    assert ours.ci_low == pytest.approx(ref.low, rel=0.015)
    assert ours.ci_high == pytest.approx(ref.high, rel=0.015)


def test_percentile_method_on_request() -> None:
    rng = np.random.default_rng(9)
    ci = speedup_ci(_times(rng, 2, 20), _times(rng, 1, 20), Better.LOWER, method="percentile")
    assert ci.method == "bootstrap-percentile" and ci.ci_low < ci.ratio < ci.ci_high


def test_fieller_large_sample_contains_truth_and_is_wider_for_smaller_n() -> None:
    rng = np.random.default_rng(77)
    big = speedup_ci(_times(rng, 2.0, 50_000), _times(rng, 1.0, 50_000), Better.LOWER)
    assert big.method == "fieller"
    assert big.ci_low <= 2.0 <= big.ci_high
    smaller = ratio_ci_fieller(_times(rng, 2.0, 500), _times(rng, 1.0, 500))
    assert smaller.ci_low <= 2.0 <= smaller.ci_high
    assert smaller.ci_high - smaller.ci_low > big.ci_high - big.ci_low


def test_fieller_hand_computed() -> None:
    # num: mean 10, s² = 1 (n 2: 9, 11 -> s² 2), den: mean 5; use large-n normal limit check
    x, y = np.array([9.0, 11.0, 9.0, 11.0]), np.array([4.0, 6.0, 4.0, 6.0])
    vx, vy = np.var(x, ddof=1) / 4, np.var(y, ddof=1) / 4  # 1/3 each
    # Satterthwaite df on (vx/mx², vy/my²) with n-1 = 3 each
    ax, ay = vx / 100, vy / 25
    df = (ax + ay) ** 2 / (ax**2 / 3 + ay**2 / 3)
    t2 = sps.t.ppf(0.975, df) ** 2
    a, b = 25 - t2 * vy, 50.0
    root = math.sqrt(t2 * (vx * a + vy * 100))
    ci = ratio_ci_fieller(x, y)
    assert (ci.ci_low, ci.ci_high) == pytest.approx(((b - root) / a, (b + root) / a))
    assert ci.ratio == 2.0


def test_fieller_unbounded_when_denominator_not_significant() -> None:
    ci = ratio_ci_fieller([1.0, 2.0, 3.0], [-1.0, 0.5, 1.0])
    assert ci.method == "fieller" and math.isnan(ci.ci_low) and math.isnan(ci.ci_high)


def test_delta_and_fieller_coverage_small_samples() -> None:
    rng = np.random.default_rng(123)
    reps, hits_d, hits_f = 400, 0, 0
    for _ in range(reps):
        b, v = _times(rng, 2.0, 20), _times(rng, 1.0, 20)
        d, f = ratio_ci_delta(b, v), ratio_ci_fieller(b, v)
        hits_d += d.ci_low <= 2.0 <= d.ci_high
        hits_f += f.ci_low <= 2.0 <= f.ci_high
    assert 0.90 <= hits_d / reps <= 0.99
    assert 0.90 <= hits_f / reps <= 0.99


def test_half_million_per_group_uses_analytic_interval() -> None:
    rng = np.random.default_rng(5)
    ci = speedup_ci(_times(rng, 1.5, 500_000), _times(rng, 1.0, 500_000), Better.LOWER)
    assert ci.method == "fieller"
    assert ci.ci_low <= 1.5 <= ci.ci_high


def test_degenerate_inputs() -> None:
    one = speedup_ci([2.0], [1.0, 1.1], Better.LOWER)
    assert one.method == "insufficient-data" and one.ratio == pytest.approx(2 / 1.05)
    assert math.isnan(one.ci_low)
    zero = speedup_ci([1.0, 2.0], [0.0, 0.0], Better.LOWER)
    assert zero.method == "undefined" and math.isnan(zero.ratio)
    const = speedup_ci([2.0] * 5, [1.0] * 5, Better.LOWER)
    assert (const.ratio, const.ci_low, const.ci_high) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="non-empty"):
        speedup_ci([], [1.0], Better.LOWER)
    with pytest.raises(ValueError, match="method"):
        speedup_ci([1.0, 2.0], [1.0, 2.0], Better.LOWER, method="magic")  # type: ignore[arg-type]


def test_percent_change() -> None:
    rng = np.random.default_rng(8)
    base, var = _times(rng, 100.0, 40, 0.05), _times(rng, 90.0, 40, 0.05)
    pc = percent_change_ci(base, var)
    assert pc.ratio == pytest.approx(100 * (var.mean() / base.mean() - 1))
    assert pc.ci_low <= -10.0 <= pc.ci_high and pc.ci_high < 0
    ratio = speedup_ci(base, var, Better.HIGHER)
    assert pc.ci_low == pytest.approx(100 * (ratio.ci_low - 1))


# ---------------------------------------------------------------------------- tests


def test_welch_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 12), rng.normal(11, 3, 20)
    ref = sps.ttest_ind(a, b, equal_var=False)
    got = welch_test(a, b)
    assert got.test == "welch"
    assert (got.statistic, got.p_value) == pytest.approx((ref.statistic, ref.pvalue))


def test_mann_whitney_matches_scipy() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.exponential(1.0, 15), rng.exponential(2.0, 18)
    ref = sps.mannwhitneyu(a, b, alternative="two-sided")
    got = mann_whitney_test(a, b)
    assert got.test == "mann-whitney"
    assert (got.statistic, got.p_value) == pytest.approx((ref.statistic, ref.pvalue))


def test_mann_whitney_published_example() -> None:
    # Exact test, no ties: a = [1, 2, 3], b = [4, 5, 6, 7] -> U_a = 0, p = 2 / C(7, 3) = 2/35
    got = mann_whitney_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0])
    assert got.statistic == 0.0 and got.p_value == pytest.approx(2 / 35)


def test_choose_test_rule() -> None:
    rng = np.random.default_rng(10)
    normal_a, normal_b = rng.normal(10, 1, 40), rng.normal(10.5, 1, 40)
    skewed = rng.lognormal(0, 1.2, 40)
    assert choose_test(normal_a, normal_b).test == "welch"
    assert choose_test(normal_a, skewed).test == "mann-whitney"
    assert choose_test([1.0, 2.0], [3.0, 4.0]).test == "welch"  # n < 3: not checked
    tiny = choose_test([1.0], [2.0, 3.0, 4.0])
    assert math.isnan(tiny.p_value)
    assert math.isnan(welch_test([2.0, 2.0], [2.0, 2.0]).p_value)


def test_holm_wikipedia_example() -> None:
    # https://en.wikipedia.org/wiki/Holm%E2%80%93Bonferroni_method#Example : p = 0.01, 0.04,
    # 0.03, 0.005 at α = 0.05 -> H1 and H4 rejected. Adjusted: 4·0.005 = 0.02, 3·0.01 = 0.03,
    # 2·0.03 = 0.06, max(1·0.04, 0.06) = 0.06.
    adj = holm([0.01, 0.04, 0.03, 0.005])
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [p <= 0.05 for p in adj] == [True, False, False, True]


def test_holm_r_p_adjust_example_and_cap() -> None:
    # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") -> 0.05 0.08 0.09 0.09 0.09
    assert holm([0.01, 0.02, 0.03, 0.04, 0.05]) == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])
    assert holm([0.5, 0.6]) == [1.0, 1.0]


def test_holm_nan_is_kept_and_not_counted() -> None:
    adj = holm([0.01, float("nan"), 0.04])
    assert adj[0] == pytest.approx(0.02) and math.isnan(adj[1]) and adj[2] == pytest.approx(0.04)
    assert holm([]) == []
    assert all(math.isnan(p) for p in holm([float("nan")] * 2))
    with pytest.raises(ValueError, match="p_values"):
        holm([1.5])


def test_analytic_threshold_is_tunable() -> None:
    rng = np.random.default_rng(12)
    b, v = _times(rng, 2.0, 30), _times(rng, 1.0, 30)
    assert speedup_ci(b, v, Better.LOWER, analytic_above=59).method == "fieller"
    assert speedup_ci(b, v, Better.LOWER, analytic_above=60).method == "bootstrap-bca"
    assert speedup_ci(b, v, Better.LOWER, method="delta").method == "delta"
