"""Derived, read-only views of an Analysis that reports need: metric groups, knob grids, series
groups, downsampling and flattened machine facts. Pure functions: no I/O, no plotting."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from virtbench.analysis.report_model import Analysis, MetricRow, Series, VariantInfo
from virtbench.model import Metric
from virtbench.stats import MainEffect

__all__ = [
    "FactRow",
    "FactsView",
    "FamilyReady",
    "GridLine",
    "KnobGrid",
    "MetricView",
    "SeriesGroup",
    "anchor",
    "downsample_minmax",
    "facts_views",
    "family_order",
    "knob_grid",
    "knob_grid_of",
    "metric_views",
    "series_groups",
]

# A series with at least this many points (median over its trials) is per-request data, shown
# as a distribution as well as over time; a hit ratio every 30 s for 10 min has 20.
PER_REQUEST_POINTS = 200
# Lists longer than this (CPU flags) are shown collapsed.
LONG_LIST = 12


def anchor(*parts: str) -> str:
    """An HTML id made of safe characters only, e.g. 'm-cpu-crc32c-time'."""
    text = "-".join(parts)
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-").lower() or "x"


@dataclass(frozen=True)
class MetricView:
    """Everything shown for one (workload, metric): rows in variant order, best, main effects."""

    workload_id: str
    workload: str
    metric: Metric
    rows: list[MetricRow]
    best: tuple[str, float] | None
    effects: list[MainEffect]

    @property
    def anchor(self) -> str:
        return anchor("m", self.workload_id, self.metric.name)

    def row_of(self, variant: str) -> MetricRow | None:
        for row in self.rows:
            if row.variant == variant:
                return row
        return None


@dataclass(frozen=True)
class FamilyReady:
    """One (workload, metric) family, analysed while the store is still being read
    (``analyse(on_family=...)``): its view as metric_views gives it once the analysis ends,
    and what a chart of it needs besides. A report can draw its charts meanwhile."""

    view: MetricView
    position: int
    """its index in family_order of every declared family: the report's metric sections'
    order when each declared family has rows"""
    families: int
    """how many families are declared"""
    baseline: str
    variants: list[VariantInfo]
    factor_knob: str | None
    confidence: float


def family_order(workload_ids: Sequence[str], metrics: Iterable[tuple[str, Metric]]
                 ) -> list[tuple[str, str]]:
    """(workload_id, metric name) of ``metrics`` in metric_views' order: the workloads in
    ``workload_ids``' order, then those missing from it, sorted; each workload's primary
    metrics first, then by name."""
    by_workload: dict[str, dict[str, Metric]] = defaultdict(dict)
    for wid, metric in metrics:
        by_workload[wid].setdefault(metric.name, metric)
    known = [wid for wid in dict.fromkeys(workload_ids) if wid in by_workload]
    extra = sorted(set(by_workload) - set(known))
    return [(wid, metric.name) for wid in [*known, *extra]
            for metric in sorted(by_workload[wid].values(), key=lambda m: (not m.primary, m.name))]


def metric_views(analysis: Analysis) -> list[MetricView]:
    """One view per (workload, metric) with rows, in workload order then declaration order."""
    order = {v.name: i for i, v in enumerate(analysis.variants)}
    grouped: dict[tuple[str, str], list[MetricRow]] = defaultdict(list)
    for row in analysis.rows:
        grouped[(row.workload_id, row.metric.name)].append(row)
    known = [w[0] for w in analysis.workloads]
    # Rows of a workload missing from analysis.workloads still get shown, after the known ones.
    extra = sorted({r.workload_id for r in analysis.rows} - set(known))
    names = {w[0]: w[1] for w in analysis.workloads}
    views = []
    for wid in [*known, *extra]:
        # primary metrics first; the store keeps no declaration order of metrics
        for metric in sorted(analysis.metrics_of(wid), key=lambda m: not m.primary):
            rows = sorted(grouped.get((wid, metric.name), []),
                          key=lambda r: order.get(r.variant, len(order)))
            if not rows:
                continue
            views.append(MetricView(wid, names.get(wid, wid), metric, rows,
                                    analysis.best.get((wid, metric.name)),
                                    list(analysis.main_effects.get((wid, metric.name), []))))
    return views


# ---- knob grids (matrix sweeps: a metric against a numeric knob, one line per other knob) ----
@dataclass(frozen=True)
class GridLine:
    label: str
    """e.g. 'switch=ovs', 'kvm-host, switch=ovs' when runs are compared; '' when the numeric
    knob is the only one that varies"""
    points: list[tuple[float, str]]
    """(x value, variant name), sorted by x"""
    run_id: str = ""
    """the run the line's variants come from, when several runs are compared"""


