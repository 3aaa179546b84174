"""Run-to-run drift: within-run and between-run variance components of repeated runs of one
configuration (A/A), and what they imply for the smallest regression a gate can detect.

Model (one-way random effects, per workload · metric): the j-th value of run i is
y_ij = μ + b_i + e_ij with run effects b_i ~ (0, σ_b²) and trial noise e_ij ~ (0, σ_w²), all
independent. For positive metrics y is the log of the value, so both components are relative
(σ ≈ coefficient of variation, and they add up on the scale the compare gate works on); a metric
with zeros or negative values is divided by its grand mean instead (a relative scale to first
order), and has no components when that mean is not positive.

Estimator: the ANOVA (method of moments) estimator for unbalanced groups (Searle, Casella &
McCulloch, *Variance Components*, 1992, §3.5): σ_w² = MSW, σ_b² = (MSB − MSW)/n₀ with
n₀ = (N − Σnᵢ²/N)/(R − 1), truncated at 0. Unbiased before truncation, closed form, and it needs
no distributional assumption beyond the moments — the reasons it is used here rather than REML
or a Bayesian hierarchical fit (docs/statistics.md). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from virtbench.model import Better
from virtbench.stats.verdict import ALPHA, POWER, worse_threshold

__all__ = ["Scale", "VarianceComponents", "between_sd_interval", "detectable_effect",
           "effect_log", "effect_pct", "repetitions_needed", "runs_needed",
           "variance_components"]

Scale = Literal["log", "relative"]


@dataclass(frozen=True)
class VarianceComponents:
    """σ_w² and σ_b² of one workload · metric over R runs, on ``scale`` (both relative)."""

    scale: Scale
    """'log': logs of the values (all positive); 'relative': values / their grand mean"""
    runs: int
    """R: runs with at least one value"""
    values: int
    """N: values over all runs"""
    mean: float
    """the grand mean of the values, in the metric's unit"""
    within_var: float
    """σ_w²: the mean square within runs (MSW)"""
    between_var: float
    """σ_b²: (MSB − MSW)/n₀, truncated at 0"""
    between_var_raw: float
    """(MSB − MSW)/n₀ before truncation (negative when the run means agree better than the
    trials would make them)"""
    ms_between: float
    ms_within: float
    n0: float
    """the effective values per run of the unbalanced estimator (n for balanced runs)"""
    between_df: float
    """Satterthwaite degrees of freedom of σ_b² (from MSB's R − 1 and MSW's N − R), within
    [1, R − 1]; R − 1 when σ_b² is truncated to 0"""

    @property
    def within_sd(self) -> float:
        return math.sqrt(self.within_var)

    @property
    def between_sd(self) -> float:
        return math.sqrt(self.between_var)


def variance_components(groups: Sequence[Sequence[float] | npt.NDArray[np.float64]]
                        ) -> VarianceComponents:
    """The ANOVA estimate of σ_w² and σ_b² from the values of each run (empty runs are
    ignored). Raises ValueError with fewer than two runs, no run with two values, a
    non-finite value, or (not all values positive) a grand mean ≤ 0."""
    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    arrays = [a for a in arrays if a.size]
    if len(arrays) < 2:
        raise ValueError("variance components need values from at least two runs")
    values = np.concatenate(arrays)
    if not np.all(np.isfinite(values)):
        raise ValueError("variance components need finite values")
    mean = float(values.mean())
    scale: Scale = "log"
    if np.all(values > 0):
        ys = [np.log(a) for a in arrays]
    elif mean > 0:
        scale = "relative"
        ys = [a / mean for a in arrays]
    else:
        raise ValueError("no relative scale: the values are not all positive and their mean "
                         "is not above 0")
    sizes = np.array([y.size for y in ys], dtype=np.float64)
    runs, total = len(ys), float(sizes.sum())
    if total - runs < 1:
        raise ValueError("the within-run variance needs a run with two values or more")
    means = np.array([y.mean() for y in ys])
    grand = float(np.sum(sizes * means) / total)
    ss_between = float(np.sum(sizes * (means - grand) ** 2))
    ss_within = float(sum(np.sum((y - m) ** 2) for y, m in zip(ys, means, strict=True)))
    ms_between = ss_between / (runs - 1)
    ms_within = ss_within / (total - runs)
    n0 = (total - float(np.sum(sizes**2)) / total) / (runs - 1)
    raw = (ms_between - ms_within) / n0
    df = float(runs - 1)
    if raw > 0:
        satterthwaite = (ms_between - ms_within) ** 2 / (
            ms_between**2 / (runs - 1) + ms_within**2 / (total - runs))
        df = min(max(satterthwaite, 1.0), df)
    return VarianceComponents(scale, runs, int(total), mean, ms_within, max(raw, 0.0), raw,
                              ms_between, ms_within, n0, df)


