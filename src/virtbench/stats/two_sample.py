"""Comparing two samples: speedup and percent change with CIs, significance tests, Holm.

The normal distribution comes from scipy.special (ndtri, ndtr: what scipy.stats.norm calls), the
rank and normality tests from scipy.stats (mannwhitneyu, shapiro), each imported by the function
that needs it: a command that compares nothing never imports SciPy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from virtbench.model import Better
from virtbench.stats._sample import (
    FloatArray,
    SampleLike,
    as_sample,
    check_confidence,
    resampled_means,
    sample_var_of_mean,
    t_quantile,
    welch_df,
)
from virtbench.stats.multiple import holm
from virtbench.stats.welch import welch_t_p

__all__ = [
    "ANALYTIC_ABOVE",
    "RatioCI",
    "Significance",
    "choose_test",
    "holm",
    "mann_whitney_test",
    "percent_change_ci",
    "ratio_ci_delta",
    "ratio_ci_fieller",
    "speedup_ci",
    "welch_test",
]

# speedup_ci switches from the bootstrap to Fieller's interval above this many samples in total.
ANALYTIC_ABOVE = 2_000
# Shapiro–Wilk is run on groups of 3..SHAPIRO_MAX samples (scipy's p-value is approximate above
# 5000); larger groups count as normal enough, because the t-test on means is then valid by the CLT.
SHAPIRO_MAX = 5000
NORMALITY_ALPHA = 0.05

RatioMethod = Literal["auto", "bca", "percentile", "fieller", "delta"]


@dataclass(frozen=True)
class RatioCI:
    """A ratio (unitless) or percent change (%) with its two-sided confidence interval.

    ``method`` is one of "bootstrap-bca", "bootstrap-percentile", "fieller", "delta",
    "insufficient-data" (a group has < 2 samples: bounds nan) or "undefined" (denominator mean 0).
    Bounds are nan when the interval is unbounded (Fieller: denominator not significantly ≠ 0).
    """

    ratio: float
    ci_low: float
    ci_high: float
    method: str


@dataclass(frozen=True)
class Significance:
    """A two-sided test of "no difference"; ``test`` is "welch" or "mann-whitney"."""

    test: str
    statistic: float
    p_value: float


# ----------------------------------------------------------------------------------------------
# ratio of means


def _ratio_parts(num: FloatArray, den: FloatArray) -> tuple[float, float, float, float, float]:
    """(ratio, mean_num, mean_den, var_of_mean_num, var_of_mean_den)."""
    mx, my = float(np.mean(num)), float(np.mean(den))
    return mx / my, mx, my, sample_var_of_mean(num), sample_var_of_mean(den)


def _ratio_df(mx: float, my: float, vx: float, vy: float, nx: int, ny: int) -> float:
    # Satterthwaite df of the linearised variance of log(mx/my): vx/mx² + vy/my².
    return welch_df([(vx / (mx * mx), nx), (vy / (my * my), ny)])


def ratio_ci_delta(num: SampleLike, den: SampleLike, confidence: float = 0.95) -> RatioCI:
    """CI of mean(num)/mean(den) by the delta method (independent samples).

    se(R) = |R| √(s_x²/(n_x m_x²) + s_y²/(n_y m_y²)); R ± t·se with Welch–Satterthwaite df.
    """
    check_confidence(confidence)
    x, y = as_sample(num, "num"), as_sample(den, "den")
    early = _early(x, y)
    if early is not None:
        return early
    r, mx, my, vx, vy = _ratio_parts(x, y)
    if mx == 0.0:
        return RatioCI(r, math.nan, math.nan, "delta")
    se = abs(r) * math.sqrt(vx / (mx * mx) + vy / (my * my))
    t = t_quantile(confidence, _ratio_df(mx, my, vx, vy, x.size, y.size))
    return RatioCI(r, r - t * se, r + t * se, "delta")


def ratio_ci_fieller(num: SampleLike, den: SampleLike, confidence: float = 0.95) -> RatioCI:
    """CI of mean(num)/mean(den) by Fieller's theorem (independent samples, Fieller 1954).

    The bounds are the roots θ of (m_x - θ m_y)² = t² (v_x + θ² v_y), v = s²/n, with the t quantile
    at the Welch–Satterthwaite df; unbounded (nan) when m_y² ≤ t² v_y.
    """
    check_confidence(confidence)
    x, y = as_sample(num, "num"), as_sample(den, "den")
    early = _early(x, y)
    if early is not None:
        return early
    r, mx, my, vx, vy = _ratio_parts(x, y)
    df = _ratio_df(mx, my, vx, vy, x.size, y.size) if mx != 0.0 else float(x.size + y.size - 2)
    t2 = t_quantile(confidence, df) ** 2
    a = my * my - t2 * vy
    if a <= 0.0:
        return RatioCI(r, math.nan, math.nan, "fieller")
    b = mx * my
    disc = t2 * (vx * a + vy * mx * mx)
    root = math.sqrt(max(disc, 0.0))
    return RatioCI(r, (b - root) / a, (b + root) / a, "fieller")


def _early(x: FloatArray, y: FloatArray) -> RatioCI | None:
    """Result for degenerate inputs, or None when an interval can be computed."""
    if x.size == 0 or y.size == 0:
        raise ValueError("both samples must be non-empty")
    my = float(np.mean(y))
    if my == 0.0:
        return RatioCI(math.nan, math.nan, math.nan, "undefined")
    if x.size < 2 or y.size < 2:
        return RatioCI(float(np.mean(x)) / my, math.nan, math.nan, "insufficient-data")
    return None


def _bootstrap_ratio(
    x: FloatArray, y: FloatArray, confidence: float, resamples: int, seed: int, bca: bool
) -> RatioCI:
    r = float(np.mean(x)) / float(np.mean(y))
    rng = np.random.default_rng(seed)
    boot = resampled_means(x, resamples, rng) / resampled_means(y, resamples, rng)
    boot = boot[np.isfinite(boot)]
    alpha = 1.0 - confidence
    if bca:
        probs = _bca_probs(x, y, r, boot, alpha)
        if probs is not None:
            lo, hi = np.quantile(boot, probs)
            return RatioCI(r, float(lo), float(hi), "bootstrap-bca")
    lo, hi = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0])
    return RatioCI(r, float(lo), float(hi), "bootstrap-percentile")


def _bca_probs(
    x: FloatArray, y: FloatArray, r: float, boot: FloatArray, alpha: float
) -> list[float] | None:
    """BCa-adjusted quantile levels (Efron 1987), or None when the correction is undefined."""
    if boot.size == 0:
        return None
    # bias correction z0 from the share of bootstrap ratios below the estimate (ties count half)
    share = (np.count_nonzero(boot < r) + np.count_nonzero(boot <= r)) / (2.0 * boot.size)
    if not 0.0 < share < 1.0:
        return None
    from scipy import special

    z0 = float(special.ndtri(share))  # norm.ppf
    # acceleration from the jackknife, one sample at a time, as scipy.stats.bootstrap does
    sx, sy, nx, ny = float(np.sum(x)), float(np.sum(y)), x.size, y.size
    jack_x = ((sx - x) / (nx - 1)) / (sy / ny)
    jack_y = (sx / nx) / ((sy - y) / (ny - 1))
    num = den = 0.0
    for jack in (jack_x, jack_y):
        d = jack.mean() - jack
        num += float(np.sum(d**3))
        den += float(np.sum(d**2))
    a = num / (6.0 * den**1.5) if den > 0.0 else 0.0
    probs = []
    for z_alpha in (float(special.ndtri(alpha / 2.0)), float(special.ndtri(1.0 - alpha / 2.0))):
        shift = z0 + z_alpha
        probs.append(float(special.ndtr(z0 + shift / (1.0 - a * shift))))  # norm.cdf
    if not all(math.isfinite(p) for p in probs):
        return None
    return probs


def _ratio_ci(
    num: SampleLike,
    den: SampleLike,
    confidence: float,
    resamples: int,
    seed: int,
    method: RatioMethod,
    analytic_above: int = ANALYTIC_ABOVE,
) -> RatioCI:
    check_confidence(confidence)
    if resamples < 100:
        raise ValueError(f"resamples: need at least 100 for a bootstrap CI, got {resamples}")
    x, y = as_sample(num, "num"), as_sample(den, "den")
    early = _early(x, y)
    if early is not None:
        return early
    if method == "auto":
        method = "fieller" if x.size + y.size > analytic_above else "bca"
    if method == "fieller":
        return ratio_ci_fieller(x, y, confidence)
    if method == "delta":
        return ratio_ci_delta(x, y, confidence)
    if method in ("bca", "percentile"):
        return _bootstrap_ratio(x, y, confidence, resamples, seed, bca=method == "bca")
    raise ValueError(f"method: unknown {method!r}; use auto, bca, percentile, fieller or delta")


def speedup_ci(
    baseline: SampleLike,
    variant: SampleLike,
    better: Better,
    confidence: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
    *,
    method: RatioMethod = "auto",
    analytic_above: int = ANALYTIC_ABOVE,
) -> RatioCI:
    """Speedup of ``variant`` over ``baseline`` (unitless; > 1 means the variant is better).

    S = mean(baseline)/mean(variant) for Better.LOWER (times), mean(variant)/mean(baseline) for
    Better.HIGHER (throughputs). CI: BCa bootstrap with independent resampling of both groups
    (``method="auto"`` and ≤ ``analytic_above`` samples in total), else Fieller's interval. The
    bootstrap costs about 14 ns per resampled value (resamples × n_total), hence the switch.
    """
    if better is Better.LOWER:
        return _ratio_ci(baseline, variant, confidence, resamples, seed, method, analytic_above)
    return _ratio_ci(variant, baseline, confidence, resamples, seed, method, analytic_above)


def percent_change_ci(
    baseline: SampleLike,
    variant: SampleLike,
    confidence: float = 0.95,
    seed: int = 0,
    *,
    resamples: int = 4000,
    method: RatioMethod = "auto",
    analytic_above: int = ANALYTIC_ABOVE,
) -> RatioCI:
    """Percent change of the mean, 100·(mean(variant)/mean(baseline) - 1) in %, with its CI
    (the ratio's CI from :func:`speedup_ci` with Better.HIGHER, mapped through the same formula)."""
    rc = _ratio_ci(variant, baseline, confidence, resamples, seed, method, analytic_above)
    return RatioCI(
        100.0 * (rc.ratio - 1.0),
        100.0 * (rc.ci_low - 1.0),
        100.0 * (rc.ci_high - 1.0),
        rc.method,
    )


# ----------------------------------------------------------------------------------------------
# significance tests


def _pair(a: SampleLike, b: SampleLike) -> tuple[FloatArray, FloatArray] | None:
    x, y = as_sample(a, "a"), as_sample(b, "b")
    if x.size < 2 or y.size < 2:
        return None
    return x, y


def welch_test(a: SampleLike, b: SampleLike) -> Significance:
    """Welch's unequal-variance t-test, two-sided (scipy.stats.ttest_ind, equal_var=False).
    p is nan when a group has < 2 samples or both have zero variance."""
    pair = _pair(a, b)
    if pair is None:
        return Significance("welch", math.nan, math.nan)
    x, y = pair
    if np.ptp(x) == 0.0 and np.ptp(y) == 0.0:
        # scipy would warn and return nan; equal constants are no evidence either way
        return Significance("welch", math.nan, math.nan)
    t, p = welch_t_p(x, y)
    return Significance("welch", t, p)


def mann_whitney_test(a: SampleLike, b: SampleLike) -> Significance:
    """Mann–Whitney U test, two-sided (scipy.stats.mannwhitneyu, method="auto"); the statistic
    is U of ``a``. p is nan when a group has < 2 samples."""
    pair = _pair(a, b)
    if pair is None:
        return Significance("mann-whitney", math.nan, math.nan)
    x, y = pair
    from scipy import stats

    res = stats.mannwhitneyu(x, y, alternative="two-sided")
    return Significance("mann-whitney", float(res.statistic), float(res.pvalue))


def looks_normal(values: SampleLike, alpha: float = NORMALITY_ALPHA) -> bool:
    """False only when Shapiro–Wilk rejects normality at ``alpha`` (tested for 3 ≤ n ≤ 5000 and
    non-constant data; other groups count as normal, see :func:`choose_test`)."""
    x = as_sample(values)
    if x.size < 3 or x.size > SHAPIRO_MAX or np.ptp(x) == 0.0:
        return True
    from scipy import stats

    return bool(stats.shapiro(x).pvalue >= alpha)


def choose_test(a: SampleLike, b: SampleLike) -> Significance:
    """Welch's t-test, unless Shapiro–Wilk rejects normality (α = 0.05) for either group, in
    which case Mann–Whitney U. Groups with n < 3, n > 5000 or constant values are not tested.
    p is nan when either group has < 2 samples."""
    if looks_normal(a) and looks_normal(b):
        return welch_test(a, b)
    return mann_whitney_test(a, b)
