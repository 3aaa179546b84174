"""The self-contained HTML report: one file, inline CSS and SVG charts, no external resources.

Everything shown comes from the Analysis; tables reuse report/tables.py records and
report/formatting.py, charts come from report/charts.py (drawn here or in chart workers:
report/chart_pool.py), text is escaped by jinja2.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

import virtbench
from virtbench import safetext
from virtbench.analysis import Analysis, MetricRow
from virtbench.analysis.derived_views import (
    FamilyReady,
    KnobGrid,
    MetricView,
    SeriesGroup,
    anchor,
    facts_views,
    knob_grid,
    knob_grid_of,
    metric_views,
    series_groups,
)
from virtbench.model import PROFILE_PREFIX, Metric
from virtbench.report import chart_limits
from virtbench.report.chart_pool import ChartJobs, ChartPool
from virtbench.report.flamegraph import search_script
from virtbench.report.formatting import fmt_no_ci, fmt_p, fmt_ratio, fmt_value
from virtbench.report.key_results import key_metrics
from virtbench.report.sections import Section
from virtbench.report.tables import row_record
from virtbench.report.template_cache import bytecode_cache

if TYPE_CHECKING:
    from virtbench.decide.explain import WorkloadExplanation

__all__ = ["CHART_BUDGET", "chart_prefetch", "render_html", "report_context", "report_environment"]

CHART_BUDGET = 60
"""Most per-metric charts drawn; beyond it only primary metrics get charts (tables stay
complete), which keeps a report of a tool with dozens of metrics (bonnie++) fast."""


def report_environment(*loaders: jinja2.BaseLoader) -> jinja2.Environment:
    """The report's jinja2 environment; ``loaders`` come first (serve's pages), then the
    report's own templates, whose partials (report_body, report_toc) every page shares."""
    options: dict[str, Any] = {
        "autoescape": True,  # every value from the store is escaped; charts are Markup
        "trim_blocks": True,
        "lstrip_blocks": True,
        "undefined": jinja2.StrictUndefined,
        "finalize": _shown,
    }
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([*loaders,
                                    jinja2.PackageLoader("virtbench.report", "templates")]),
        bytecode_cache=bytecode_cache(options),  # compiled once, not by every command
        **options,
    )
    env.filters["anchor"] = lambda text: anchor(str(text))
    return env


