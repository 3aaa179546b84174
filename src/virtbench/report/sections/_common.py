"""Helpers shared by the study sections: finding a study's workloads, grouping variants by run,
and formatting means, CIs and percent changes (cells carry their units).

Text here is printed by rich with markup on: never put a '[' directly before a letter, '#', '/'
or '@' in a title, paragraph or cell (rich would read it as a style tag).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from virtbench.analysis import Analysis, MetricRow, VariantInfo
from virtbench.model import Better, Metric
from virtbench.report.formatting import fmt_no_ci, fmt_num, fmt_value
from virtbench.stats import RatioCI, Summary

__all__ = [
    "RunBlock",
    "change_from_row",
    "fmt_change",
    "fmt_mean_ci",
    "metric_of",
    "one_line",
    "ordered_unique",
    "run_blocks",
    "short_name",
    "workload_ids",
]


def workload_ids(analysis: Analysis, name: str) -> list[str]:
    """Workload ids of the analysed runs whose workload is ``name`` (e.g. 'storage.bonnie')."""
    return [wid for wid, wname, _params in analysis.workloads if wname == name]


RunBlock = tuple[str, list[VariantInfo]]
"""(run label — '' for a single run, else the 'host' of 'host/variant' —, its variants)."""


def run_blocks(analysis: Analysis) -> list[RunBlock]:
    """Variants grouped by run, in run order; with several runs the label is the prefix that
    analysis.build gives their variant names ('host/variant')."""
    several = len(analysis.runs) > 1
    blocks: dict[str, RunBlock] = {}
    for info in analysis.variants:
        label = info.name.split("/", 1)[0] if several and "/" in info.name else ""
        blocks.setdefault(info.run_id, (label, []))[1].append(info)
    return [blocks[run.id] for run in analysis.runs if run.id in blocks]


def short_name(variant: str, label: str) -> str:
    """'host/variant' -> 'variant' inside the block of run 'host'."""
    prefix = f"{label}/"
    return variant[len(prefix):] if label and variant.startswith(prefix) else variant


def metric_of(analysis: Analysis, workload_id: str, name: str) -> Metric | None:
    for metric in analysis.metrics_of(workload_id):
        if metric.name == name:
            return metric
    return None


def fmt_mean_ci(summary: Summary | None, unit: str) -> str:
    """'12.3 ms [11.9, 12.8]' (the CI of the mean in the metric's domain), '12.3 ms' for n = 1,
    the two values for n = 2, '–' for none."""
    if summary is None:
        return "–"
    mean = fmt_value(summary.mean, unit)
    if summary.no_ci_reason and summary.n == 2:
        return f"{mean} ({fmt_no_ci(summary.n, summary.minimum, summary.maximum, unit)})"
    if summary.n < 2 or math.isnan(summary.ci_low):
        return mean
    return f"{mean} [{fmt_num(summary.ci_low)}, {fmt_num(summary.ci_high)}]"


def change_from_row(row: MetricRow) -> RatioCI | None:
    """Percent change of the mean against the row's reference, 100·(mean/ref mean − 1) in %,
    with the CI of the row's speedup mapped through the same formula.

    A speedup is direction-adjusted (ref/variant for lower-is-better metrics), so for those
    the change is 100·(1/S − 1) and the bounds swap.
    """
    s = row.speedup
    if s is None or math.isnan(s.ratio):
        return None
    if row.metric.better is Better.HIGHER:
        return RatioCI(100 * (s.ratio - 1), 100 * (s.ci_low - 1), 100 * (s.ci_high - 1),
                       s.method)

    def inverse(x: float) -> float:
        return 100 * (1 / x - 1) if x > 0 and math.isfinite(x) else math.nan

    if s.ratio == 0:
        return None
    return RatioCI(inverse(s.ratio), inverse(s.ci_high), inverse(s.ci_low), s.method)


def fmt_change(change: RatioCI | None) -> str:
    """'+12.3 % [+8.1, +16.9]'; the bounds are omitted when undefined."""
    if change is None or math.isnan(change.ratio):
        return "–"
    text = f"{change.ratio:+.3g} %"
    if math.isnan(change.ci_low) or math.isnan(change.ci_high):
        return text
    return f"{text} [{change.ci_low:+.3g}, {change.ci_high:+.3g}]"


def one_line(text: str | None) -> str:
    """A docstring or description on one line (definitions quoted from the code)."""
    return " ".join((text or "").split())


def ordered_unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
