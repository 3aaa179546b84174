"""Confidence intervals of a mean that stay inside the metric's domain.

Proportions (percentages): a Wilson score interval with the effective sample size of the trial
means (Korn & Graubard 1998); positive quantities: Cox's interval for a log-normal mean (Land
1972; Zhou & Gao 1997), or a percentile bootstrap when a value is 0; real quantities: Student t.
Fewer than MIN_INTERVAL_VALUES values get no interval. Definitions: docs/statistics.md.
"""

from __future__ import annotations

import math
import sys
import zlib
from dataclasses import dataclass

import numpy as np

from virtbench.model import Domain
from virtbench.stats._sample import FloatArray, resampled_means, t_quantile

__all__ = ["MIN_INTERVAL_VALUES", "MeanInterval", "mean_interval"]

MIN_INTERVAL_VALUES = 3
"""Below this many values no interval is shown: a t interval over two values uses t = 12.7 and
routinely leaves the domain, and no method has anything to say about a spread of one pair."""

_BOOTSTRAP_RESAMPLES = 10_000


@dataclass(frozen=True)
class MeanInterval:
    low: float
    high: float
    method: str
    """'t', 'Wilson (effective n)', 'log-normal (Cox)', 'bootstrap percentile', or '' (none)"""
    why_none: str = ""
    """Why there is no interval (empty when there is one)."""


def _t(confidence: float, n: int) -> float:
    return t_quantile(confidence, n - 1)


def _t_interval(x: FloatArray, confidence: float) -> MeanInterval:
    half = _t(confidence, x.size) * float(np.std(x, ddof=1)) / math.sqrt(x.size)
    mean = float(np.mean(x))
    return MeanInterval(mean - half, mean + half, "t")


def _wilson(x: FloatArray, confidence: float) -> MeanInterval:
    """Wilson score interval for a mean of per-trial percentages, in percent."""
    p = float(np.mean(x)) / 100.0
    var_mean = float(np.var(x / 100.0, ddof=1)) / x.size
    # Nothing to spread: every trial gave the same percentage, or the mean is at a bound by
    # rounding alone (shares of 100 % and a hair below it sum to exactly 100·n). The interval
    # is then the mean itself (not 100·p: the mean, to the last bit).
    if var_mean == 0.0 or p * (1.0 - p) <= 0.0:
        mean = float(np.mean(x))
        return MeanInterval(mean, mean, "Wilson (effective n)")
    n_eff = p * (1.0 - p) / var_mean
    z = _t(confidence, x.size)  # t, not z: the variance is estimated from few trials
    denom = 1.0 + z * z / n_eff
    centre = (p + z * z / (2.0 * n_eff)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n_eff + z * z / (4.0 * n_eff * n_eff))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return MeanInterval(100.0 * low, 100.0 * high, "Wilson (effective n)")


def _log_normal(x: FloatArray, confidence: float) -> MeanInterval:
    """Cox's interval for the mean of a log-normal sample: exp(ȳ + s²/2 ± t·√(s²/n +
    s⁴/(2(n−1)))) with y = ln x."""
    y = np.log(x)
    n = x.size
    s2 = float(np.var(y, ddof=1))
    centre = float(np.mean(y)) + s2 / 2.0
    half = _t(confidence, n) * math.sqrt(s2 / n + s2 * s2 / (2.0 * (n - 1)))
    if centre + half > _LOG_MAX:  # values spread over many decades: exp() would overflow
        return _bootstrap(x, confidence)
    return MeanInterval(math.exp(centre - half), math.exp(centre + half), "log-normal (Cox)")


_LOG_MAX = math.log(sys.float_info.max)


def _bootstrap(x: FloatArray, confidence: float) -> MeanInterval:
    # Seeded by the data: the same sample always reports the same interval.
    rng = np.random.default_rng(zlib.crc32(x.tobytes()))
    means = resampled_means(x, _BOOTSTRAP_RESAMPLES, rng)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return MeanInterval(float(low), float(high), "bootstrap percentile")


def mean_interval(x: FloatArray, confidence: float, domain: Domain) -> MeanInterval:
    """An interval for the mean of ``x`` that never leaves ``domain``.

    Values that contradict the domain (a percentage above 100, a negative time) fall back to the
    next wider domain, so the interval is still honest about the data.
    """
    n = int(x.size)
    if n < MIN_INTERVAL_VALUES:
        return MeanInterval(math.nan, math.nan, "",
                            f"{n} value{'s' if n != 1 else ''}: an interval needs at least "
                            f"{MIN_INTERVAL_VALUES}")
    lowest, highest = float(np.min(x)), float(np.max(x))
    if domain == Domain.PROPORTION and lowest >= 0.0 and highest <= 100.0:
        return _wilson(x, confidence)
    if domain in (Domain.PROPORTION, Domain.POSITIVE) and lowest >= 0.0:
        if lowest == highest:  # the mean itself: np.mean([1.6] * 3) is 1.6000000000000003
            mean = float(np.mean(x))
            return MeanInterval(mean, mean, "constant")
        return _log_normal(x, confidence) if lowest > 0.0 else _bootstrap(x, confidence)
    return _t_interval(x, confidence)