def _shown(value: Any) -> Any:
    """Every ``{{ }}`` of a page: stored text with its control and bidi characters shown as
    escapes (safetext.visible; a U+202E in a variant name would reverse what the reader sees),
    then HTML-escaped. Markup (charts, rendered parts) is already safe HTML."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return safetext.visible(value)
    return value


def _time(epoch: float | None) -> str:
    if epoch is None or not math.isfinite(epoch):
        return "–"
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(start: float | None, end: float | None) -> str:
    if start is None or end is None or not math.isfinite(end - start):
        return "–"
    seconds = round(end - start)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def _mark(row: MetricRow) -> tuple[str, str]:
    """(symbol, css class) of the Holm-corrected verdict against the baseline."""
    if row.p_holm is None or math.isnan(row.p_holm):
        return "", ""
    if not row.significant:
        return "n.s.", "ns"
    ratio = row.speedup.ratio if row.speedup else math.nan
    if ratio > 1:
        return "▲ better", "up"
    if ratio < 1:
        return "▼ worse", "down"
    return "*", "ns"


def _table_row(row: MetricRow, baseline: str, best: str | None) -> dict[str, Any]:
    rec = row_record(row)
    unit = rec["unit"]
    symbol, css = _mark(row)
    ci = (f"{fmt_value(rec['ci_low'], unit)} – {fmt_value(rec['ci_high'], unit)}"
          if rec["ci_low"] is not None and rec["ci_high"] is not None
          else fmt_no_ci(rec["n"], row.summary.minimum, row.summary.maximum, unit)
          if row.summary and row.summary.no_ci_reason else "–")
    return {
        "variant": rec["variant"],
        "baseline": rec["variant"] == baseline,
        "best": rec["variant"] == best,
        "n": rec["n"],
        "unmeasured": ", ".join(f"{count} {status}" for status, count
                                in sorted(row.unmeasured.items())),
        "mean": fmt_value(rec["mean"], unit),
        "ci": ci,
        "median": fmt_value(rec["median"], unit),
        "sd": fmt_value(rec["sd"], unit),
        "cv": "–" if rec["cv"] is None else f"{rec['cv']:.1%}",
        "speedup": "1 (baseline)" if rec["variant"] == baseline and rec["n"] else
        fmt_ratio(rec["speedup"], rec["speedup_ci_low"], rec["speedup_ci_high"]),
        "speedup_method": rec["speedup_method"] or "",
        "test": rec["test"] or "–",
        "p_value": fmt_p(rec["p_value"]),
        "p_holm": fmt_p(rec["p_holm"]),
        "mark": symbol,
        "mark_class": css,
        "outliers": rec["outliers"],
        "noisy": row.noisy,
    }


def _better_cell(metric: Metric) -> str:
    """The 'better' column: lower, higher, or 'no direction' (a count describing the trial)."""
    return metric.better.value if metric.better is not None else "no direction"


def _callout(view: MetricView, baseline: str) -> dict[str, str] | None:
    if view.best is None:
        return None
    name, mean = view.best
    row = view.row_of(name)
    speedup = "–"
    verdict = ""
    if name == baseline:
        verdict = "the baseline itself is the best configuration"
    elif row is not None and row.speedup is not None:
        s = row.speedup
        speedup = fmt_ratio(s.ratio, s.ci_low, s.ci_high)
        verdict = ("significantly better than the baseline (Holm)" if row.significant and
                   s.ratio > 1 else "not significantly different from the baseline"
                   if row.significant is False else "")
    return {"variant": name, "mean": fmt_value(mean, view.metric.unit), "speedup": speedup,
            "verdict": verdict, "explain": ""}


def _effects(view: MetricView) -> list[dict[str, str]]:
    return [{"factor": e.factor, "speedup": fmt_ratio(e.speedup, e.ci_low, e.ci_high),
             "pairs": str(e.pairs),
             "verdict": ("helps" if e.ci_low > 1 else "hurts" if e.ci_high < 1
                         else "no clear effect") if math.isfinite(e.ci_low)
             and math.isfinite(e.ci_high) else "–"}
            for e in sorted(view.effects, key=lambda e: e.factor)]


def _metric_charts(view: MetricView, baseline: str, factor_knob: str | None,
                   confidence: float, grid: KnobGrid | None
                   ) -> list[tuple[str, tuple[Any, ...], str]]:
    """(chart, its arguments, caption) of each chart of a metric's section."""
    conf = f"{confidence:.0%}"
    charts: list[tuple[str, tuple[Any, ...], str]] = [
        ("mean", (view, baseline),
         f"Mean per configuration, best on top; error bars: {conf} CI; grey: the "
         "baseline, green: the best configuration."),
        ("speedup", (view,),
         f"Speedup over the baseline with its {conf} bootstrap CI; dashed line: 1 (no "
         "change); green/red: significantly better/worse after Holm, grey: not "
         "significant."),
        ("effects", (view, factor_knob),
         f"Main effect of each flag: geometric-mean speedup from enabling it over all "
         f"pairs of configurations that differ only in it, {conf} bootstrap CI; green: "
         "CI above 1, red: CI below 1.")]
    if grid is not None:
        per = (["host (run)"] if grid.per_run else []) + grid.line_knobs
        charts.append(("grid", (view, grid),
                       f"Mean against {grid.x_knob}; band: {conf} CI of the mean"
                       + (f"; one line per {' × '.join(per)}." if per else ".")))
    return charts


