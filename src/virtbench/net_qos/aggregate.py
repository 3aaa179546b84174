"""The studies' headline "DPDK improves QoS by 22 %", as an explicitly defined aggregate.

Definition (QoS improvement of a variant over the baseline switch, in percent):
for every QoS metric m and background rate b, the relative improvement
    lower-is-better metrics (delay, jitter, loss):  (base − variant) / base
    higher-is-better metrics (throughput):          (variant − base) / base
computed on per-cell means; the aggregate is the (optionally weighted) mean of these relative
improvements × 100. A 95 % CI comes from a bootstrap that resamples repetitions within every
(variant, metric, rate) cell. Cells whose baseline mean is 0 are skipped (and listed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Cell", "QosImprovement", "qos_improvement"]

Cell = tuple[str, float]
"""(metric name, background rate in Mbit/s)."""


@dataclass(frozen=True)
class QosImprovement:
    percent: float
    ci_low: float
    ci_high: float
    per_cell: dict[Cell, float]
    """Relative improvement of each (metric, rate) cell in percent (point estimate)."""
    skipped: list[Cell] = field(default_factory=list)


def _improvement(base: float, value: float, higher_is_better: bool) -> float:
    return (value - base) / base if higher_is_better else (base - value) / base


def qos_improvement(
    baseline: Mapping[Cell, Sequence[float]],
    variant: Mapping[Cell, Sequence[float]],
    higher_is_better: Mapping[str, bool],
    *,
    weights: Mapping[str, float] | None = None,
    resamples: int = 2000,
    seed: int = 1,
    confidence: float = 0.95,
) -> QosImprovement:
    """Aggregate QoS improvement (percent) of ``variant`` over ``baseline``; see module doc."""
    cells = sorted(set(baseline) & set(variant))
    skipped = [c for c in cells if float(np.mean(baseline[c])) == 0.0]
    cells = [c for c in cells if c not in skipped]
    if not cells:
        raise ValueError("no (metric, background rate) cell has both a baseline and a variant")
    for metric, _rate in cells:
        if metric not in higher_is_better:
            raise ValueError(f"higher_is_better: no direction given for metric '{metric}'")
    w = np.array([(weights or {}).get(m, 1.0) for m, _ in cells], dtype=float)
    w = w / w.sum()

    def aggregate(base_means: np.ndarray, var_means: np.ndarray) -> float:
        imp = [
            _improvement(b, v, higher_is_better[c[0]])
            for c, b, v in zip(cells, base_means, var_means, strict=True)
        ]
        return float(np.dot(w, imp) * 100.0)

    b_arr = [np.asarray(baseline[c], dtype=float) for c in cells]
    v_arr = [np.asarray(variant[c], dtype=float) for c in cells]
    b_mean = np.array([a.mean() for a in b_arr])
    v_mean = np.array([a.mean() for a in v_arr])
    point = aggregate(b_mean, v_mean)
    rng = np.random.default_rng(seed)
    boots = np.empty(resamples)
    for i in range(resamples):
        bm = np.array([rng.choice(a, a.size).mean() for a in b_arr])
        vm = np.array([rng.choice(a, a.size).mean() for a in v_arr])
        if np.any(bm == 0):
            boots[i] = np.nan
            continue
        boots[i] = aggregate(bm, vm)
    alpha = (1 - confidence) / 2
    # Every resample can hit a zero baseline mean (e.g. no loss at all): then there is no CI.
    lo, hi = ((np.nan, np.nan) if np.isnan(boots).all()
              else np.nanquantile(boots, [alpha, 1 - alpha]))
    per_cell = {
        c: _improvement(b, v, higher_is_better[c[0]]) * 100.0
        for c, b, v in zip(cells, b_mean, v_mean, strict=True)
    }
    return QosImprovement(point, float(lo), float(hi), per_cell, skipped)
