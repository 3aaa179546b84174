"""The compare verdicts and the history pages' content, from virtbench.decide (docs/decide.md)."""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup

from virtbench.decide.compare import Comparison, compare_runs
from virtbench.decide.explain import explain_runs
from virtbench.decide.history import History, build_history
from virtbench.decide.runs import load_run
from virtbench.model import VirtbenchError, better_text
from virtbench.report.explain_html import compare_context
from virtbench.report.formatting import fmt_value
from virtbench.report.history_html import history_chart
from virtbench.report.html import CHART_BUDGET
from virtbench.serve.svgstyle import presentation_attributes
from virtbench.store import RunInfo, Store

__all__ = [
    "comparison_rows",
    "comparisons",
    "explanation_views",
    "history",
    "history_rows",
    "history_view",
    "verdict_view",
]


def comparisons(store: Store, runs: list[RunInfo]) -> list[Comparison | str]:
    """The oldest selected run is BASE; every other run is a NEW against it. A pair decide
    cannot compare (no shared variant or metric) gives its reason instead."""
    ordered = sorted(runs, key=lambda r: r.started_at)
    base = load_run(ordered[0].id, lambda: store)
    out: list[Comparison | str] = []
    for run in ordered[1:]:
        try:
            out.append(compare_runs(base, load_run(run.id, lambda: store)))
        except VirtbenchError as exc:
            out.append(str(exc))
    return out


def _ratio(value: float, low: float, high: float) -> str:
    if not math.isfinite(value):
        return "–"
    interval = f" [{low:.4f}, {high:.4f}]" if math.isfinite(low) and math.isfinite(high) else ""
    return f"{value:.4f}{interval}"


def verdict_view(item: Comparison | str) -> dict[str, Any]:
    """One BASE → NEW comparison as the page shows it."""
    if isinstance(item, str):
        return {"error": item}
    rows = []
    for row in item.rows:
        r = row.result
        unit = row.metric.unit
        rows.append({
            "workload_id": row.workload_id, "metric": row.metric.name, "variant": row.variant,
            "better": better_text(row.metric.better), "n": f"{r.n_base} / {r.n_new}",
            "mean_base": fmt_value(r.mean_base, unit), "mean_new": fmt_value(r.mean_new, unit),
            "ratio": _ratio(r.ratio, r.ci_low, r.ci_high), "verdict": r.verdict,
            "more": r.more_repetitions,
        })
    return {"error": "", "base": item.base.id, "new": item.new.id,
            "equivalence_pct": item.equivalence_pct, "rows": rows,
            "differences": [d.as_dict() for d in item.differences]}


def explanation_views(store: Store, items: list[Comparison | str]) -> list[list[dict[str, Any]]]:
    """Per comparison, its explanations as the page shows them (report.explain_html): [] for a
    pair decide could not compare or whose runs have no profiles."""
    out: list[list[dict[str, Any]]] = []
    for index, item in enumerate(items, 1):
        if isinstance(item, str):
            out.append([])
            continue
        counters = compare_runs(item.base, item.new, diagnostics=True)
        explained, _none = explain_runs(lambda: store, item.base, item.new, counters=counters)
        out.append(compare_context(explained, prefix=f"flame-{index}"))
    return out


def comparison_rows(items: list[Comparison | str]) -> list[dict[str, Any]]:
    """Every verdict row of every pair, flat (the CSV download)."""
    return [{"base": c.base.id, "new": c.new.id, **row.as_dict()}
            for c in items if not isinstance(c, str) for row in c.rows]


def history(store: Store, experiment: str, host: str | None, any_spec: bool,
            any_host: bool) -> History:
    return build_history(store, experiment or None, host or None, any_spec=any_spec,
                         any_host=any_host)


def history_view(result: History, chart_budget: int = CHART_BUDGET) -> dict[str, Any]:
    """The history page: per series its chart (our own SVG) and change points. Charts are
    drawn for the first ``chart_budget`` series only (the report's budget): an experiment
    of hundreds of variant · metric series would keep the server drawing for a minute;
    every series keeps its table of change points."""
    series = []
    for index, s in enumerate(result.series):
        svg = history_chart(s) if index < chart_budget else None
        series.append({
            "title": f"{s.workload_id} · {s.metric.name} · {s.variant}", "unit": s.metric.unit,
            "direction": s.metric.direction_text, "runs": len(s.points),
            # our own SVG: trusted markup, its styles as attributes the page's CSP allows
            "chart": Markup(presentation_attributes(svg)) if svg else None,
            "latest": fmt_value(s.points[-1].mean, s.metric.unit) if s.points else "–",
            "steps": [{"before": st.last_before, "after": st.first_after,
                       "change": f"{st.change_pct:+.1f} %",
                       "ratio": _ratio(st.ratio, st.ci_low, st.ci_high),
                       "p": f"{st.p_value:.2g}", "runs": f"{st.runs_before} | {st.runs_after}"}
                      for st in s.steps]})
    return {"experiment": result.experiment, "host": result.host or "any host",
            "runs": result.run_ids, "excluded": result.excluded, "series": series,
            "charts_left_out": max(0, len(series) - chart_budget)}


def history_rows(result: History) -> list[dict[str, Any]]:
    """One row per series and run (the CSV download)."""
    return [{"variant": s.variant, "workload_id": s.workload_id, "metric": s.metric.name,
             "unit": s.metric.unit, "run_id": p.run_id, "started_at": p.started_at, "n": p.n,
             "mean": p.mean, "ci_low": p.ci_low, "ci_high": p.ci_high,
             "change_point_before": any(st.first_after == p.run_id for st in s.steps)}
            for s in result.series for p in s.points]
