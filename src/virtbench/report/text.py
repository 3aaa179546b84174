"""Terminal (rich), CSV, Markdown and JSON renderings of an Analysis."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from virtbench import safetext
from virtbench.analysis import Analysis, MetricRow
from virtbench.model import Metric, better_text, direction_text, parse_better
from virtbench.report.fit import Identity, fit_tables, identity_of
from virtbench.report.formatting import fmt_no_ci, fmt_num, fmt_p, fmt_ratio, fmt_value
from virtbench.report.key_results import key_metrics
from virtbench.report.sections import Section
from virtbench.report.tables import COLUMNS, table_records

__all__ = ["metric_tables", "render_csv", "render_json", "render_markdown", "render_terminal",
           "section_tables"]


def _header(analysis: Analysis) -> list[str]:
    lines = []
    for run in analysis.runs:
        lines.append(f"run {run.id}  experiment {run.experiment}  status {run.status}"
                     f"  host {run.host}  target {run.target}")
        if run.stop_reason:
            lines.append(f"  stopped: {run.stop_reason}")
        ok, failed = analysis.trial_counts.get(run.id, (0, 0))
        lines.append(f"  trials: {ok} measured, {failed} failed")
    noise = analysis.noise.describe()
    if noise:
        lines.append(f"  {noise}; column n shows them as (k!)")
    lines += [f"  preflight failed before run {item}" for item in analysis.noise.failing_at_start()]
    if analysis.compare_knob:
        lines.append(f"each variant is compared with the one whose {analysis.compare_knob} is "
                     f"that of {analysis.baseline} (column 'vs'); CIs are "
                     f"{analysis.confidence:.0%} (±CI 'n<3': too few values for one); speedup "
                     "> 1 means better; p Holm-corrected "
                     "per metric")
    else:
        lines.append(f"baseline: {analysis.baseline}; CIs are {analysis.confidence:.0%} and stay "
                     "in the metric's domain (±CI 'n<3': too few values for one); "
                     "speedup > 1 means better than the baseline; p-values Holm-corrected per "
                     "metric")
    return lines


def render_terminal(analysis: Analysis, console: Console | None = None,
                    details: bool = False, *, sections: Sequence[Section],
                    all_metrics: bool = False) -> None:
    """The result tables of the key metrics (report/key_results.py: primary and study
    metrics) and one line naming the others, then the study ``sections``
    (``virtbench.plugins.build_sections``); ``all_metrics`` prints every metric's tables;
    ``details`` adds per-repetition tables, first-vs-rest and notes.

    Every name, reason, error and note comes from the store (an import may carry anything):
    it is printed as :func:`safetext.text` or :func:`safetext.markup`, never as markup."""
    console = console or safetext.console()
    for line in _header(analysis):
        console.print(safetext.text(line), highlight=False)
    identity = identity_of(analysis.variants)
    keys = key_metrics(analysis, sections)
    shown = keys.lead + keys.folded if all_metrics else keys.lead
    for wid, metric in shown:
        rows = [r for r in analysis.rows
                if r.workload_id == wid and r.metric.name == metric.name]
        if rows:
            _render_metric(analysis, console, rows, metric, identity)
            if details:
                _details(analysis, console, wid, metric, identity)
    if keys.folded and not all_metrics:
        console.print(safetext.text(f"\n{len(keys.folded)} more metrics (report --all shows "
                                    f"their tables): {', '.join(keys.folded_names())}"),
                      highlight=False)
    for section in sections:
        _render_section(console, section)
    _render_limits_and_failures(analysis, console)


def _render_metric(analysis: Analysis, console: Console, rows: list[MetricRow], metric: Metric,
                   identity: Identity) -> None:
    """A metric's tables, its factors' main effects and its best configuration."""
    wid = rows[0].workload_id
    for table in metric_tables(analysis, console.width, rows, metric, identity):
        console.print(table)
    effects = analysis.main_effects.get((wid, metric.name))
    if effects:
        lines = [f"  {e.factor}: ×{fmt_num(e.speedup, 3)} [{fmt_num(e.ci_low, 3)}, "
                 f"{fmt_num(e.ci_high, 3)}] over {e.pairs} pairs" for e in effects]
        console.print(Group(safetext.text(f"main effect of each "
                                          f"{analysis.factor_knob} flag on "
                                          f"{metric.name} (speedup with vs without):"),
                            *map(safetext.text, lines)))
    best = analysis.best.get((wid, metric.name), (None, 0))[0]
    if best:
        console.print(safetext.text(f"best configuration for {metric.name}: {best}"),
                      highlight=False)


def _render_section(console: Console, section: Section) -> None:
    # Section text is data, not rich markup: a "[x]" in it must print as written.
    console.print(Text("\n") + safetext.text(section.title, style="bold"))
    for paragraph in section.paragraphs:
        console.print(safetext.text(paragraph))
    if section.columns:
        for table in section_tables(section.columns, section.rows, console.width):
            console.print(table)
    for warning in section.warnings:
        console.print(Text("warning: ", style="yellow") + safetext.text(warning))


def _render_limits_and_failures(analysis: Analysis, console: Console) -> None:
    """What the variants could not express, and the first failed trials."""
    wl_names = {w[0]: w[1] for w in analysis.workloads}
    limits = [(r["variant"], r["workload_id"], item) for r in analysis.realisations
              for item in r["limitations"]]
    if limits:
        console.print("\nwhat the variants could not express:")
        for variant, wid, item in sorted(limits):
            console.print(safetext.text(f"  {variant} / {wl_names.get(wid, wid)}: {item}"),
                          highlight=False)
    if analysis.failures:
        console.print(f"\n{len(analysis.failures)} failed trials (kept in the store):")
        for f in analysis.failures[:10]:
            console.print(safetext.text(f"  {f['variant']} / {f['workload_id']} "
                                        f"#{f['repetition']}: {f['error']}"), highlight=False)


# In order of importance: the first KEPT_COLUMNS always stay beside the variant; the rest move
# to a second table when the terminal is too narrow.
_KEPT_COLUMNS = 4


def metric_tables(analysis: Analysis, width: int, rows: list[MetricRow], metric: Metric,
                   identity: Identity) -> list[Table]:
    best = analysis.best.get((rows[0].workload_id, metric.name), (None, 0))[0]
    columns = ["n", "mean", "±CI", "speedup [CI]", "p Holm", "median", "CV", "out"]
    if analysis.compare_knob:
        columns.insert(4, "vs")
    ident_cells, cells = [], []
    for r in rows:
        s = r.summary
        is_base = (r.variant == analysis.baseline if not analysis.compare_knob
                   else r.reference is None)
        style = "bold" if r.variant == best else ""
        names = identity.cells.get(r.variant, [r.variant])
        ident = [safetext.text(c, style=style) for c in names]
        if is_base and not analysis.compare_knob:  # with compare_by, column vs says "base"
            ident[-1].append(" (base)")
        ident_cells.append(ident)
        unmeasured = ", ".join(f"{v} {k}" for k, v in r.unmeasured.items())
        cells.append({
            "n": str(s.n if s else 0) + (f" (+{unmeasured})" if unmeasured else "")
            + (f" ({r.noisy}!)" if r.noisy else ""),
            "mean": fmt_value(s.mean if s else None, metric.unit),
            "±CI": f"±{s.ci_half_width_rel:.1%}" if s and math.isfinite(s.ci_half_width_rel)
            else "n<3" if s and s.no_ci_reason else "–",
            "median": fmt_value(s.median if s else None, metric.unit),
            "CV": f"{s.cv:.1%}" if s and s.cv == s.cv else "–",
            "vs": identity.short_name(r.reference) if r.reference else "base",
            "speedup [CI]": fmt_ratio(r.speedup.ratio, r.speedup.ci_low,
                                      r.speedup.ci_high) if r.speedup else "–",
            "p Holm": fmt_p(r.p_holm) + ("*" if r.significant else ""),
            "out": str(r.outliers)})
    return fit_tables(width, identity.columns, ident_cells, columns, cells, _KEPT_COLUMNS,
                      title=f"{rows[0].workload_id} · {metric.name} ({metric.unit}, "
                            f"{metric.direction_text})", title_justify="left",
                      caption=metric.description, caption_justify="left")


def section_tables(columns: list[str], rows: list[list[str]], width: int) -> list[Table]:
    """A study section's table fitted to ``width``: its leading label columns (variant, metric)
    identify a row and are never cut; the rest moves to continued tables when too wide."""
    labels = 1
    while (labels < min(2, len(columns) - 1)
           and all(not row[labels][:1].isdigit() and row[labels][:1] not in "+-–" for row in rows)):
        labels += 1
    ident = [[safetext.text(c) for c in row[:labels]] for row in rows]
    cells = [dict(zip(columns[labels:], row[labels:], strict=True)) for row in rows]
    return fit_tables(width, columns[:labels], ident, columns[labels:], cells, 1)


TERMINAL_MAX_REPETITIONS = 12  # wider tables do not fit a terminal; the HTML report has them


def _details(analysis: Analysis, console: Console, wid: str, metric: Metric,
             identity: Identity) -> None:
    per_rep = analysis.per_repetition.get((wid, metric.name))
    reps_shown = max((len(v) for v in per_rep.values()), default=0) if per_rep else 0
    if per_rep and reps_shown <= TERMINAL_MAX_REPETITIONS:
        reps = sorted({rep for values in per_rep.values() for rep, _v in values})
        columns = ["mean", *(f"rep {r + 1}" for r in reps)]
        if not all(v in identity.cells for v in per_rep):
            identity = Identity(["variant"], {v: [v] for v in per_rep})
        ident, cells = [], []
        for variant, values in per_rep.items():
            by_rep = dict(values)
            ident.append([safetext.text(c) for c in identity.cells[variant]])
            cells.append({"mean": fmt_value(sum(by_rep.values()) / len(by_rep), metric.unit)}
                         | {f"rep {r + 1}": fmt_value(by_rep.get(r), metric.unit) for r in reps})
        for table in fit_tables(console.width, identity.columns, ident, columns, cells, 1,
                                title=f"{metric.name} per repetition (the studies' per-loop / "
                                      "per-run tables)", title_justify="left"):
            console.print(table)
    for item in analysis.first_vs_rest:
        if (item.workload_id, item.metric) == (wid, metric.name):
            rest = item.rest
            spread = (f"({fmt_no_ci(rest.n, rest.minimum, rest.maximum, metric.unit)})"
                      if rest.no_ci_reason else f"[{fmt_value(rest.ci_low, metric.unit)}, "
                      f"{fmt_value(rest.ci_high, metric.unit)}]")
            console.print(safetext.text(
                f"  {item.variant}: first repetition {fmt_value(item.first, metric.unit)}, "
                f"later ones {fmt_value(rest.mean, metric.unit)} {spread} (×{item.ratio:.3g})"),
                highlight=False)
    for (variant, workload_id), notes in analysis.notes.items():
        if workload_id == wid and notes and metric.primary:
            text = "; ".join(f"{k}: {' | '.join(v)}" for k, v in notes.items())
            console.print(safetext.text(f"  notes {variant}: {text}"), highlight=False)


def render_csv(analysis: Analysis) -> str:
    """The result table as CSV; formula-like cells neutralised (safetext.csv_document)."""
    return safetext.csv_document(COLUMNS, table_records(analysis), lineterminator="\n")


def render_markdown(analysis: Analysis, *, sections: Sequence[Section]) -> str:
    """The report as Markdown, with the study ``sections``. Every piece of stored text, and the
    plain-text paragraphs of the sections, goes through :func:`safetext.markdown_text`: shown as
    written, so a name cannot end a table cell, row or heading, nor open a tag, code span, link
    or mention."""
    md = safetext.markdown_text
    lines = [f"# {md(', '.join(r.experiment for r in analysis.runs))}", ""]
    lines += [f"- {md(line.strip())}" for line in _header(analysis)]
    current = None
    for rec in table_records(analysis):
        group = (rec["workload"], rec["metric"])
        if group != current:
            current = group
            lines += ["", f"## {md(rec['workload'])} · {md(rec['metric'])} ({md(rec['unit'])}, "
                      f"{direction_text(parse_better(rec['better'], rec['metric']))})", "",
                      "| variant | n | mean | 95 % CI | median | CV | speedup [95 % CI] "
                      "| p (Holm) | outliers |", "|---|---|---|---|---|---|---|---|---|"]
        unit = rec["unit"]
        ci = (f"{fmt_value(rec['ci_low'], unit)} – {fmt_value(rec['ci_high'], unit)}"
              if rec["ci_low"] is not None else rec["no_ci_reason"] or "–")
        lines.append(
            f"| {md(rec['variant'])} | {rec['n']}"
            f"{f' ({noisy}!)' if (noisy := rec['noisy_trials']) else ''} | "
            f"{md(fmt_value(rec['mean'], unit))} | {md(ci)} | "
            f"{md(fmt_value(rec['median'], unit))} | "
            f"{'–' if rec['cv'] is None else format(rec['cv'], '.1%')} | "
            f"{fmt_ratio(rec['speedup'], rec['speedup_ci_low'], rec['speedup_ci_high'])} | "
            f"{fmt_p(rec['p_holm'])} | {rec['outliers']} |")
    for section in sections:
        lines += ["", f"## {md(section.title)}", ""]
        lines += [f"{md(p)}\n" for p in section.paragraphs]
        if section.columns:
            lines += ["| " + " | ".join(map(md, section.columns)) + " |",
                      "|" + "---|" * len(section.columns)]
            lines += ["| " + " | ".join(map(md, cells)) + " |" for cells in section.rows]
        lines += [f"> warning: {md(w)}" for w in section.warnings]
    return "\n".join(lines) + "\n"


def render_json(analysis: Analysis, *, sections: Sequence[Section]) -> str:
    """Everything, every metric included: each metric's ``key`` says whether Key results
    leads with it (report/key_results.py); ``best`` has only metrics with a direction."""
    keys = key_metrics(analysis, sections)
    document: dict[str, Any] = {
        "runs": [{"id": r.id, "experiment": r.experiment, "status": r.status,
                  "stop_reason": r.stop_reason, "host": r.host, "target": r.target,
                  "started_at": r.started_at, "ended_at": r.ended_at} for r in analysis.runs],
        "baseline": analysis.baseline,
        "confidence": analysis.confidence,
        "variants": [{"name": v.name, "knobs": v.knobs, "baseline": v.is_baseline}
                     for v in analysis.variants],
        "metrics": {f"{wid}.{m.name}": {"unit": m.unit, "better": better_text(m.better),
                                        "description": m.description, "primary": m.primary,
                                        "key": keys.is_key(wid, m.name)}
                    for wid, m in keys.lead + keys.folded},
        "results": table_records(analysis),
        "main_effects": [
            {"workload": wid, "metric": metric, "factor": e.factor, "speedup": e.speedup,
             "ci_low": e.ci_low, "ci_high": e.ci_high, "pairs": e.pairs}
            for (wid, metric), effects in analysis.main_effects.items() for e in effects],
        "best": [{"workload": wid, "metric": metric, "variant": name, "mean": mean}
                 for (wid, metric), (name, mean) in analysis.best.items()],
        "realisations": analysis.realisations,
        "failures": analysis.failures,
        "noise": {"sampled_trials": analysis.noise.sampled,
                  "marked_trials": [{"variant": v, "workload": w, "repetition": rep,
                                     "why": why}
                                    for (v, w), items in analysis.noise.marked.items()
                                    for rep, why in items],
                  "preflight": [{"run_id": r, "phase": p, "checks": c}
                                for r, p, c in analysis.noise.preflight]},
        "sections": [dataclasses.asdict(s) for s in sections],
    }
    return safetext.dumps(document, indent=2)