@dataclass(frozen=True)
class KnobGrid:
    x_knob: str
    line_knobs: list[str]
    lines: list[GridLine]
    per_run: bool = False
    """several runs compared: each run (host) has its own lines, named by its run label"""


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _knob_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "{" + ", ".join(map(str, value)) + "}"
    return str(value)


def knob_grid(analysis: Analysis) -> KnobGrid | None:
    """The numeric knob to put on an x axis, if the variants form a grid over one.

    Among the variants that set a numeric knob, the varying numeric knob with the most distinct
    values is x; every other varying knob (and the run, when several runs are compared) names a
    line. None when no numeric knob takes two or more values.
    """
    return knob_grid_of(analysis.variants)


def knob_grid_of(variants: Sequence[VariantInfo]) -> KnobGrid | None:
    """knob_grid of these variants (an analysis's, or those its families are analysed with)."""
    candidates: dict[str, set[float]] = defaultdict(set)
    for knob in {k for v in variants for k in v.knobs}:
        having = [v for v in variants if knob in v.knobs]
        if having and all(_is_number(v.knobs[knob]) for v in having):
            candidates[knob] = {float(v.knobs[knob]) for v in having}
    numeric = sorted((k for k, xs in candidates.items() if len(xs) >= 2),
                     key=lambda k: (-len(candidates[k]), k))
    if not numeric:
        return None
    x_knob = numeric[0]
    members = [v for v in variants if x_knob in v.knobs]
    all_knobs = sorted({k for v in members for k in v.knobs} - {x_knob})
    line_knobs = [k for k in all_knobs
                  if len({_knob_text(v.knobs.get(k)) for v in members}) > 1]
    several_runs = len({v.run_id for v in members}) > 1
    # Lines are keyed by run as well as by label, so two runs never merge into one line even
    # if their labels collide; compare mode names variants 'run-label/variant'.
    lines: dict[tuple[str, str], dict[float, str]] = {}
    for v in members:
        parts = [f"{k}={_knob_text(v.knobs.get(k, '–'))}" for k in line_knobs]
        run = v.run_id if several_runs else ""
        if several_runs:
            parts.insert(0, v.name.split("/", 1)[0] if "/" in v.name else v.run_id[:8])
        points = lines.setdefault((run, ", ".join(parts)), {})
        points.setdefault(float(v.knobs[x_knob]), v.name)  # duplicates: the first one wins
    result = [GridLine(label, sorted(points.items()), run)
              for (run, label), points in lines.items()]
    if not any(len(line.points) >= 2 for line in result):
        return None
    return KnobGrid(x_knob, line_knobs, result, several_runs)


# ---- time series ---------------------------------------------------------------------------
@dataclass
class SeriesGroup:
    """All series of one (workload, metric, series label), per variant in variant order."""

    workload_id: str
    metric: str
    label: str
    unit: str
    description: str
    by_variant: dict[str, list[Series]] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return anchor("s", self.workload_id, self.metric, self.label)

    @property
    def title(self) -> str:
        return f"{self.workload_id} · {self.metric}" + (f" ({self.label})" if self.label else "")

    @property
    def points(self) -> int:
        return sum(len(s.values) for items in self.by_variant.values() for s in items)

    @property
    def per_request(self) -> bool:
        """Many points per trial: per-request samples rather than a periodic reading."""
        sizes = [len(s.values) for items in self.by_variant.values() for s in items]
        return bool(sizes) and float(np.median(sizes)) >= PER_REQUEST_POINTS


