"""What a report shows, computed once from the store; every renderer reads only this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from virtbench.model import Metric
from virtbench.stats import MainEffect, RatioCI, Significance, Summary
from virtbench.store import RunInfo

__all__ = ["Analysis", "MetricRow", "Series", "VariantInfo"]


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
    t: list[float]
    values: list[float]
    labels: dict[str, str]


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

    def metrics_of(self, workload_id: str) -> list[Metric]:
        seen: dict[str, Metric] = {}
        for row in self.rows:
            if row.workload_id == workload_id:
                seen.setdefault(row.metric.name, row.metric)
        return list(seen.values())

    def row(self, variant: str, workload_id: str, metric: str) -> MetricRow | None:
        for row in self.rows:
            if (row.variant, row.workload_id, row.metric.name) == (variant, workload_id, metric):
                return row
        return None
