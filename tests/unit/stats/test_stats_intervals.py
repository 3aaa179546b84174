"""Intervals of the mean stay in the metric's domain; too few values give none, with a reason."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.model import Better, Domain, Metric, default_domain
from virtbench.stats import summarize
from virtbench.stats.intervals import mean_interval


def _inside(s: object, low: float, high: float) -> None:
    assert low <= s.ci_low <= s.mean <= s.ci_high <= high  # type: ignore[attr-defined]


def test_domain_defaults_from_the_unit() -> None:
    assert default_domain("%") == Domain.PROPORTION
    assert default_domain("ms") == default_domain("req/s") == Domain.POSITIVE
    assert default_domain("dB") == Domain.REAL
    assert Metric("hit", "%", Better.HIGHER, "").value_domain == Domain.PROPORTION
    cpu = Metric("cpu", "%", Better.LOWER, "", domain=Domain.POSITIVE)
    assert cpu.value_domain == Domain.POSITIVE
    assert Metric("x", "s", Better.LOWER, "", domain="real").domain == Domain.REAL  # type: ignore[arg-type]


@pytest.mark.parametrize("values", [[99.9, 98.6, 100.0], [0.0, 0.4, 0.1], [100.0, 100.0, 99.0],
                                    [50.0, 10.0, 90.0, 70.0]])
def test_proportions_stay_within_0_and_100(values: list[float]) -> None:
    s = summarize(values, domain=Domain.PROPORTION)
    assert s.ci_method == "Wilson (effective n)"
    _inside(s, 0.0, 100.0)
    t = summarize(values)  # the old t interval leaves [0, 100] on the same data
    assert t.ci_low < 0.0 or t.ci_high > 100.0 or values == [50.0, 10.0, 90.0, 70.0]


def test_wilson_tends_to_the_t_interval_away_from_the_bounds() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(50.0, 1.0, 30)
    w = summarize(x, domain=Domain.PROPORTION)
    t = summarize(x)
    assert (w.ci_low, w.ci_high) == pytest.approx((t.ci_low, t.ci_high), rel=2e-3)


def test_constant_values_have_a_point_interval_at_the_mean() -> None:
    s = summarize([0.0, 0.0, 0.0], domain=Domain.PROPORTION)
    assert (s.ci_low, s.ci_high) == (0.0, 0.0)
    for domain in Domain:  # the mean of three 1.6 is 1.6000000000000003: still inside
        s = summarize([1.6, 1.6, 1.6], domain=domain)
        assert s.ci_low <= s.mean <= s.ci_high


def test_positive_quantities_use_the_log_scale() -> None:
    values = [1.2e-3, 0.9e-3, 4.5e-3]  # the p99 of the varnish study: t goes below 0
    assert summarize(values).ci_low < 0.0
    s = summarize(values, domain=Domain.POSITIVE)
    assert s.ci_method == "log-normal (Cox)"
    _inside(s, 0.0, math.inf)
    y = np.log(values)
    half = sps.t.ppf(0.975, 2) * math.sqrt(np.var(y, ddof=1) / 3
                                           + np.var(y, ddof=1) ** 2 / 4)
    centre = np.mean(y) + np.var(y, ddof=1) / 2
    assert (s.ci_low, s.ci_high) == pytest.approx((math.exp(centre - half),
                                                   math.exp(centre + half)))


def test_cox_interval_covers_the_log_normal_mean() -> None:
    rng = np.random.default_rng(11)
    true_mean = math.exp(0.0 + 0.5 ** 2 / 2)
    hits = 0
    for _ in range(400):
        s = summarize(rng.lognormal(0.0, 0.5, 10), domain=Domain.POSITIVE)
        hits += s.ci_low <= true_mean <= s.ci_high
    assert 0.90 <= hits / 400 <= 0.99  # nominal 95 %, within Monte-Carlo error


def test_counts_with_zeros_use_a_bootstrap_and_stay_positive() -> None:
    values = [0.0, 1.0, 0.0, 3.0]  # backend fetches
    s = summarize(values, domain=Domain.POSITIVE)
    assert s.ci_method == "bootstrap percentile"
    _inside(s, 0.0, math.inf)
    assert summarize(values, domain=Domain.POSITIVE) == s  # seeded by the data: repeatable


def test_real_quantities_keep_the_t_interval() -> None:
    s = summarize([-1.0, 0.5, 2.0], domain=Domain.REAL)
    assert s.ci_method == "t" and s.ci_low < -1.0


def test_values_outside_the_declared_domain_fall_back() -> None:
    assert summarize([120.0, 130.0, 90.0], domain=Domain.PROPORTION).ci_method \
        == "log-normal (Cox)"
    assert summarize([-1.0, 2.0, 3.0], domain=Domain.POSITIVE).ci_method == "t"


@pytest.mark.parametrize("domain", list(Domain))
def test_fewer_than_three_values_give_no_interval_and_say_why(domain: Domain) -> None:
    for values in ([99.38], [99.0, 99.8]):
        s = summarize(values, domain=domain)
        assert math.isnan(s.ci_low) and math.isnan(s.ci_high)
        assert s.no_ci_reason.startswith(f"{len(values)} value")
        assert "at least 3" in s.no_ci_reason
    assert mean_interval(np.array([1.0, 2.0, 3.0]), 0.95, domain).why_none == ""


def test_shares_at_a_bound_by_rounding_give_the_mean_not_a_division_by_zero() -> None:
    # Real per-trial shares from `compare --explain` (a function in every stack): 100 % and a
    # hair below it, whose mean rounds to exactly 100 while their variance is not zero.
    x = np.array([100.0, 100.0, 99.99999999999999])
    assert float(np.mean(x)) == 100.0 and float(np.var(x, ddof=1)) > 0.0
    interval = mean_interval(x, 0.95, Domain.PROPORTION)
    assert (interval.low, interval.high) == (100.0, 100.0)
