"""Descriptive statistics of one sample: mean, median, spread, CI of the mean within the metric's
domain (stats/intervals.py), quantile CI."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.model import Domain
from virtbench.stats._sample import SampleLike, as_sample, check_confidence
from virtbench.stats.intervals import mean_interval

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
    ci_low: float  # two-sided CI of the mean at `confidence`, inside the domain; nan if n < 3
    ci_high: float
    ci_half_width_rel: float  # (ci_high - ci_low) / 2 / |mean|; nan if mean == 0 or no CI
    minimum: float
    maximum: float
    confidence: float
    ci_method: str = "t"
    """How the CI was computed ('t', 'Wilson (effective n)', 'log-normal (Cox)', ...)."""
    no_ci_reason: str = ""
    """Why there is no CI ('2 values: an interval needs at least 3'); empty when there is."""


def summarize(values: SampleLike, confidence: float = 0.95,
              domain: Domain = Domain.REAL) -> Summary:
    """Describe a sample; its CI of the mean stays inside ``domain`` (see stats/intervals.py).

    Raises ValueError on an empty sample or non-finite values.
    """
    check_confidence(confidence)
    x = as_sample(values)
    n = int(x.size)
    if n == 0:
        raise ValueError("values: cannot summarise an empty sample")
    mean = float(np.mean(x))
    sd = float(np.std(x, ddof=1)) if n > 1 else math.nan
    interval = mean_interval(x, confidence, domain)
    half = (interval.high - interval.low) / 2.0
    return Summary(
        n=n,
        mean=mean,
        median=float(np.median(x)),
        sd=sd,
        cv=sd / mean if mean != 0.0 else math.nan,
        ci_low=interval.low,
        ci_high=interval.high,
        ci_half_width_rel=half / abs(mean) if mean != 0.0 else math.nan,
        minimum=float(np.min(x)),
        maximum=float(np.max(x)),
        confidence=confidence,
        ci_method=interval.method,
        no_ci_reason=interval.why_none,
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
    # scipy.stats, imported here: only a quantile's interval needs it (scipy.special's binomial
    # quantile, bdtrik, is another algorithm than binom.ppf's)
    from scipy import stats

    lo_rank = int(stats.binom.ppf(alpha / 2.0, n, q))  # 1-based rank; 0 means unattainable
    hi_rank = int(stats.binom.ppf(1.0 - alpha / 2.0, n, q)) + 1
    # guard against ppf returning a rank whose cdf is just below α/2 through rounding
    if lo_rank >= 1 and stats.binom.cdf(lo_rank - 1, n, q) > alpha / 2.0:
        lo_rank -= 1
    estimate = float(np.quantile(x, q))
    kth = [r - 1 for r in (lo_rank, hi_rank) if 1 <= r <= n]
    part = np.partition(x, kth) if kth else x
    low = float(part[lo_rank - 1]) if 1 <= lo_rank <= n else math.nan
    high = float(part[hi_rank - 1]) if 1 <= hi_rank <= n else math.nan
    return estimate, low, high