def _charts_per_section(grid: KnobGrid | None) -> int:
    """How many charts a metric's section has (_metric_charts)."""
    return 3 + (grid is not None)


def _every_section_charted(sections: int, grid: KnobGrid | None) -> bool:
    """Whether every metric's section gets its charts within CHART_BUDGET (else only the
    primary metrics' sections do)."""
    return sections * _charts_per_section(grid) <= CHART_BUDGET


def chart_prefetch(pool: ChartPool) -> Callable[[FamilyReady], None]:
    """For ``analyse(on_family=...)``: each family's metric charts sent to ``pool``'s workers
    as soon as the family is analysed, under the numbers the page gives them when every
    declared family has a section with charts (ChartPool.send redraws any that differ)."""
    grids: list[KnobGrid | None] = []  # one analysis's families share its variants

    def family(ready: FamilyReady) -> None:
        if not grids:
            grids.append(knob_grid_of(ready.variants))
        grid = grids[0]
        if not _every_section_charted(ready.families, grid):
            return
        per_section = _charts_per_section(grid)
        for offset, (chart, args, _caption) in enumerate(_metric_charts(
                ready.view, ready.baseline, ready.factor_knob, ready.confidence, grid)):
            pool.prefetch(ready.position * per_section + offset, chart, args)

    return family


def _metric_section(view: MetricView, analysis: Analysis, with_charts: bool,
                    grid: Any, jobs: ChartJobs) -> dict[str, Any]:
    best = view.best[0] if view.best else None
    figures: list[dict[str, Any]] = []
    if with_charts:
        for chart, args, caption in _metric_charts(view, analysis.baseline,
                                                   analysis.factor_knob, analysis.confidence,
                                                   grid):
            jobs.add(figures, chart, args, caption)
    compared = [r for r in view.rows if r.p_holm is not None and not math.isnan(r.p_holm)]
    return {
        "anchor": view.anchor,
        "workload_id": view.workload_id,
        "name": view.metric.name,
        "unit": view.metric.unit,
        "better": _better_cell(view.metric),
        "direction": view.metric.direction_text,
        "description": view.metric.description,
        "primary": view.metric.primary,
        "callout": _callout(view, analysis.baseline),
        "effects": _effects(view),
        "figures": figures,
        "charts_skipped": not with_charts,
        "rows": [_table_row(r, analysis.baseline, best) for r in view.rows],
        "compared": len(compared),
        "better_count": sum(1 for r in compared if r.significant and r.speedup
                            and r.speedup.ratio > 1),
        "worse_count": sum(1 for r in compared if r.significant and r.speedup
                           and r.speedup.ratio < 1),
        "has_unmeasured": any(r.unmeasured for r in view.rows),
    }


def _series_section(group: SeriesGroup, jobs: ChartJobs) -> dict[str, Any]:
    figures: list[dict[str, Any]] = []
    jobs.add(figures, "timeseries", (group,),
             "Value against time since the trial started; one colour per variant, one line "
             f"per repetition, at most {chart_limits.MAX_LINE_POINTS} points per line (each "
             "bucket's minimum and maximum kept).")
    if group.per_request:
        jobs.add(figures, "distribution", (group,),
                 "All repetitions of a variant pooled. Box: quartiles; whiskers: 5th–95th "
                 "percentile; ◆: mean. ECDF: fraction of values ≤ x.")
    return {
        "anchor": group.anchor, "title": group.title, "unit": group.unit,
        "description": group.description, "points": group.points,
        "per_request": group.per_request,
        "variants": [{"name": name, "repetitions": len(items),
                      "points": sum(len(s.values) for s in items)}
                     for name, items in group.by_variant.items()],
        "figures": figures,
    }


def _settings_text(settings: Any) -> str:
    if isinstance(settings, dict):
        return "; ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                         for k, v in settings.items()) or "–"
    return json.dumps(settings, default=str)


