"""The result table as plain rows: the single source for terminal, CSV, Markdown and JSON."""

from __future__ import annotations

import math
from typing import Any

from virtbench.analysis import Analysis, MetricRow
from virtbench.model import better_text

__all__ = ["COLUMNS", "row_record", "table_records"]

COLUMNS = [
    "variant", "reference", "workload", "metric", "unit", "better", "n", "mean", "median", "sd",
    "cv", "ci_low", "ci_high", "ci_method", "no_ci_reason", "speedup", "speedup_ci_low",
    "speedup_ci_high", "speedup_method",
    "test", "p_value", "p_holm", "significant", "outliers", "unmeasured", "noisy_trials",
]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def row_record(row: MetricRow) -> dict[str, Any]:
    s = row.summary
    record: dict[str, Any] = {
        "variant": row.variant, "reference": row.reference,
        "workload": row.workload_id, "metric": row.metric.name,
        "unit": row.metric.unit, "better": better_text(row.metric.better),
        "n": s.n if s else 0,
        "mean": s.mean if s else None, "median": s.median if s else None,
        "sd": s.sd if s else None, "cv": s.cv if s else None,
        "ci_low": s.ci_low if s else None, "ci_high": s.ci_high if s else None,
        "ci_method": s.ci_method if s and not s.no_ci_reason else None,
        "no_ci_reason": s.no_ci_reason if s and s.no_ci_reason else None,
        "speedup": row.speedup.ratio if row.speedup else None,
        "speedup_ci_low": row.speedup.ci_low if row.speedup else None,
        "speedup_ci_high": row.speedup.ci_high if row.speedup else None,
        "speedup_method": row.speedup.method if row.speedup else None,
        "test": row.significance.test if row.significance else None,
        "p_value": row.significance.p_value if row.significance else None,
        "p_holm": row.p_holm, "significant": row.significant, "outliers": row.outliers,
        "unmeasured": ";".join(f"{k}={v}" for k, v in sorted(row.unmeasured.items())) or None,
        "noisy_trials": row.noisy,
    }
    return {k: _clean(v) for k, v in record.items()}


def table_records(analysis: Analysis) -> list[dict[str, Any]]:
    order = {v.name: i for i, v in enumerate(analysis.variants)}
    wl_order = {w[0]: i for i, w in enumerate(analysis.workloads)}
    rows = sorted(analysis.rows, key=lambda r: (wl_order.get(r.workload_id, 99), r.metric.name,
                                                order.get(r.variant, 99)))
    return [row_record(r) for r in rows]
