"""Charts of the HTML report, drawn with matplotlib (Agg, no pyplot state) into inline SVG.

Each function takes views of an Analysis (virtbench.analysis.derived_views) and returns the markup
of one figure, or None when there is nothing to draw. Charts read summaries, never raw scalar
samples; series are downsampled before they are drawn.
"""

from __future__ import annotations

import base64
import io
import itertools
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
from matplotlib import rc_context, rcParams
from matplotlib.backends.backend_mixed import MixedModeRenderer
from matplotlib.backends.backend_svg import RendererSVG
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from virtbench import safetext
from virtbench.analysis.derived_views import KnobGrid, MetricView, SeriesGroup, downsample_minmax
from virtbench.model import Better
from virtbench.report.chart_limits import MAX_BARS, MAX_LINE_POINTS
from virtbench.report.formatting import _PREFIXES, _SCALABLE, fmt_value

__all__ = [
    "MAX_BARS",
    "MAX_LINE_POINTS",
    "axis_scale",
    "chart_style",
    "distribution_chart",
    "draw",
    "draw_numbered",
    "effects_chart",
    "grid_chart",
    "grid_lines",
    "mean_chart",
    "speedup_chart",
    "timeseries_chart",
]

# Above this many bytes an SVG is replaced by a PNG (a time series with many lines).
MAX_SVG_BYTES = 400_000
QUANTILE_POINTS = 400  # points of an ECDF curve
VALUE_LABELS = 24  # bar charts with more rows leave values to the table (text is costly)

BASE_COLOUR = "#6b7280"
BAR_COLOUR = "#3b6fb6"
BEST_COLOUR = "#1b8a5a"
WORSE_COLOUR = "#c0392b"
NEUTRAL_COLOUR = "#9aa5b1"
PALETTE = ["#3b6fb6", "#e07b39", "#1b8a5a", "#c0392b", "#8e5ea2", "#8c6d31", "#d45d9e",
           "#4c9a9a", "#7f7f7f", "#b5a000"]

_RC: Any = {
    "svg.fonttype": "none",  # text stays text: smaller, searchable, crisp when printed
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e7eb",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "text.parse_math": False,  # variant names may contain '$'
    "svg.hashsalt": "vb",
    "path.simplify": True,
}

_counter = itertools.count()
_session = False
_text_sizes: dict[tuple[str, Any, int], tuple[float, float, float]] = {}
"""(width, height, descent) of each text drawn in this chart_style session, by (text, math
or not, its font properties' hash): the same rcParams throughout, so the same sizes."""


@contextmanager
def chart_style() -> Iterator[None]:
    """Apply the report's matplotlib style once for many charts (copying rcParams for every
    figure costs more than drawing a small one). Re-entrant."""
    global _session
    if _session:
        yield
        return
    with rc_context(_RC):
        _session = True
        try:
            yield
        finally:
            _session = False
            _text_sizes.clear()


class _TextsMeasuredOnce(RendererSVG):
    """The SVG renderer, measuring each distinct text (and font) once per chart_style
    session: the same variant names label every bar chart of a report, and FreeType's
    measuring was a tenth of the drawing time."""

    def __init__(self, width: float, height: float, out: io.StringIO, image_dpi: float
                 ) -> None:
        cast(Any, super()).__init__(width, height, out, image_dpi=image_dpi)  # untyped

    def get_text_width_height_descent(self, s: str, prop: Any, ismath: Any
                                      ) -> tuple[float, float, float]:
        key = (s, ismath, hash(prop))
        size = _text_sizes.get(key)
        if size is None:
            measure = cast(Any, super()).get_text_width_height_descent  # untyped
            size = _text_sizes[key] = measure(s, prop, ismath)
        return size


def _svg(fig: Figure) -> str:
    """The figure as SVG text: what ``fig.savefig(buf, format="svg")`` writes (the same bytes,
    drawn at 72 dpi as FigureCanvasSVG.print_svg draws it), through _TextsMeasuredOnce."""
    buf = io.StringIO()
    dpi = fig.dpi
    fig.dpi = 72
    try:
        width, height = fig.get_size_inches()
        mixed = cast(Any, MixedModeRenderer)  # untyped
        renderer = mixed(fig, width, height, dpi,
                         _TextsMeasuredOnce(width * 72, height * 72, buf, image_dpi=dpi))
        fig.draw(renderer)
        renderer.finalize()
    finally:
        fig.dpi = dpi
    return buf.getvalue()


