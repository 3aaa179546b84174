"""Stopping rules for adaptive repetition: is a CI narrow enough yet?"""

from __future__ import annotations

import math

from virtbench.model import Better
from virtbench.stats._sample import SampleLike, as_sample
from virtbench.stats.summary import summarize
from virtbench.stats.two_sample import ratio_ci_delta

__all__ = ["ci_converged", "speedup_converged", "speedup_half_width_rel"]


def ci_converged(
    values: SampleLike, target_rel: float = 0.02, confidence: float = 0.95, min_n: int = 3
) -> bool:
    """True when n ≥ max(min_n, 2) and the t CI half-width of the mean is ≤ target_rel·|mean|."""
    x = as_sample(values)
    if x.size < max(min_n, 2):
        return False
    rel = summarize(x, confidence).ci_half_width_rel
    return math.isfinite(rel) and rel <= target_rel


def speedup_half_width_rel(
    baseline: SampleLike, variant: SampleLike, better: Better, confidence: float = 0.95
) -> float:
    """Half-width of the delta-method CI of the speedup divided by the speedup (nan if undefined).

    The ratio is symmetric in the log scale, so the value is the same for either ``better``
    up to the inversion; we compute it for the requested direction."""
    num, den = (baseline, variant) if better is Better.LOWER else (variant, baseline)
    rc = ratio_ci_delta(num, den, confidence)
    if not (math.isfinite(rc.ci_low) and math.isfinite(rc.ci_high)) or rc.ratio == 0.0:
        return math.nan
    return (rc.ci_high - rc.ci_low) / 2.0 / abs(rc.ratio)


def speedup_converged(
    baseline: SampleLike,
    variant: SampleLike,
    better: Better,
    target_rel: float = 0.02,
    confidence: float = 0.95,
) -> bool:
    """True when the speedup's delta-method CI half-width is ≤ target_rel·speedup (each group
    needs ≥ 2 samples). The delta method is used because this runs after every repetition."""
    rel = speedup_half_width_rel(baseline, variant, better, confidence)
    return math.isfinite(rel) and rel <= target_rel