def _realisations(analysis: Analysis) -> list[dict[str, Any]]:
    order = {v.name: i for i, v in enumerate(analysis.variants)}
    names = {w[0]: w[1] for w in analysis.workloads}
    by_workload: dict[str, list[dict[str, Any]]] = {}
    for item in sorted(analysis.realisations,
                       key=lambda r: (str(r.get("workload_id", "")),
                                      order.get(str(r.get("variant", "")), len(order)))):
        wid = str(item.get("workload_id", ""))
        by_workload.setdefault(wid, []).append({
            "variant": str(item.get("variant", "")),
            "mechanism": str(item.get("mechanism", "")),
            "settings": _settings_text(item.get("settings", {})),
            "limitations": [str(x) for x in item.get("limitations", [])],
        })
    return [{"workload_id": wid, "workload": names.get(wid, wid), "entries": items}
            for wid, items in by_workload.items()]


def _runs(analysis: Analysis) -> list[dict[str, Any]]:
    out = []
    for run in analysis.runs:
        ok, failed = analysis.trial_counts.get(run.id, (0, 0))
        out.append({
            "id": run.id, "experiment": run.experiment, "description": run.description,
            "status": run.status, "stop_reason": run.stop_reason or "–", "host": run.host,
            "target": run.target, "baseline": run.baseline, "seed": run.seed,
            "started": _time(run.started_at), "ended": _time(run.ended_at),
            "duration": _duration(run.started_at, run.ended_at), "trials_ok": ok,
            "trials_failed": failed, "spec_path": run.spec_path,
            "imported_from": run.imported_from,
        })
    return out


def _variants(analysis: Analysis) -> list[dict[str, str]]:
    return [{"name": v.name, "knobs": json.dumps(v.knobs, sort_keys=True, default=str),
             "baseline": "yes" if v.is_baseline else ""} for v in analysis.variants]


def render_html(analysis: Analysis, lead: Sequence[Section] = (), *,
                sections: Sequence[Section],
                explain: Sequence[WorkloadExplanation] = (),
                chart_pool: ChartPool | None = None) -> str:
    """The report as one self-contained HTML document (UTF-8 text), with the study
    ``sections`` (``virtbench.plugins.build_sections``); ``lead`` sections (an assessment's
    findings) come first, right below the title; ``explain``: the run's profiles
    (decide.explain.explain_run), shown in an Explain section with flame graphs;
    ``chart_pool``: the workers that draw the charts (None: this process draws them)."""
    # compiled first: while the chart workers still draw, not after the page has its charts
    template = report_environment().get_template("report.html.j2")
    context = report_context(analysis, lead, sections=sections, explain=explain,
                             chart_pool=chart_pool)
    return template.render(**context)


def report_context(analysis: Analysis, lead: Sequence[Section] = (), *,
                   sections: Sequence[Section],
                   explain: Sequence[WorkloadExplanation] = (),
                   chart_pool: ChartPool | None = None) -> dict[str, Any]:
    """Everything the report templates show (charts drawn, by ``chart_pool``'s workers or,
    when None, here), for report.html.j2 or a partial."""
    jobs = ChartJobs(chart_pool)
    context = _context(analysis, lead, sections, jobs)
    jobs.draw()
    if not explain and any(row.metric.name.startswith(PROFILE_PREFIX)
                           for row in analysis.rows):
        context["explain_note"] = (
            "This run has perf counters (profile. metrics) but no profiles of its trials "
            "(profile.folded artifacts): there is nothing to explain with, no flame graph. "
            "The counters are in the result tables above.")
    if explain:
        from virtbench.report.explain_html import explain_anchor, explain_context

        context["explain"] = explain_context(analysis, explain)
        explained = {w.workload_id for w in explain}
        for section in context["sections"]:
            for metric in section["metrics"]:
                if metric["callout"] is not None and section["id"] in explained:
                    metric["callout"]["explain"] = explain_anchor(section["id"])
        context["flame_script"] = Markup(search_script())  # our own file, not stored text
    return context


