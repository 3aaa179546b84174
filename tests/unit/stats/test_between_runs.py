"""Variance components of A/A runs (virtbench.stats.between_runs): the ANOVA estimator against a
hand computation and against simulated runs of known σ_b and σ_w over many seeds, the interval of
σ_b, the minimum detectable effect against a hand computation, and the drift-aware log ratio."""

from __future__ import annotations

import math

import numpy as np
import pytest

from virtbench.decide.validation import drifting_runs
from virtbench.model import Better
from virtbench.stats.between_runs import (
    between_sd_interval,
    detectable_effect,
    effect_log,
    effect_pct,
    repetitions_needed,
    runs_needed,
    variance_components,
)
from virtbench.stats.verdict import log_ratio_moments, more_repetitions, ratio_verdict

SIGMA_B = 0.03
CV_W = 0.02
SIGMA_W = math.sqrt(math.log1p(CV_W**2))  # the log-scale SD of a log-normal of CV 2 %


def test_the_estimator_by_hand() -> None:
    # logs 0, .1, .2 and .3, .4, .5: run means .1 and .4, grand .25; SSB = 3(.15² + .15²) =
    # .135 (1 df), SSW = 2(.1² + .1²) = .04 (4 df): MSW = .01, n0 = 3, σ_b² = (.135 − .01)/3
    vc = variance_components([np.exp([0.0, 0.1, 0.2]), np.exp([0.3, 0.4, 0.5])])
    assert vc.scale == "log" and vc.runs == 2 and vc.values == 6
    assert vc.ms_between == pytest.approx(0.135)
    assert vc.within_var == pytest.approx(0.01)
    assert vc.n0 == pytest.approx(3.0)
    assert vc.between_var == pytest.approx(0.125 / 3)
    assert vc.between_df == 1.0  # capped at R − 1


def test_unbalanced_n0_by_hand() -> None:
    # sizes 2, 3, 5: N = 10, n0 = (10 − (4 + 9 + 25)/10)/2 = 3.1
    rng = np.random.default_rng(0)
    vc = variance_components([rng.lognormal(0, 0.1, k) for k in (2, 3, 5)])
    assert vc.n0 == pytest.approx(3.1)


def test_runs_that_agree_better_than_their_trials_give_no_drift() -> None:
    vc = variance_components([[1.0, 1.2], [1.2, 1.0], [1.1, 1.1]])
    assert vc.between_var_raw < 0 and vc.between_var == 0.0 and vc.between_df == 2.0
    low, high = between_sd_interval(vc)
    assert low == 0.0 <= high


@pytest.mark.parametrize(("runs", "n"), [(40, 10), (20, 5)])
def test_recovers_known_components_over_many_seeds(runs: int, n: int) -> None:
    raw, between_ok, within_ok = [], 0, 0
    seeds = range(200)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        vc = variance_components(list(drifting_runs(rng, SIGMA_B, CV_W, n, runs, count=1)[0]))
        raw.append(vc.between_var_raw)
        between_ok += abs(vc.between_sd / SIGMA_B - 1) < 0.4
        within_ok += abs(vc.within_sd / SIGMA_W - 1) < 0.25
    # unbiased before truncation: the mean over seeds is σ_b² (SE of the mean ≈ 2 %)
    assert np.mean(raw) == pytest.approx(SIGMA_B**2, rel=0.08)
    assert between_ok >= 0.9 * len(seeds) and within_ok >= 0.95 * len(seeds)


def test_unbalanced_runs_are_estimated_without_bias() -> None:
    raw, within = [], []
    for seed in range(300):
        rng = np.random.default_rng(1000 + seed)
        sizes = rng.integers(3, 16, 12)
        groups = [drifting_runs(rng, SIGMA_B, CV_W, int(k), 1, count=1)[0, 0] for k in sizes]
        vc = variance_components(groups)
        raw.append(vc.between_var_raw)
        within.append(vc.within_var)
    assert np.mean(raw) == pytest.approx(SIGMA_B**2, rel=0.08)
    assert np.mean(within) == pytest.approx(SIGMA_W**2, rel=0.03)


def test_interval_of_sigma_b_covers_it_about_95_percent_of_the_time() -> None:
    covered = 0
    trials = 2000
    rng = np.random.default_rng(7)
    for runs in drifting_runs(rng, SIGMA_B, CV_W, 10, 5, count=trials):
        low, high = between_sd_interval(variance_components(list(runs)))
        covered += low <= SIGMA_B <= high
    assert 0.92 <= covered / trials <= 0.98


