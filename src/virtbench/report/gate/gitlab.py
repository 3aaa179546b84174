"""The gate for GitLab CI: a Code Quality report (artifacts:reports:codequality) with one issue
per row that fails the gate, and a metrics report (artifacts:reports:metrics, OpenMetrics text)
with every row's ratio, interval and p-value.

Code Quality fields as GitLab documents them ("Implement a custom tool"): description,
check_name, fingerprint, severity, location.path, location.lines.begin. The fingerprint hashes
what identifies the row (check, workload, metric, variant), not the runs: the same regression
in the target branch's pipeline and the merge request's is one issue, so the widget shows what
a change introduced or resolved."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from virtbench import safetext
from virtbench.report.gate import comparison_rows as gate_rows
from virtbench.report.openmetrics import Family, render

if TYPE_CHECKING:
    from virtbench.decide.compare import Comparison, ComparisonRow

__all__ = ["render_code_quality", "render_metrics"]

_CHECKS = {"regression": ("virtbench/regression", "major"),
           "unjudged": ("virtbench/cannot-judge", "minor")}


def _fingerprint(check: str, row: ComparisonRow) -> str:
    key = "\0".join((check, row.workload_id, row.metric.name, row.variant))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def render_code_quality(comparison: Comparison, location: str, *,
                        allow_unjudged: bool = False) -> str:
    """A JSON array of issues, [] when the gate passes. ``location`` is the repository path the
    issues are reported at (the baseline export, by default)."""
    several = gate_rows.several_variants(comparison)
    issues: list[dict[str, Any]] = []
    for row in gate_rows.failing(comparison, allow_unjudged):
        check, severity = _CHECKS[gate_rows.outcome(comparison, row, allow_unjudged)]
        what = "regression" if row.regression else "cannot judge"
        issues.append({
            "description": f"virtbench {what}: {gate_rows.title(row, several)}: "
                           f"{gate_rows.explanation(comparison, row)}",
            "check_name": check, "fingerprint": _fingerprint(check, row),
            "severity": severity, "location": {"path": location, "lines": {"begin": 1}}})
    return safetext.dumps(issues, indent=2) + "\n"


def render_metrics(comparison: Comparison) -> str:
    """OpenMetrics: virtbench_compare_ratio (stat = ratio | ci_low | ci_high),
    virtbench_compare_p_worse (Holm-adjusted, with a gate) and virtbench_compare_regression."""
    ratio = Family("virtbench_compare_ratio", "NEW/BASE ratio of means (unitless) and the "
                   "bounds of its 95 % CI; stat = ratio | ci_low | ci_high")
    p_worse = Family("virtbench_compare_p_worse", "one-sided p-value of NEW worse than BASE "
                     "by more than the gate's PCT, Holm-adjusted across the rows")
    regression = Family("virtbench_compare_regression", "1 when the row fails the gate as a "
                        "regression, else 0")
    for row in comparison.rows:
        labels = {"workload": row.workload_id, "metric": row.metric.name,
                  "variant": row.variant}
        r = row.result
        for stat, value in (("ratio", r.ratio), ("ci_low", r.ci_low), ("ci_high", r.ci_high)):
            ratio.add({**labels, "stat": stat}, value)
        if comparison.fail_pct is not None:
            p_worse.add(labels, row.p_worse_holm)
            regression.add(labels, float(row.regression))
    return render([ratio, p_worse, regression])