def _context(analysis: Analysis, lead: Sequence[Section],
             study_sections: Sequence[Section], jobs: ChartJobs) -> dict[str, Any]:
    views = metric_views(analysis)
    grid = knob_grid(analysis)
    budget_ok = _every_section_charted(len(views), grid)
    sections: list[dict[str, Any]] = []
    for wid, name, params in analysis.workloads:
        metrics = [_metric_section(v, analysis, budget_ok or v.metric.primary, grid, jobs)
                   for v in views if v.workload_id == wid]
        sections.append({"id": wid, "name": name, "anchor": anchor("w", wid),
                         "params": json.dumps(params, indent=1, sort_keys=True, default=str),
                         "metrics": metrics})
    known = {w[0] for w in analysis.workloads}
    for wid in dict.fromkeys(v.workload_id for v in views if v.workload_id not in known):
        sections.append({"id": wid, "name": wid, "anchor": anchor("w", wid), "params": "{}",
                         "metrics": [_metric_section(v, analysis, budget_ok or v.metric.primary,
                                                     grid, jobs)
                                     for v in views if v.workload_id == wid]})
    keys = key_metrics(analysis, study_sections)
    by_pair = {(s["id"], m["name"]): {"workload_id": s["id"], **m}
               for s in sections for m in s["metrics"]}
    summary = [by_pair[(wid, m.name)] for wid, m in keys.lead if (wid, m.name) in by_pair]
    summary_folded = [by_pair[(wid, m.name)] for wid, m in keys.folded
                      if (wid, m.name) in by_pair]
    limitations = [(group["workload_id"], item["variant"], text)
                   for group in _realisations(analysis) for item in group["entries"]
                   for text in item["limitations"]]
    experiments = list(dict.fromkeys(r.experiment for r in analysis.runs))
    context: dict[str, Any] = {
        "title": " vs ".join(experiments) or "virtbench report",
        "description": analysis.runs[0].description if analysis.runs else "",
        "runs": _runs(analysis),
        "baseline": analysis.baseline,
        "confidence": f"{analysis.confidence:.0%}",
        "factor_knob": analysis.factor_knob,
        "grid": grid,
        "variants": _variants(analysis),
        "sections": sections,
        "summary": summary,
        "summary_folded": summary_folded,
        "series": [_series_section(g, jobs) for g in series_groups(analysis)],
        "study_sections": list(study_sections),
        "lead_sections": list(lead),
        "realisations": _realisations(analysis),
        "limitations": limitations,
        "failures": [{"variant": str(f.get("variant", "")),
                      "workload_id": str(f.get("workload_id", "")),
                      "repetition": f.get("repetition", ""), "error": str(f.get("error", ""))}
                     for f in analysis.failures],
        "facts": facts_views(analysis),
        "noise": analysis.noise.describe(),
        "preflight_failed": analysis.noise.failing_at_start(),
        "metric_defs": [{"workload_id": view.workload_id, "name": view.metric.name,
                         "unit": view.metric.unit, "better": _better_cell(view.metric),
                         "description": view.metric.description, "primary": view.metric.primary,
                         "anchor": view.anchor} for view in views]
        + [{"workload_id": wid, "name": m.name, "unit": m.unit, "better": _better_cell(m),
            "description": m.description, "primary": m.primary, "anchor": ""}
           for (wid, _name), m in analysis.metric_defs.items()
           if (wid, m.name) not in {(v.workload_id, v.metric.name) for v in views}],
        "generated": _time(_dt.datetime.now(_dt.UTC).timestamp()),
        "version": virtbench.__version__,
        "max_bars": chart_limits.MAX_BARS,
        "max_line_points": chart_limits.MAX_LINE_POINTS,
        "explain": [],
        "explain_note": "",
        "flame_script": "",
    }
    return context
