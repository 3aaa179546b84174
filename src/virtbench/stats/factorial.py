"""Factorial sweeps: main effect of each flag over all sets of enabled flags, best configuration."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from virtbench.model import Better
from virtbench.stats._sample import (
    FloatArray,
    SampleLike,
    as_sample,
    check_confidence,
    resampled_means,
)

__all__ = ["MainEffect", "best_configuration", "main_effects"]

Groups = Mapping[frozenset[str], Sequence[float] | SampleLike]


@dataclass(frozen=True)
class MainEffect:
    """Geometric-mean speedup (unitless, > 1 = enabling the flag helps) of enabling ``factor``,
    over ``pairs`` pairs of configurations differing only in it, with a bootstrap percentile CI.
    All values are nan when ``pairs`` is 0 (no such pair was measured) or a mean is ≤ 0."""

    factor: str
    speedup: float
    ci_low: float
    ci_high: float
    pairs: int


def _samples(groups: Groups) -> dict[frozenset[str], FloatArray]:
    if not groups:
        raise ValueError("groups: no configurations given")
    out: dict[frozenset[str], FloatArray] = {}
    for key, values in groups.items():
        label = "{" + ", ".join(sorted(key)) + "}"
        arr = as_sample(values, f"groups[{label}]")
        if arr.size == 0:
            raise ValueError(f"groups[{label}]: no samples")
        out[frozenset(key)] = arr
    return out


def _log_speedups(with_f: FloatArray, without_f: FloatArray, better: Better) -> FloatArray:
    """log of speedup(S -> S∪{f}) for arrays of means (same shape)."""
    if better is Better.LOWER:
        return np.asarray(np.log(without_f) - np.log(with_f), dtype=np.float64)
    return np.asarray(np.log(with_f) - np.log(without_f), dtype=np.float64)


def main_effects(
    groups: Groups,
    better: Better,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[MainEffect]:
    """Main effect of every flag that appears in any configuration, sorted by flag name.

    For flag f, every measured set S without f is paired with S∪{f} when that was measured too;
    effect(f) = exp(mean over pairs of log speedup(S -> S∪{f})), the geometric mean of the
    ratio-of-means speedups (direction per ``better``). CI: percentile bootstrap that resamples
    the samples within each configuration independently (one draw per configuration and
    replicate, shared by every pair that uses it) and recomputes the geometric mean.
    """
    check_confidence(confidence)
    data = _samples(groups)
    factors = sorted(set().union(*data.keys()))
    rng = np.random.default_rng(seed)
    means = {k: float(np.mean(v)) for k, v in data.items()}
    boot: dict[frozenset[str], FloatArray] = {}
    alpha = 1.0 - confidence
    effects: list[MainEffect] = []
    for f in factors:
        pairs = [(s, s | {f}) for s in sorted(data, key=sorted) if f not in s and s | {f} in data]
        used = [k for pair in pairs for k in pair]
        if not pairs or any(means[k] <= 0.0 for k in used):
            effects.append(MainEffect(f, math.nan, math.nan, math.nan, len(pairs)))
            continue
        point = _log_speedups(
            np.array([means[w] for _, w in pairs]), np.array([means[s] for s, _ in pairs]), better
        )
        for k in used:
            if k not in boot:
                boot[k] = resampled_means(data[k], resamples, rng)
        reps = np.mean(
            [_log_speedups(boot[w], boot[s], better) for s, w in pairs],
            axis=0,
        )
        reps = reps[np.isfinite(reps)]  # a resampled mean ≤ 0 has no logarithm
        if reps.size == 0:
            lo = hi = math.nan
        else:
            lo, hi = (float(v) for v in np.exp(np.quantile(reps, [alpha / 2, 1 - alpha / 2])))
        effects.append(MainEffect(f, float(math.exp(float(np.mean(point)))), lo, hi, len(pairs)))
    return effects


def best_configuration(groups: Groups, better: Better) -> tuple[frozenset[str], float]:
    """The configuration with the best mean (lowest for Better.LOWER, highest for HIGHER) and
    that mean. Ties go to the set with fewer flags, then to the alphabetically first."""
    data = _samples(groups)
    sign = 1.0 if better is Better.LOWER else -1.0
    best = min(data, key=lambda k: (sign * float(np.mean(data[k])), len(k), sorted(k)))
    return best, float(np.mean(data[best]))
