"""`export RUN --format openmetrics`: each variant · workload · metric's mean and its 95 % CI
bounds (the report's intervals, inside the metric's domain) and the number of values, as
OpenMetrics text for a Prometheus pushgateway."""

from __future__ import annotations

from typing import TYPE_CHECKING

from virtbench.report.openmetrics import Family, metric_name, render, unit_token

if TYPE_CHECKING:
    from virtbench.analysis import Analysis
    from virtbench.model import Metric

__all__ = ["render_run_openmetrics"]

PREFIX = "virtbench"


def _family_name(metric: Metric, taken: dict[str, str]) -> tuple[str, str]:
    """(family name, unit token): 'virtbench_<metric>_<unit>' (the unit ends the name, as
    OpenMetrics requires); two metrics whose names reduce to the same family but whose units
    differ get a number before the unit."""
    unit = unit_token(metric.unit)
    stem = metric_name(PREFIX, metric.name)
    if unit and stem.endswith(f"_{unit}"):
        stem = stem[: -len(unit) - 1]
    key = f"{metric.name}\n{metric.unit}"
    number = 1
    while True:
        name = metric_name(stem, str(number) if number > 1 else "", unit)
        if taken.setdefault(name, key) == key:
            return name, unit
        number += 1


def render_run_openmetrics(analysis: Analysis) -> str:
    """One family per metric (labels run, experiment, variant, workload, metric, stat =
    mean | ci_low | ci_high), and virtbench_values (how many values each mean is of)."""
    run = analysis.runs[0]
    families: dict[str, Family] = {}
    taken: dict[str, str] = {f"{PREFIX}_values": ""}  # reserved for the counts
    counts = Family(f"{PREFIX}_values", "number of values (trials) each mean is of")
    for row in analysis.rows:
        if row.summary is None:
            continue
        metric = row.metric
        name, unit = _family_name(metric, taken)
        family = families.setdefault(name, Family(
            name, f"{metric.name} ({metric.unit or 'unitless'}, {metric.direction_text}): "
                  f"{metric.description}; stat = mean of the trials or the bounds of "
                  f"its {analysis.confidence:.0%} CI", unit))
        labels = {"run": run.id, "experiment": run.experiment, "variant": row.variant,
                  "workload": row.workload_id, "metric": metric.name}
        summary = row.summary
        for stat, value in (("mean", summary.mean), ("ci_low", summary.ci_low),
                            ("ci_high", summary.ci_high)):
            family.add({**labels, "stat": stat}, value)
        counts.add(labels, summary.n)
    return render([*families.values(), counts])
