"""Descriptive statistics of one sample: mean, median, spread, t CI of the mean, quantile CI."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from virtbench.stats._sample import SampleLike, as_sample, check_confidence

__all__ = ["Summary", "percentile_ci", "summarize"]


@dataclass(frozen=True)
class Summary:
    """Summary of one sample, all in the unit of the sample.

    ``cv`` (coefficient of variation) and ``ci_half_width_rel`` are unitless fractions.
    """

    n: int
    mean: float
    median: float
    sd: float  # sample standard deviation (n-1 divisor); nan when n == 1
    cv: float  # sd / mean; nan if mean == 0 or n == 1
    ci_low: float  # two-sided Student-t CI of the mean at `confidence`; nan when n == 1
    ci_high: float
    ci_half_width_rel: float  # (ci_high - ci_low) / 2 / |mean|; nan if mean == 0 or n == 1
    minimum: float
    maximum: float
    confidence: float


def summarize(values: SampleLike, confidence: float = 0.95) -> Summary:
    """Describe a sample. Raises ValueError on an empty sample or non-finite values."""
    check_confidence(confidence)
    x = as_sample(values)
    n = int(x.size)
    if n == 0:
        raise ValueError("values: cannot summarise an empty sample")
    mean = float(np.mean(x))
    median = float(np.median(x))
    if n == 1:
        sd = ci_low = ci_high = half_rel = math.nan
    else:
        sd = float(np.std(x, ddof=1))
        t = float(sps.t.ppf(0.5 + confidence / 2.0, n - 1))
        half = t * sd / math.sqrt(n)
        ci_low, ci_high = mean - half, mean + half
        half_rel = half / abs(mean) if mean != 0.0 else math.nan
    cv = sd / mean if mean != 0.0 else math.nan
    return Summary(
        n=n,
        mean=mean,
        median=median,
        sd=sd,
        cv=cv,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_half_width_rel=half_rel,
        minimum=float(np.min(x)),
        maximum=float(np.max(x)),
        confidence=confidence,
    )


def percentile_ci(
    values: SampleLike, q: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Quantile ``q`` (a fraction: 0.99 for p99) with a distribution-free confidence interval.

    Returns ``(estimate, low, high)``. The estimate is ``numpy.quantile`` (linear interpolation,
    Hyndman & Fan type 7). The interval is [x_(l), x_(u)] of the sorted sample, with ranks from the
    binomial distribution of the number of observations below the true quantile,
    B ~ Binomial(n, q): l = F⁻¹(α/2), u = F⁻¹(1-α/2) + 1 (1-based), which covers with probability
    ≥ confidence for any continuous distribution. A bound whose rank falls outside 1..n (sample
    too small for that quantile and confidence) is nan.
    """
    check_confidence(confidence)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q: must be a fraction in (0, 1), e.g. 0.99 for p99; got {q!r}")
    x = as_sample(values)
    n = int(x.size)
    if n == 0:
        raise ValueError("values: cannot take a quantile of an empty sample")
    alpha = 1.0 - confidence
    lo_rank = int(sps.binom.ppf(alpha / 2.0, n, q))  # 1-based rank; 0 means unattainable
    hi_rank = int(sps.binom.ppf(1.0 - alpha / 2.0, n, q)) + 1
    # guard against ppf returning a rank whose cdf is just below α/2 through rounding
    if lo_rank >= 1 and sps.binom.cdf(lo_rank - 1, n, q) > alpha / 2.0:
        lo_rank -= 1
    estimate = float(np.quantile(x, q))
    kth = [r - 1 for r in (lo_rank, hi_rank) if 1 <= r <= n]
    part = np.partition(x, kth) if kth else x
    low = float(part[lo_rank - 1]) if 1 <= lo_rank <= n else math.nan
    high = float(part[hi_rank - 1]) if 1 <= hi_rank <= n else math.nan
    return estimate, low, high