def between_sd_interval(vc: VarianceComponents, confidence: float = 1 - ALPHA
                        ) -> tuple[float, float]:
    """A ``confidence`` interval for σ_b (same scale): MSB·(R−1)/(σ_w² + n₀σ_b²) is χ² with
    R − 1 df for balanced runs; the bounds take MSW as σ_w² (it has N − R df, many more than
    MSB's R − 1) and are truncated at 0. Approximate for unbalanced runs."""
    from scipy import special

    df = vc.runs - 1
    upper_q = float(special.chdtri(df, (1 - confidence) / 2))  # χ² quantile (1 + c)/2
    lower_q = float(special.chdtri(df, (1 + confidence) / 2))  # χ² quantile (1 − c)/2
    low = (vc.ms_between * df / upper_q - vc.ms_within) / vc.n0
    high = (vc.ms_between * df / lower_q - vc.ms_within) / vc.n0
    return math.sqrt(max(low, 0.0)), math.sqrt(max(high, 0.0))


def _k(alpha: float, power: float) -> float:
    """z₁₋α + z_power: the one-sided test's distance, in standard errors."""
    from scipy import special

    return float(special.ndtri(1 - alpha) + special.ndtri(power))


def detectable_effect(between_var: float, within_var: float, n: float, runs_per_side: int = 1,
                      *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The minimum detectable effect on the log scale of a one-sided test at ``alpha`` with
    ``power``, n values per run and R runs per side (normal approximation):
    (z₁₋α + z_power) · √(2 (σ_b² + σ_w²/n) / R)."""
    if n < 1 or runs_per_side < 1:
        raise ValueError("n and runs_per_side must be at least 1")
    return _k(alpha, power) * math.sqrt(2 * (between_var + within_var / n) / runs_per_side)


def effect_pct(log_effect: float, better: Better) -> float:
    """A log-scale effect as "worse by X %": 100·(e^L − 1) for lower-is-better (NEW/BASE
    above 1 + X/100), 100·(1 − e^−L) for higher-is-better (below 1 − X/100)."""
    if better is Better.LOWER:
        return 100 * math.expm1(log_effect)
    return -100 * math.expm1(-log_effect)


def effect_log(pct: float, better: Better) -> float:
    """The inverse of :func:`effect_pct`: the gate's threshold on the log scale."""
    return worse_threshold(better, pct)


def repetitions_needed(between_var: float, within_var: float, effect: float,
                       runs_per_side: int = 1, *, alpha: float = ALPHA,
                       power: float = POWER) -> float:
    """The least n per run (at least 2) whose detectable effect is at most ``effect`` (log
    scale) with R runs per side; inf when drift alone is too large: 2σ_b²/R ≥ (effect/k)²."""
    if effect <= 0:
        raise ValueError("effect must be positive")
    room = runs_per_side * (effect / _k(alpha, power)) ** 2 / 2 - between_var
    if room <= 0:
        return math.inf
    return float(max(2, math.ceil(within_var / room * (1 - 1e-12))))


def runs_needed(between_var: float, within_var: float, effect: float, n: float, *,
                alpha: float = ALPHA, power: float = POWER) -> int:
    """The least R runs per side (n values each) whose detectable effect is at most
    ``effect`` (log scale)."""
    if effect <= 0:
        raise ValueError("effect must be positive")
    needed = 2 * (_k(alpha, power) / effect) ** 2 * (between_var + within_var / n)
    return max(1, math.ceil(needed * (1 - 1e-12)))