def draw_numbered(chart: str, number: int, args: tuple[Any, ...]) -> str | None:
    """``chart(*args)`` (the name of one of this module's chart functions) with ``number`` in
    its ids' hash salt: charts drawn in several processes for one page (report/chart_pool.py)
    keep distinct ids by the number their page gives them."""
    global _counter
    _counter = itertools.count(number)
    return draw(chart, args)


def draw(chart: str, args: tuple[Any, ...]) -> str | None:
    """``chart(*args)``, by the name of one of this module's chart functions (_CHARTS)."""
    return cast(str | None, _CHARTS[chart](*args))


def _markup(fig: Figure, title: str) -> str:
    """Inline SVG (or a PNG data URI when the SVG is too large), scaled by CSS."""
    # A distinct hash salt per figure keeps clip-path and marker ids unique across the inline
    # SVGs of one page (ids of identical shapes would otherwise collide between figures).
    rcParams["svg.hashsalt"] = f"vb{next(_counter)}"
    svg = _svg(fig)
    if len(svg) > MAX_SVG_BYTES:
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=110)
        data = base64.b64encode(png.getvalue()).decode("ascii")
        return (f'<img class="chart" alt="{_attr(title)}" '
                f'src="data:image/png;base64,{data}">')
    svg = svg[svg.index("<svg"):]
    # The RDF metadata block (creator, date, licence URLs) is noise inside an HTML page.
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)
    # Drop fixed width/height so the viewBox scales to the column; label for screen readers.
    svg = re.sub(r'<svg([^>]*?)\swidth="[^"]*"\sheight="[^"]*"',
                 lambda m: f'<svg{m.group(1)} class="chart" role="img" '
                           f'aria-label="{_attr(title)}"', svg, count=1)
    return svg