def series_groups(analysis: Analysis) -> list[SeriesGroup]:
    order = {v.name: i for i, v in enumerate(analysis.variants)}
    metrics = analysis.metric_defs or {(r.workload_id, r.metric.name): r.metric
                                       for r in analysis.rows}
    groups: dict[tuple[str, str, str], SeriesGroup] = {}
    for item in analysis.series:
        label = item.labels.get("series", "")
        key = (item.workload_id, item.metric, label)
        group = groups.get(key)
        if group is None:
            metric = metrics.get((item.workload_id, item.metric))
            group = SeriesGroup(item.workload_id, item.metric, label,
                                metric.unit if metric else "",
                                metric.description if metric else "")
            groups[key] = group
        group.by_variant.setdefault(item.variant, []).append(item)
    for group in groups.values():
        group.by_variant = dict(sorted(group.by_variant.items(),
                                       key=lambda kv: order.get(kv[0], len(order))))
        for items in group.by_variant.values():
            items.sort(key=lambda s: s.repetition)
    return sorted(groups.values(), key=lambda g: (g.workload_id, g.metric, g.label))


def downsample_minmax(t: Any, values: Any, max_points: int = 2000
                      ) -> tuple[np.ndarray[Any, np.dtype[np.float64]],
                                 np.ndarray[Any, np.dtype[np.float64]]]:
    """At most ``max_points`` points of a line, sorted by t, keeping each bucket's extremes.

    The points are cut into max_points/2 buckets of equal count; each contributes its minimum
    and its maximum in time order, so spikes survive (every k-th point would drop them).
    """
    tt = np.asarray(t, dtype=float)
    vv = np.asarray(values, dtype=float)
    if tt.size > 1 and np.any(np.diff(tt) < 0):
        idx = np.argsort(tt, kind="stable")
        tt, vv = tt[idx], vv[idx]
    if tt.size <= max_points:
        return tt, vv
    buckets = max(1, max_points // 2)
    starts = np.linspace(0, tt.size, buckets + 1).astype(np.int64)[:-1]
    bucket_of = np.repeat(np.arange(buckets), np.diff(np.append(starts, tt.size)))
    # index of the min and max inside each bucket, found by sorting on (bucket, value)
    order = np.lexsort((vv, bucket_of))
    ends = np.append(starts[1:], tt.size) - 1
    lo, hi = order[starts], order[ends]
    keep = np.unique(np.concatenate([lo, hi]))  # sorted indices = time order
    return tt[keep], vv[keep]


# ---- machine facts -------------------------------------------------------------------------
@dataclass(frozen=True)
class FactRow:
    key: str
    values: list[str]
    """one per phase, '' when the phase lacks the fact"""
    changed: bool
    long: bool
    """a long list (e.g. CPU flags): shown collapsed"""
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """for a changed list: items present only after / only before"""


@dataclass(frozen=True)
class FactsView:
    run_id: str
    phases: list[str]
    rows: list[FactRow]


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for key in data:
            out |= _flatten(data[key], f"{prefix}.{key}" if prefix else str(key))
    else:
        out[prefix or "value"] = data
    return out


def _fact_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(map(str, value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and value >= 1 << 20:
        return f"{value} ({value / (1 << 30):.2f} GiB)"
    return str(value)


def facts_views(analysis: Analysis) -> list[FactsView]:
    """Facts per run as key / value-per-phase rows (before, after, ...), changes marked."""
    per_run: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for run_id, phase, data in analysis.facts:
        per_run[run_id].append((phase, _flatten(data)))
    views = []
    for run_id, snapshots in per_run.items():
        phases = [p for p, _ in snapshots]
        keys: dict[str, None] = {}
        for _, flat in snapshots:
            keys.update(dict.fromkeys(flat))
        rows = []
        for key in keys:
            raw = [flat.get(key) for _, flat in snapshots]
            texts = [_fact_text(v) for v in raw]
            lists = [set(map(str, v)) for v in raw if isinstance(v, list | tuple)]
            long = any(isinstance(v, list | tuple) and len(v) > LONG_LIST for v in raw)
            changed = len(set(texts)) > 1
            added: list[str] = []
            removed: list[str] = []
            if changed and len(lists) >= 2:
                added = sorted(lists[-1] - lists[0])
                removed = sorted(lists[0] - lists[-1])
            rows.append(FactRow(key, texts, changed, long, added, removed))
        views.append(FactsView(run_id, phases, rows))
    return views
