"""What a report shows, computed once from the store; every renderer reads only this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from virtbench.analysis.noise import NoiseSummary
from virtbench.model import Metric
from virtbench.stats import MainEffect, RatioCI, Significance, Summary
from virtbench.store import RunInfo

__all__ = ["Analysis", "FirstVsRest", "MetricRow", "Series", "VariantInfo"]


@dataclass(frozen=True)
class VariantInfo:
    name: str
    knobs: dict[str, Any]
    is_baseline: bool
    run_id: str


@dataclass
class MetricRow:
    """One (variant, workload, metric): its summary and its comparison with the baseline."""

    variant: str
    workload_id: str
    workload: str
    metric: Metric
    summary: Summary | None
    outliers: int
    speedup: RatioCI | None = None
    significance: Significance | None = None
    p_holm: float | None = None
    unmeasured: dict[str, int] = field(default_factory=dict)
    reference: str | None = None
    """The variant this row is compared with (the baseline, or its compare_by counterpart)."""
    noisy: int = 0
    """How many of this row's trials were measured under noise (steal or foreign load)."""
    """Samples without a value, by status (e.g. {'too_fast': 3} for bonnie++'s +++++)."""

    @property
    def significant(self) -> bool | None:
        return None if self.p_holm is None else self.p_holm < 0.05


@dataclass
class Series:
    """Time-stamped samples of one metric in one trial (a hit ratio every 30 s, per-request
    latencies): ``t`` in seconds since the trial started, ``values`` in the metric's unit."""

    variant: str
    workload_id: str
    metric: str
    repetition: int
    t: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]
    labels: dict[str, str]


@dataclass
class FirstVsRest:
    """The first repetition against the later ones: cold vs warm for a cache that is not
    reset between repetitions (study 004's run 1 vs runs 2-3), or a warm-up check elsewhere."""

    variant: str
    workload_id: str
    metric: str
    first: float
    rest: Summary
    ratio: float
    """rest mean / first value (in the metric's unit ratio, not direction-adjusted)"""


@dataclass
class Analysis:
    runs: list[RunInfo]
    baseline: str
    variants: list[VariantInfo]
    workloads: list[tuple[str, str, dict[str, Any]]]
    rows: list[MetricRow]
    main_effects: dict[tuple[str, str], list[MainEffect]]
    best: dict[tuple[str, str], tuple[str, float]]
    realisations: list[dict[str, Any]]
    facts: list[tuple[str, str, dict[str, Any]]]
    """(run_id, phase, data)"""
    trial_counts: dict[str, tuple[int, int]]
    """run_id -> (trials ok, trials failed)"""
    failures: list[dict[str, Any]]
    factor_knob: str | None = None
    confidence: float = 0.95
    series: list[Series] = field(default_factory=list)
    per_repetition: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = field(
        default_factory=dict)
    """(workload_id, metric) -> variant -> [(repetition, mean of that trial's values)], for
    experiments with few repetitions (the studies' per-loop / per-run tables)."""
    first_vs_rest: list[FirstVsRest] = field(default_factory=list)
    notes: dict[tuple[str, str], dict[str, list[str]]] = field(default_factory=dict)
    """(variant, workload_id) -> note name -> distinct values seen in its trials' notes."""
    values: dict[tuple[str, str, str], npt.NDArray[np.float64]] = field(default_factory=dict)
    """(variant, workload_id, metric) -> the per-trial values, for report sections that need
    more than the summaries (bootstrap aggregates, regressions)."""
    metric_defs: dict[tuple[str, str], Metric] = field(default_factory=dict)
    """Every declared metric by (workload_id, name), including series-only ones."""
    compare_knob: str | None = None
    """When set, each variant is compared with the variant that has the same other knobs and
    this knob at the baseline's value (e.g. each background rate against OVS at that rate)."""
    noise: NoiseSummary = field(default_factory=NoiseSummary)
    """Trials measured under noise and the stored preflight checks."""

    def variant(self, name: str) -> VariantInfo | None:
        for info in self.variants:
            if info.name == name:
                return info
        return None

    def metrics_of(self, workload_id: str) -> list[Metric]:
        seen: dict[str, Metric] = {}
        for row in self.rows:
            if row.workload_id == workload_id:
                seen.setdefault(row.metric.name, row.metric)
        # Primary metrics (the headline) first, then the rest by name.
        return sorted(seen.values(), key=lambda m: (not m.primary, m.name))

    def row(self, variant: str, workload_id: str, metric: str) -> MetricRow | None:
        for row in self.rows:
            if (row.variant, row.workload_id, row.metric.name) == (variant, workload_id, metric):
                return row
        return None