def _attr(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def _new(width: float, height: float, label_chars: int = 0, title: bool = True,
         xlabel: bool = True) -> Figure:
    """A figure with fixed margins sized for the y tick labels (constrained layout would
    measure every text several times: most of a small chart's drawing time)."""
    fig = Figure(figsize=(width, height))
    left = min(0.55, (0.3 + 0.074 * label_chars) / width)
    bottom = min(0.4, (0.52 if xlabel else 0.3) / height)
    top = 1 - min(0.3, (0.34 if title else 0.12) / height)
    fig.subplots_adjust(left=left, right=0.97, bottom=bottom, top=top)
    return fig


def _log_x(ax: Any) -> None:
    ax.set_xscale("log")
    plain = FuncFormatter(lambda value, _pos: f"{value:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda _v, _p: ""))


def _categories(ax: Any, labels: Sequence[str]) -> None:
    """Row labels as plain texts left of the axes: a tick per row costs several artists
    (two marks, two labels, a grid line) and dominates the drawing time of a 30-row chart."""
    ax.set_yticks([])
    ax.set_ylim(-0.6, len(labels) - 0.4)
    where = ax.get_yaxis_transform(which="grid")  # x in axes fraction, y in data
    for i, label in enumerate(labels):  # stored names: control characters as escapes
        ax.text(-0.012, i, safetext.visible(label), transform=where, ha="right", va="center",
                fontsize=8.5)


def _title(ax: Any, text: str, from_figure_left: bool = False) -> None:
    """The chart's title above the axes; ``from_figure_left`` starts it at the figure's left
    edge rather than the axes' (bar charts, whose long row labels push the axes right)."""
    # A plain text: Axes.set_title re-measures every tick label to place itself.
    text = safetext.visible(text)
    if from_figure_left:
        where = blended_transform_factory(ax.figure.transFigure, ax.transAxes)
        ax.text(0.015, 1.025, text, transform=where, ha="left", va="bottom", fontsize=10)
        return
    ax.text(0.0, 1.025, text, transform=ax.transAxes, ha="left", va="bottom", fontsize=10)


def _chars(labels: Sequence[str]) -> int:
    return max((len(x) for x in labels), default=0)


def axis_scale(values: Sequence[float], unit: str) -> tuple[float, str]:
    """(divisor, unit label) so the largest |value| reads in 1..1000 with an SI prefix."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if unit not in _SCALABLE or not finite:
        return 1.0, unit
    top = max(finite)
    for factor, prefix in _PREFIXES:
        if top >= factor:
            return factor, prefix + unit
    return 1e-9, "n" + unit


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _short(label: str, limit: int = 34) -> str:
    """At most ``limit`` characters, cut in the middle: compared runs' variants
    ('kvm-host/neighbours=3') share long beginnings and differ at both ends. Control
    characters of a stored name show as escapes (safetext)."""
    label = safetext.visible(label)
    if len(label) <= limit:
        return label
    head = limit // 2
    return label[:head] + "…" + label[len(label) - (limit - 1 - head):]


def _bar_height(count: int) -> float:
    return min(max(2.0, 0.8 + 0.24 * count), 16.0)


def mean_chart(view: MetricView, baseline: str) -> str | None:
    """Horizontal bars of the mean per configuration with CI error bars, sorted best first
    (largest first for a metric without a direction); the baseline grey, the best
    configuration green."""
    rows = [r for r in view.rows if r.summary is not None and _finite(r.summary.mean)]
    if not rows:
        return None
    lower = view.metric.better is Better.LOWER
    rows.sort(key=lambda r: r.summary.mean if r.summary else 0.0, reverse=not lower)
    rows = rows[:MAX_BARS]
    rows.reverse()  # barh draws bottom-up: best ends on top
    means = [r.summary.mean for r in rows if r.summary]
    lows = [r.summary.ci_low for r in rows if r.summary]
    highs = [r.summary.ci_high for r in rows if r.summary]
    div, unit = axis_scale([*means, *highs], view.metric.unit)
    best = view.best[0] if view.best else None
    colours = [BASE_COLOUR if r.variant == baseline else BEST_COLOUR if r.variant == best
               else BAR_COLOUR for r in rows]
    # max(0, ...): an interval inside the domain (log scale) need not be centred on the mean
    err = np.array([[max(0.0, m - lo) if _finite(lo) else 0.0
                     for m, lo in zip(means, lows, strict=True)],
                    [max(0.0, hi - m) if _finite(hi) else 0.0
                     for m, hi in zip(means, highs, strict=True)]])
    with chart_style():
        fig = _new(6.4, _bar_height(len(rows)), _chars([_short(r.variant) for r in rows]))
        ax = fig.add_subplot()
        y = np.arange(len(rows))
        ax.barh(y, np.array(means) / div, xerr=err / div, color=colours, height=0.7,
                error_kw={"ecolor": "#111827", "elinewidth": 0.9, "capsize": 2.5})
        _categories(ax, [_short(r.variant) for r in rows])
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(f"mean {view.metric.name} ({unit}) · {view.metric.direction_text}"
                      if unit else f"mean {view.metric.name}")
        top = max((m + e for m, e in zip(means, err[1], strict=True)), default=0.0)
        for yi, (m, e) in enumerate(zip(means, err[1], strict=True)):
            if len(rows) > VALUE_LABELS:
                break
            ax.text((m + e) / div + top / div * 0.01, yi, fmt_value(m, view.metric.unit, 3),
                    va="center", fontsize=7.5, color="#374151")
        ax.set_xlim(right=top / div * 1.18 if top > 0 else None)
        _title(ax, f"{view.workload_id} · {view.metric.name}: mean with "
                     f"{_conf(view)} CI", from_figure_left=True)
        return _markup(fig, f"mean {view.metric.name} per configuration")


def _conf(view: MetricView) -> str:
    for r in view.rows:
        if r.summary:
            return f"{r.summary.confidence:.0%}"
    return "95%"


def speedup_chart(view: MetricView) -> str | None:
    """Speedup over the baseline per configuration with its bootstrap CI; a line at 1.
    Green/red when significantly better/worse after Holm, grey otherwise."""
    rows = [r for r in view.rows if r.speedup is not None and _finite(r.speedup.ratio)]
    if not rows:
        return None
    rows.sort(key=lambda r: r.speedup.ratio if r.speedup else 0.0)
    rows = rows[-MAX_BARS:]
    ratios = [r.speedup.ratio for r in rows if r.speedup]
    lows = [r.speedup.ci_low if r.speedup and _finite(r.speedup.ci_low) else ratio
            for r, ratio in zip(rows, ratios, strict=True)]
    highs = [r.speedup.ci_high if r.speedup and _finite(r.speedup.ci_high) else ratio
             for r, ratio in zip(rows, ratios, strict=True)]
    colours = [NEUTRAL_COLOUR if not r.significant else
               BEST_COLOUR if ratio > 1 else WORSE_COLOUR
               for r, ratio in zip(rows, ratios, strict=True)]
    with chart_style():
        fig = _new(6.4, _bar_height(len(rows)), _chars([_short(r.variant) for r in rows]))
        ax = fig.add_subplot()
        y = np.arange(len(rows))
        err = np.array([[max(r - lo, 0.0) for r, lo in zip(ratios, lows, strict=True)],
                        [max(hi - r, 0.0) for r, hi in zip(ratios, highs, strict=True)]])
        ax.errorbar(ratios, y, xerr=err, fmt="none", ecolor="#111827", elinewidth=0.9,
                    capsize=2.5, zorder=2)
        ax.scatter(ratios, y, c=colours, s=28, zorder=3, edgecolors="white", linewidths=0.5)
        ax.axvline(1.0, color="#111827", linewidth=0.9, linestyle="--", zorder=1)
        span = max([*highs, 1.0]) / max(min([*lows, 1.0]), 1e-12)
        if span > 20 and min(lows) > 0:
            _log_x(ax)
        _categories(ax, [_short(r.variant) for r in rows])
        ax.grid(axis="y", visible=False)
        for yi, ratio in enumerate(ratios):
            if len(rows) > VALUE_LABELS:
                break
            ax.annotate(f"{ratio:.3g}×", (ratio, yi), xytext=(4, 4), textcoords="offset points",
                        fontsize=7.5, color="#374151")
        if ax.get_xscale() == "linear":
            low, high = ax.get_xlim()
            ax.set_xlim(low, high + (high - low) * 0.08)
        ax.set_xlabel("speedup over the baseline (> 1: better)")
        _title(ax, f"{view.workload_id} · {view.metric.name}: speedup with {_conf(view)} CI",
               from_figure_left=True)
        return _markup(fig, f"speedup of {view.metric.name} per configuration")


def effects_chart(view: MetricView, factor_knob: str | None) -> str | None:
    """Main effect of each flag (geometric-mean speedup with vs without it) with its CI."""
    effects = [e for e in view.effects if _finite(e.speedup)]
    if not effects:
        return None
    effects.sort(key=lambda e: e.speedup)
    with chart_style():
        fig = _new(6.4, _bar_height(len(effects)) + 0.3,
                   _chars([_short(e.factor) for e in effects]))
        ax = fig.add_subplot()
        y = np.arange(len(effects))
        values = [e.speedup for e in effects]
        err = np.array([[e.speedup - e.ci_low if _finite(e.ci_low) else 0.0 for e in effects],
                        [e.ci_high - e.speedup if _finite(e.ci_high) else 0.0 for e in effects]])
        colours = [BEST_COLOUR if _finite(e.ci_low) and e.ci_low > 1 else
                   WORSE_COLOUR if _finite(e.ci_high) and e.ci_high < 1 else NEUTRAL_COLOUR
                   for e in effects]
        ax.barh(y, [v - 1.0 for v in values], left=1.0, xerr=err, color=colours, height=0.6,
                error_kw={"ecolor": "#111827", "elinewidth": 0.9, "capsize": 2.5})
        ax.axvline(1.0, color="#111827", linewidth=0.9)
        _categories(ax, [_short(e.factor) for e in effects])
        ax.grid(axis="y", visible=False)
        for yi, e in enumerate(effects):
            ax.annotate(f"{e.speedup:.3g}× ({e.pairs} pairs)", (max(e.speedup, 1.0), yi),
                        xytext=(4, 5), textcoords="offset points", fontsize=7.5,
                        color="#374151")
        low, high = ax.get_xlim()
        ax.set_xlim(low, high + (high - low) * 0.16)
        ax.set_xlabel("speedup from enabling the flag (geometric mean over pairs)")
        knob = f"{factor_knob} " if factor_knob else ""
        _title(ax, f"{view.workload_id} · {view.metric.name}: main effect of each {knob}flag",
               from_figure_left=True)
        return _markup(fig, f"main effects on {view.metric.name}")


GridPoint = tuple[float, float, float, float]
"""(x, mean, CI low, CI high) in the metric's unit."""


def grid_lines(view: MetricView, grid: KnobGrid) -> list[tuple[str, list[GridPoint]]]:
    """What grid_chart draws: (legend label, points sorted by x) per line that has data —
    one line per value of the other knobs, and per run (host) when runs are compared."""
    lines = []
    for line in grid.lines:
        pts = []
        for x, variant in line.points:
            row = view.row_of(variant)
            if row is not None and row.summary is not None and _finite(row.summary.mean):
                pts.append((x, row.summary.mean, row.summary.ci_low, row.summary.ci_high))
        if pts:
            lines.append((line.label, pts))
    return lines


def grid_chart(view: MetricView, grid: KnobGrid) -> str | None:
    """The metric's mean against the grid's numeric knob, one line per value of the other
    knobs (and per run when runs are compared), with a CI band."""
    lines = grid_lines(view, grid)
    if not any(len(p) >= 2 for _, p in lines):
        return None
    div, unit = axis_scale([p[3] if _finite(p[3]) else p[1] for _, pts in lines for p in pts],
                           view.metric.unit)
    with chart_style():
        fig = _new(6.4, 3.4, 7)
        ax = fig.add_subplot()
        for i, (label, pts) in enumerate(lines):
            colour = PALETTE[i % len(PALETTE)]
            xs = np.array([p[0] for p in pts])
            ys = np.array([p[1] for p in pts]) / div
            lo = np.array([p[2] if _finite(p[2]) else np.nan for p in pts]) / div
            hi = np.array([p[3] if _finite(p[3]) else np.nan for p in pts]) / div
            ax.plot(xs, ys, marker="o", markersize=3.5, color=colour, linewidth=1.4,
                    label=_short(label or view.metric.name, 40))
            ax.fill_between(xs, lo, hi, color=colour, alpha=0.18, linewidth=0)
        ax.set_xlabel(grid.x_knob)
        if all(float(p[0]).is_integer() for _, pts in lines for p in pts):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.5 ticks
        ax.set_ylabel(f"{view.metric.name} ({unit})" if unit else view.metric.name)
        if len(lines) > 1 or lines[0][0]:
            ax.legend(loc="best", fontsize=7)
        _title(ax, f"{view.workload_id} · {view.metric.name} vs {grid.x_knob} "
                     f"(mean, {_conf(view)} CI band)")
        return _markup(fig, f"{view.metric.name} against {grid.x_knob}")


def timeseries_chart(group: SeriesGroup) -> str | None:
    """Value against time, one colour per variant, one line per repetition (downsampled to
    MAX_LINE_POINTS points per line, keeping each bucket's extremes)."""
    if not group.by_variant:
        return None
    drawn: list[tuple[int, str, Any, Any]] = []
    for i, (variant, items) in enumerate(group.by_variant.items()):
        for item in items:
            if len(item.values):
                t, v = downsample_minmax(item.t, item.values, MAX_LINE_POINTS)
                drawn.append((i, variant, t, v))
    if not drawn:
        return None
    div, unit = axis_scale([float(np.nanmax(np.abs(v))) for *_, v in drawn], group.unit)
    with chart_style():
        fig = _new(6.8, 3.4, 7)
        ax = fig.add_subplot()
        many = group.per_request
        for i, _variant, t, v in drawn:
            colour = PALETTE[i % len(PALETTE)]
            if many:
                ax.plot(t, v / div, linestyle="", marker=".", markersize=1.2, alpha=0.35,
                        color=colour, rasterized=False)
            else:
                ax.plot(t, v / div, color=colour, linewidth=1.1, alpha=0.8, marker="o",
                        markersize=2.2)
        ax.legend(handles=[Line2D([], [], color=PALETTE[i % len(PALETTE)],
                                  label=f"{_short(name, 30)} ({len(items)} rep.)")
                           for i, (name, items) in enumerate(group.by_variant.items())],
                  loc="best", fontsize=7)
        ax.set_xlabel("time since the trial started (s)")
        ax.set_ylabel(f"{group.metric} ({unit})" if unit else group.metric)
        _title(ax, f"{group.title} over time")
        return _markup(fig, f"{group.title} over time")


def _quantiles(values: Any, probs: Any) -> Any:
    return np.quantile(np.asarray(values, dtype=float), probs)


def distribution_chart(group: SeriesGroup) -> str | None:
    """Per-request values per variant (all repetitions pooled): box plot (box = quartiles,
    whiskers = 5th–95th percentile, ◆ = mean) and ECDF, both from quantiles, not raw points."""
    pooled = []
    for variant, items in group.by_variant.items():
        arrays = [np.asarray(s.values, dtype=float) for s in items if len(s.values)]
        if arrays:
            data = np.concatenate(arrays)
            data = data[np.isfinite(data)]
            if data.size:
                pooled.append((variant, data))
    if not pooled:
        return None
    probs = np.linspace(0.0, 1.0, QUANTILE_POINTS)
    curves = [(name, _quantiles(data, probs), float(np.mean(data)), data.size)
              for name, data in pooled]
    div, unit = axis_scale([float(np.max(np.abs(q))) for _, q, _, _ in curves], group.unit)
    with chart_style():
        labels = [_short(f"{name} (n={n})", 30) for name, _q, _m, n in curves]
        fig = _new(7.2, max(2.8, 0.9 + 0.3 * len(curves)), _chars(labels))
        box_ax, ecdf_ax = fig.subplots(1, 2, width_ratios=[1, 1.2])
        fig.subplots_adjust(wspace=0.3)
        stats = []
        for label, (_name, q, mean, _n) in zip(labels, curves, strict=True):
            at = np.interp([0.5, 0.25, 0.75, 0.05, 0.95], probs, q) / div
            stats.append({"label": label, "med": at[0], "q1": at[1], "q3": at[2],
                          "whislo": at[3], "whishi": at[4], "mean": mean / div, "fliers": []})
        box_ax.bxp(stats, orientation="horizontal", showmeans=True, showfliers=False,
                   patch_artist=True,
                   boxprops={"facecolor": "#dbe6f4", "edgecolor": "#3b6fb6"},
                   medianprops={"color": "#111827"},
                   meanprops={"marker": "D", "markerfacecolor": "#e07b39",
                              "markeredgecolor": "#e07b39", "markersize": 3.5})
        box_ax.set_xlabel(f"{group.metric} ({unit})" if unit else group.metric)
        _title(box_ax, f"{_short(group.title, 44)}: distribution")
        positive = all(float(q[0]) > 0 for _, q, _, _ in curves)
        wide = positive and max(float(q[-1]) for _, q, _, _ in curves) > 100 * min(
            float(q[0]) for _, q, _, _ in curves)
        for i, (name, q, _mean, _n) in enumerate(curves):
            ecdf_ax.plot(q / div, probs, color=PALETTE[i % len(PALETTE)], linewidth=1.3,
                         label=_short(name, 28), drawstyle="steps-post")
        if wide:
            _log_x(ecdf_ax)
            _log_x(box_ax)
        ecdf_ax.set_ylim(0, 1)
        ecdf_ax.set_ylabel("fraction ≤ x")
        ecdf_ax.set_xlabel(f"{group.metric} ({unit})" if unit else group.metric)
        ecdf_ax.legend(loc="lower right", fontsize=7)
        _title(ecdf_ax, "ECDF, all repetitions pooled")
        return _markup(fig, f"distribution of {group.title}")


_CHARTS: dict[str, Any] = {
    "mean": mean_chart, "speedup": speedup_chart, "effects": effects_chart,
    "grid": grid_chart, "timeseries": timeseries_chart, "distribution": distribution_chart}
"""The charts draw_numbered draws, by name."""
