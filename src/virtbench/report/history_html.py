"""`history --format html`: one self-contained page, a chart per series with change points."""

from __future__ import annotations

import datetime as dt
import html
import itertools
import math

import matplotlib.dates as mdates
import numpy as np

from virtbench import safetext
from virtbench.decide.history import History, MetricHistory
from virtbench.report.charts import BAR_COLOUR, WORSE_COLOUR, _markup, _new, axis_scale, chart_style

__all__ = ["history_chart", "render_history_html"]

MAX_MARKERS = 300  # above this many runs the CI bars are left out (the line still shows all)


def _run_times(series: MetricHistory) -> np.ndarray:
    """Each run's start as a matplotlib date number (days, UTC): the x axis is time, so that
    runs a month apart stand further apart than runs an hour apart."""
    starts = [dt.datetime.fromtimestamp(p.started_at, dt.UTC) for p in series.points]
    return np.asarray(mdates.date2num(starts), dtype=float)


def history_chart(series: MetricHistory) -> str | None:
    """Run means with 95 % CIs against each run's start (UTC dates), change points as dashed
    lines halfway between the runs on either side, segment means from a segment's first run
    to its last."""
    if not series.points:
        return None
    means = np.array([p.mean for p in series.points])
    low = np.array([p.ci_low for p in series.points])
    high = np.array([p.ci_high for p in series.points])
    divisor, unit = axis_scale([float(v) for v in means], series.metric.unit)
    x = _run_times(series)
    fig = _new(7.0, 2.6, label_chars=7)
    ax = fig.add_subplot()
    ax.plot(x, means / divisor, color=BAR_COLOUR, linewidth=1.0, marker="o" if
            means.size <= MAX_MARKERS else None, markersize=3)
    if means.size <= MAX_MARKERS:
        ok = np.isfinite(low) & np.isfinite(high)
        ax.vlines(x[ok], low[ok] / divisor, high[ok] / divisor, color=BAR_COLOUR, alpha=0.45,
                  linewidth=1.0)
    bounds = [0, *[s.index for s in series.steps], means.size]
    for start, end in itertools.pairwise(bounds):
        level = float(np.mean(means[start:end])) / divisor
        ax.hlines(level, x[start], x[end - 1], color="#374151", linewidth=1.2)
    for step in series.steps:
        at = (x[step.index - 1] + x[step.index]) / 2
        ax.axvline(at, color=WORSE_COLOUR, linestyle="--", linewidth=1.0)
        ax.text(at, 0.97, f" {step.change_pct:+.1f} %", color=WORSE_COLOUR,
                transform=ax.get_xaxis_transform(), va="top", fontsize=8)
    locator = mdates.AutoDateLocator(tz=dt.UTC, minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=dt.UTC))
    if x[0] == x[-1]:  # one run, or all at one instant: a day around it
        ax.set_xlim(x[0] - 0.5, x[0] + 0.5)
    ax.set_xlabel("run start (UTC)")
    ax.set_ylabel(unit)
    title = safetext.visible(f"{series.workload_id} · {series.metric.name} · {series.variant}")
    ax.text(0.0, 1.025, title, transform=ax.transAxes, ha="left", va="bottom", fontsize=10)
    return _markup(fig, title)


def _esc(text: str) -> str:
    """Stored text in the page: control and bidi characters as escapes, then HTML-escaped."""
    return html.escape(safetext.visible(text))


def _cell(value: float, unit: str) -> str:
    from virtbench.report.formatting import fmt_value

    return "–" if math.isnan(value) else _esc(fmt_value(value, unit))


def render_history_html(history: History) -> str:
    parts = [f"<h1>History of {_esc(history.experiment)}</h1>",
             f"<p>{len(history.run_ids)} runs; experiment file "
             f"{_esc(history.experiment_hash or 'any')}; host "
             f"{_esc(history.host or 'any')}.</p>"]
    for why, count in history.excluded.items():
        parts.append(f"<p>Left out: {count} run(s), {_esc(why)}.</p>")
    with chart_style():
        for s in history.series:
            parts.append(f"<h2>{_esc(s.workload_id)} · {_esc(s.metric.name)} · "
                         f"{_esc(s.variant)}</h2>")
            chart = history_chart(s)
            if chart:
                parts.append(chart)
            if s.steps:
                rows = "".join(
                    f"<tr><td>{st.index + 1}</td><td>{_esc(st.last_before)}</td>"
                    f"<td>{_esc(st.first_after)}</td><td>{st.runs_before}</td>"
                    f"<td>{st.runs_after}</td><td>{st.change_pct:+.2f} % "
                    f"[{100 * (st.ci_low - 1):+.2f}, {100 * (st.ci_high - 1):+.2f}]</td>"
                    f"<td>{st.p_value:.1g}</td></tr>" for st in s.steps)
                parts.append("<table><tr><th>at run #</th><th>last run before</th>"
                             "<th>first run after (id)</th><th>runs before</th>"
                             "<th>runs after</th><th>step, 95 % CI</th><th>p</th></tr>"
                             f"{rows}</table>")
            else:
                parts.append("<p>No change point.</p>")
            last = s.points[-1]
            parts.append(f"<p>Latest run {_esc(last.run_id)} "
                         f"({dt.datetime.fromtimestamp(last.started_at):%Y-%m-%d %H:%M}): "
                         f"{_cell(last.mean, s.metric.unit)} "
                         f"[{_cell(last.ci_low, s.metric.unit)}, "
                         f"{_cell(last.ci_high, s.metric.unit)}]</p>")
    style = ("body{font-family:sans-serif;max-width:60rem;margin:2rem auto;color:#111}"
             "svg.chart,img.chart{width:100%;height:auto}table{border-collapse:collapse}"
             "td,th{border-bottom:1px solid #ddd;padding:.2rem .5rem;text-align:left}")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>virtbench history</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")
