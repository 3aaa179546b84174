"""Is NEW better, worse, equivalent to BASE or not yet known? Log-ratio tests of two samples.

Everything works on the log of the ratio of means, L = log(m_new / m_base), whose standard error
by the delta method is se = √(s_new²/(n_new m_new²) + s_base²/(n_base m_base²)), with Welch–
Satterthwaite degrees of freedom. Intervals are exp(L ± t·se): always positive, never outside the
domain of a ratio. The core works on arrays so the validation tests can run 10⁵ comparisons at
once; :func:`ratio_verdict` is the scalar entry point. Definitions: docs/statistics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from virtbench.model import Better
from virtbench.stats._sample import SampleLike, as_sample, check_confidence, t_quantile

__all__ = [
    "ALPHA",
    "POWER",
    "LogRatioMoments",
    "RatioVerdict",
    "Verdict",
    "equivalence_p",
    "log_ratio_moments",
    "more_repetitions",
    "ratio_verdict",
    "two_sided_p",
    "worse_p",
    "worse_threshold",
]

ALPHA = 0.05
"""Level of every test here: two-sided CI at 95 %, TOST at 5 % per side, one-sided gate at 5 %."""
POWER = 0.8
"""Power assumed when estimating how many more repetitions would settle an inconclusive case."""

Verdict = Literal["better", "worse", "equivalent", "inconclusive", "insufficient", "no-ratio"]
Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LogRatioMoments:
    """L = log(m_new/m_base), its standard error and Welch df; arrays of one shape."""

    log_ratio: Array
    se: Array
    df: Array
    rel_var_base: Array
    """s²/m² of one BASE sample (per-sample relative variance)"""
    rel_var_new: Array
    between_var: Array | float = 0.0
    """σ_b²: the variance a run mean drifts by from run to run (log scale), on each side; 0
    when runs are taken to be independent draws"""


def log_ratio_moments(mean_base: Array, var_base: Array, n_base: Array,
                      mean_new: Array, var_new: Array, n_new: Array, *,
                      between_var: Array | float = 0.0,
                      between_df: Array | float = math.inf) -> LogRatioMoments:
    """Moments of the log ratio from per-group means, variances (n-1 divisor) and sizes.

    Means must be positive. df is the Welch–Satterthwaite df of the two variance parts (inf
    when both are zero). ``between_var`` (σ_b², a noise profile's between-run variance on the
    log scale, with ``between_df`` degrees of freedom) adds run-to-run drift to each side: the
    variance of L becomes 2σ_b² + s_b²/(n_b m_b²) + s_n²/(n_n m_n²), and df the Satterthwaite
    df of those three parts (2σ_b² is one estimate, shared by both sides). With σ_b² = 0 this
    is the Welch test above.
    """
    rb = np.asarray(var_base, dtype=np.float64) / np.square(mean_base)
    rn = np.asarray(var_new, dtype=np.float64) / np.square(mean_new)
    nb = np.asarray(n_base, dtype=np.float64)
    nn = np.asarray(n_new, dtype=np.float64)
    vb, vn = rb / nb, rn / nn
    drift = 2.0 * np.asarray(between_var, dtype=np.float64)
    total = vb + vn + drift
    with np.errstate(divide="ignore", invalid="ignore"):
        drift_part = np.where(drift > 0, np.square(drift) / between_df, 0.0)
        df = np.square(total) / (np.square(vb) / (nb - 1) + np.square(vn) / (nn - 1)
                                 + drift_part)
    df = np.where(total > 0, df, np.inf)
    return LogRatioMoments(np.log(np.asarray(mean_new, dtype=np.float64) / mean_base),
                           np.sqrt(total), df, rb, rn, between_var)


def _standardise(diff: Array, se: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        z = diff / se
    # se = 0 (constant samples): the sign of the difference decides; no difference is no evidence
    return np.where(se > 0, z, np.where(diff > 0, np.inf, np.where(diff < 0, -np.inf, 0.0)))


def worse_threshold(better: Better, fail_pct: float) -> float:
    """The log-ratio change that counts as "worse by more than ``fail_pct`` %", signed so that
    larger is worse: log(1 + p) for lower-is-better, -log(1 - p) for higher-is-better."""
    if fail_pct < 0:
        raise ValueError(f"fail_pct: must be ≥ 0, got {fail_pct}")
    p = fail_pct / 100.0
    if better is Better.LOWER:
        return math.log1p(p)
    if p >= 1.0:
        raise ValueError(f"fail_pct: a higher-is-better metric cannot fall by {fail_pct} % "
                         "or more; use less than 100")
    return -math.log1p(-p)


def _worse_sign(better: Better) -> float:
    return 1.0 if better is Better.LOWER else -1.0


def _t_sf(df: Array, z: Array) -> Array:
    """P(T > z) for Student's t with ``df`` degrees of freedom elementwise, the normal where df
    is infinite; z = ±inf gives 0 or 1: scipy.special.stdtr (scipy.stats.t.sf), imported when a
    comparison is made (scipy.special's import is a third of scipy.stats')."""
    from scipy import special

    with np.errstate(invalid="ignore"):
        return np.asarray(np.where(np.isinf(df), special.ndtr(-z),
                                   special.stdtr(np.minimum(df, 1e12), -z)), dtype=np.float64)


def worse_p(m: LogRatioMoments, better: Better, fail_pct: float) -> Array:
    """One-sided p-value of H0 "NEW is at most ``fail_pct`` % worse than BASE" (Welch t on the
    log ratio). Small p: the one-sided bound of the interval excludes a change of fail_pct."""
    worse = _worse_sign(better) * m.log_ratio
    return _t_sf(m.df, _standardise(worse - worse_threshold(better, fail_pct), m.se))


def equivalence_p(m: LogRatioMoments, margin_pct: float) -> Array:
    """TOST p-value (the larger of the two one-sided p-values) for the ratio lying within
    [1 - margin, 1 + margin]."""
    if not 0 < margin_pct < 100:
        raise ValueError(f"equivalence margin: must be in (0, 100) %, got {margin_pct}")
    low, high = math.log1p(-margin_pct / 100.0), math.log1p(margin_pct / 100.0)
    p_low = _t_sf(m.df, _standardise(m.log_ratio - low, m.se))  # H0: ratio ≤ 1 - margin
    p_high = _t_sf(m.df, _standardise(high - m.log_ratio, m.se))  # H0: ratio ≥ 1 + margin
    return np.maximum(p_low, p_high)


def two_sided_p(m: LogRatioMoments) -> Array:
    z = np.abs(_standardise(m.log_ratio, m.se))
    return np.minimum(1.0, 2.0 * _t_sf(m.df, z))


def more_repetitions(m: LogRatioMoments, n_base: Array, n_new: Array,
                     margin_pct: float) -> Array:
    """About how many more repetitions per side would settle the comparison at the observed
    difference and variances, with power POWER: the fewer of those needed to show a difference
    (two-sided, ALPHA) and those needed to show equivalence (TOST, ALPHA per side).

    Normal approximation with equal n on both sides: n = (z_α + z_β)² (v_base + v_new) / δ²,
    δ = |L| for a difference, margin - |L| for equivalence. 0 where the current n suffices.
    With run-to-run drift (``m.between_var`` = σ_b²) more repetitions only shrink the within
    part: n = k² (v_base + v_new) / (δ² − 2 k² σ_b²), inf when δ² ≤ 2 k² σ_b².
    """
    from scipy import special

    z_beta = float(special.ndtri(POWER))
    per_sample = m.rel_var_base + m.rel_var_new
    drift = 2.0 * np.asarray(m.between_var, dtype=np.float64)
    high = math.log1p(margin_pct / 100.0)
    low = -math.log1p(-margin_pct / 100.0)
    size = np.abs(m.log_ratio)
    margin = np.where(m.log_ratio >= 0, high, low)
    k_diff = (float(special.ndtri(1 - ALPHA / 2)) + z_beta) ** 2
    k_eq = (float(special.ndtri(1 - ALPHA)) + z_beta) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        room_diff = size**2 - k_diff * drift
        n_diff = np.where(room_diff > 0, k_diff * per_sample / room_diff, np.inf)
        eq_gap = margin - size
        room_eq = eq_gap**2 - k_eq * drift
        n_eq = np.where((eq_gap > 0) & (room_eq > 0), k_eq * per_sample / room_eq, np.inf)
    needed = np.minimum(np.nan_to_num(n_diff, nan=np.inf, posinf=np.inf), n_eq)
    have = np.minimum(np.asarray(n_base, dtype=np.float64), n_new)
    return np.where(np.isfinite(needed), np.maximum(0.0, np.ceil(needed - have)), np.inf)


@dataclass(frozen=True)
class RatioVerdict:
    """NEW/BASE ratio of means with its CI, a verdict, and the one-sided gate p-value."""

    n_base: int
    n_new: int
    mean_base: float
    mean_new: float
    ratio: float
    """mean(NEW)/mean(BASE), unitless; nan for 'no-ratio'"""
    ci_low: float
    ci_high: float
    """two-sided interval at ``1 - ALPHA`` on the log scale; nan when n < 2 on a side"""
    verdict: Verdict
    p_worse: float
    """one-sided p of "NEW no more than fail_pct % worse" (nan without a ratio)"""
    p_equivalent: float
    more_repetitions: float
    """for 'inconclusive': about how many more per side would settle it (inf: never), else 0"""


def ratio_verdict(base: SampleLike, new: SampleLike, better: Better, *,
                  equivalence_pct: float = 2.0, fail_pct: float = 0.0,
                  confidence: float = 1 - ALPHA, between_var: float = 0.0,
                  between_df: float = math.inf) -> RatioVerdict:
    """Compare two samples of one metric (see module docstring); ``between_var`` and
    ``between_df``: run-to-run drift from a noise profile (:func:`log_ratio_moments`).

    Verdict: 'equivalent' when TOST shows the ratio within ±equivalence_pct %; else 'better' or
    'worse' (by the metric's direction) when the two-sided CI excludes 1; else 'inconclusive'.
    'insufficient' when a side has fewer than two values; 'no-ratio' when a mean is ≤ 0.
    """
    check_confidence(confidence)
    x, y = as_sample(base, "base"), as_sample(new, "new")
    nb, nn = int(x.size), int(y.size)
    mb = float(np.mean(x)) if nb else math.nan
    mn = float(np.mean(y)) if nn else math.nan
    nan = math.nan
    if nb < 2 or nn < 2:
        ratio = mn / mb if nb and nn and mb > 0 and mn > 0 else nan
        return RatioVerdict(nb, nn, mb, mn, ratio, nan, nan, "insufficient", nan, nan, nan)
    if mb <= 0 or mn <= 0:
        return RatioVerdict(nb, nn, mb, mn, nan, nan, nan, "no-ratio", nan, nan, nan)
    m = log_ratio_moments(np.array([mb]), np.array([np.var(x, ddof=1)]), np.array([nb]),
                          np.array([mn]), np.array([np.var(y, ddof=1)]), np.array([nn]),
                          between_var=between_var, between_df=between_df)
    df = float(m.df[0])
    t = t_quantile(confidence, df)
    lr, se = float(m.log_ratio[0]), float(m.se[0])
    p_eq = float(equivalence_p(m, equivalence_pct)[0])
    p_two = float(two_sided_p(m)[0])
    verdict: Verdict
    if p_eq < ALPHA:
        verdict = "equivalent"
    elif p_two < ALPHA:
        verdict = "worse" if _worse_sign(better) * lr > 0 else "better"
    else:
        verdict = "inconclusive"
    more = (float(more_repetitions(m, np.array([nb]), np.array([nn]), equivalence_pct)[0])
            if verdict == "inconclusive" else 0.0)
    if verdict == "inconclusive" and more == 0.0:
        more = 1.0  # the estimate says "enough already": at least one more is still needed
    return RatioVerdict(nb, nn, mb, mn, math.exp(lr), math.exp(lr - t * se),
                        math.exp(lr + t * se), verdict,
                        float(worse_p(m, better, fail_pct)[0]), p_eq, more)