def test_metrics_with_zeros_use_the_relative_scale() -> None:
    vc = variance_components([[0.0, 2.0, 1.0], [1.0, 3.0, 2.0]])
    assert vc.scale == "relative" and vc.mean == pytest.approx(1.5)
    # values / 1.5: run means 2/3 and 4/3, MSB = 3 · 2 · (1/3)² = 2/3; MSW = 1/1.5² = 4/9
    assert vc.ms_between == pytest.approx(2 / 3)
    assert vc.within_var == pytest.approx(4 / 9)


@pytest.mark.parametrize(("groups", "why"), [
    ([[1.0, 2.0]], "at least two runs"),
    ([[1.0], [2.0], []], "two values or more"),
    ([[0.0, -1.0], [0.0, 0.0]], "no relative scale"),
    ([[1.0, math.nan], [1.0, 2.0]], "finite"),
])
def test_what_cannot_be_estimated_says_why(groups: list[list[float]], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        variance_components(groups)


def test_detectable_effect_by_hand() -> None:
    # σ_b = 3 %, σ_w = 2 %, n = 10, α = 5 % one-sided, power 80 %: z = 1.644854 + 0.841621 =
    # 2.486475; R = 1: √(2 (0.0009 + 0.0004/10)) = √0.00188 = 0.04335897 → 0.107811 on the log
    # scale, e^0.107811 − 1 = 11.38 % (lower is better), 1 − e^−0.107811 = 10.22 % (higher)
    effect = detectable_effect(0.03**2, 0.02**2, 10, 1)
    assert effect == pytest.approx(0.107811, rel=1e-5)
    assert effect_pct(effect, Better.LOWER) == pytest.approx(11.384, abs=0.002)
    assert effect_pct(effect, Better.HIGHER) == pytest.approx(10.220, abs=0.002)
    # R = 4 runs per side: √(0.00188/4) = 0.02167948 → 0.053906
    assert detectable_effect(0.03**2, 0.02**2, 10, 4) == pytest.approx(0.053906, rel=1e-4)
    assert effect_log(effect_pct(0.05, Better.HIGHER), Better.HIGHER) == pytest.approx(0.05)


def test_needed_repetitions_and_runs_meet_the_target() -> None:
    between, within = 0.01**2, 0.03**2
    target = effect_log(5.0, Better.LOWER)
    n = repetitions_needed(between, within, target)
    assert detectable_effect(between, within, n) <= target < detectable_effect(between, within,
                                                                               n - 1)
    runs = runs_needed(between, within, target, 5)
    assert detectable_effect(between, within, 5, runs) <= target
    assert runs == 1 or detectable_effect(between, within, 5, runs - 1) > target
    # drift alone beyond the target: no n suffices with one run per side; more runs do
    assert repetitions_needed(0.03**2, within, effect_log(3.0, Better.LOWER)) == math.inf
    assert runs_needed(0.03**2, within, effect_log(3.0, Better.LOWER), 10) > 1


def test_drift_widens_the_log_ratio_and_zero_drift_is_welch() -> None:
    one = np.ones(1)
    args = (1.0 * one, 0.02**2 * one, 10 * one, 1.03 * one, 0.02**2 * 1.03**2 * one, 10 * one)
    welch = log_ratio_moments(*args)
    same = log_ratio_moments(*args, between_var=0.0, between_df=4.0)
    assert same.se == pytest.approx(welch.se) and same.df == pytest.approx(welch.df)
    drift = log_ratio_moments(*args, between_var=0.03**2, between_df=4.0)
    assert drift.se[0] == pytest.approx(math.sqrt(welch.se[0] ** 2 + 2 * 0.03**2))
    assert 1 <= drift.df[0] < welch.df[0]
    # more repetitions cannot shrink the drift part below the difference: never settles
    assert more_repetitions(drift, 10 * one, 10 * one, 2.0)[0] == math.inf


def test_a_drift_aware_verdict_is_more_cautious() -> None:
    rng = np.random.default_rng(3)
    base, new = rng.normal(1.0, 0.01, 10), rng.normal(1.05, 0.01, 10)
    plain = ratio_verdict(base, new, Better.LOWER, fail_pct=2.0)
    drifting = ratio_verdict(base, new, Better.LOWER, fail_pct=2.0, between_var=0.03**2,
                             between_df=4.0)
    assert plain.p_worse < 0.05 < drifting.p_worse
    assert drifting.ci_low < plain.ci_low and drifting.ratio == plain.ratio
