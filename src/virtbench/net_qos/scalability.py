"""Study 002's scalability summaries: throughput vs number of stressed neighbours."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from virtbench.stats.regression import LinearFit, linear_fit

__all__ = ["Scalability", "degradation_range", "scalability"]


def degradation_range(mean_by_count: Mapping[int, float]) -> tuple[float, float]:
    """(smallest, largest) drop between consecutive neighbour counts, in the metric's unit.

    Study 002's "degradation range": e.g. KVM 19.29, 19.21, 17.15, 13.21, 11.40 Gbit/s gives
    0.08–3.94 Gbit/s. A rise counts as a negative drop.
    """
    counts = sorted(mean_by_count)
    if len(counts) < 2:
        raise ValueError("need means at two or more neighbour counts")
    drops = [mean_by_count[a] - mean_by_count[b] for a, b in itertools.pairwise(counts)]
    return float(min(drops)), float(max(drops))


@dataclass(frozen=True)
class Scalability:
    """Throughput vs neighbours: per-count means, drop range, and the OLS fit on all samples."""

    means: dict[int, float]
    drop_min: float
    drop_max: float
    fit: LinearFit
    """slope in unit/neighbour with its t CI; fitted on every repetition, not on means."""


def scalability(samples: Mapping[int, Sequence[float]]) -> Scalability:
    """Summarise ``{neighbour count: [throughput per repetition]}``."""
    means = {k: float(np.mean(v)) for k, v in samples.items() if len(v)}
    lo, hi = degradation_range(means)
    xs = [float(k) for k, v in samples.items() for _ in v]
    ys = [float(y) for v in samples.values() for y in v]
    return Scalability(means, lo, hi, linear_fit(xs, ys))
