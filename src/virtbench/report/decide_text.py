"""Terminal rendering of `compare BASE NEW` verdicts and of `history`: compact tables that stay
readable at 80 columns (identifying columns wrap, never vanish) and sparklines."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from virtbench import safetext
from virtbench.model import (
    NO_DIRECTION,
    NOT_JUDGED,
    Better,
    better_text,
    direction_text,
    parse_better,
)
from virtbench.report.formatting import fmt_value
from virtbench.report.gate.comparison_rows import ratio_text, verdict_text

if TYPE_CHECKING:  # history pulls in the change-point library: only `history` needs it
    from virtbench.decide.comparability import Difference
    from virtbench.decide.compare import Comparison, ComparisonRow
    from virtbench.decide.history import History
    from virtbench.decide.runs import RunData

__all__ = ["SPARK_WIDTH", "render_calibration", "render_comparison", "render_differences",
           "render_history", "sparkline"]

SPARK_WIDTH = 12
"""Most characters of a sparkline; longer histories are averaged into this many buckets."""
_BARS = "▁▂▃▄▅▆▇█"
_ARROW = {"lower": "↓", "higher": "↑", NO_DIRECTION: "·"}
"""A metric's direction beside its name (· none: such metrics are not judged)."""
_VERDICT_STYLE = {"better": "green", "worse": "red", "equivalent": "cyan",
                  "inconclusive": "yellow"}


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH) -> str:
    """Values as block characters, low to high; more than ``width`` values are averaged in
    equal-count buckets."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return ""
    if x.size > width:
        x = np.array([chunk.mean() for chunk in np.array_split(x, width)])
    low, high = float(x.min()), float(x.max())
    if high == low:
        return _BARS[3] * x.size
    idx = np.round((x - low) / (high - low) * (len(_BARS) - 1)).astype(int)
    return "".join(_BARS[i] for i in idx)


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _run_line(role: str, run: RunData) -> str:
    """One run as plain text (print it with safetext.text: every part is stored text)."""
    where = "" if run.source == "store" else f", file {run.source}"
    return (f"{role}  {run.id}  {run.experiment} on {run.host or '?'}, "
            f"{_when(run.started_at)}{where}")


def render_differences(diffs: list[Difference], console: Console, title: str) -> None:
    """A short block naming each differing fact or setting (strict ones marked). Facts and
    settings are stored text: shown as written (safetext), never as markup."""
    if not diffs:
        console.print(safetext.text(f"{title}: none found (facts, experiment file, lab, "
                                    "workloads, variants)"), highlight=False)
        return
    console.print(f"[yellow]{safetext.markup(title)}[/] ({len(diffs)}; * = refused by "
                  "--strict):", highlight=False)
    for d in diffs:
        mark = "*" if d.strict else " "
        console.print(safetext.text(f" {mark} {d.what}: {_short(d.base)} → {_short(d.new)}"),
                      highlight=False, soft_wrap=False, overflow="fold")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(row: ComparisonRow) -> str:
    style = _VERDICT_STYLE.get(row.result.verdict)
    text = safetext.markup(verdict_text(row))
    return f"[{style}]{text}[/]" if style else text


def _probability_text(p: float) -> str:
    """A probability as a percentage that never rounds to a certainty it does not have."""
    if p > 0.999:
        return ">99.9%"
    if p < 0.001:
        return "<0.1%"
    return f"{100 * p:.1f}%"


def render_comparison(comparison: Comparison, console: Console, *,
                      allow_unjudged: bool = False) -> None:
    """Runs, differences, one row per workload · metric · variant, and the gate's outcome.
    Names come from the store or an exported file: cells are safetext.text, never markup."""
    # one line each, never wrapped: a run's file path stays whole (copyable)
    for role, runs in (("BASE", comparison.base_runs or [comparison.base]),
                       ("NEW ", comparison.new_runs or [comparison.new])):
        for run in runs:
            console.print(safetext.text(_run_line(role, run)), highlight=False,
                          soft_wrap=True)
    console.print(safetext.text(f"variance model: {comparison.variance.text}"),
                  highlight=False)
    render_differences(comparison.differences, console, "differences")
    several = len({row.variant for row in comparison.rows}) > 1
    console.print(_comparison_table(comparison, several))
    if not several and comparison.rows:
        console.print(safetext.text(f"variant: {comparison.rows[0].variant}"), highlight=False)
    if comparison.not_judged:
        console.print(safetext.text(f"left out, {NOT_JUDGED}: "
                                    f"{', '.join(comparison.not_judged)}"), highlight=False)
    chance = comparison.probability_pct
    if chance is not None:
        r = comparison.prior_ratio
        console.print(f"P(≥{chance:g} % worse): posterior probability that NEW is at least "
                      f"{chance:g} % worse than BASE, from the same log-ratio likelihood the gate "
                      f"uses and a prior of no change, 95 % of it on ratios within "
                      f"[1/{r:g}, {r:g}] (docs/statistics.md)", highlight=False)
    if comparison.fail_pct is not None:
        _render_gate(comparison, console, several, allow_unjudged)


def _comparison_table(comparison: Comparison, several: bool) -> Table:
    """One row per workload · metric (· variant when several): ratio, verdict, the gate's
    outcome (--fail-if-worse) and the probability of being worse (--probability)."""
    gate = comparison.fail_pct is not None
    chance = comparison.probability_pct
    what = "run means" if comparison.per_run_means else "means"
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1),
                  title=f"NEW/BASE ratio of {what}, 95 % CI; equivalent = within "
                        f"±{comparison.equivalence_pct:g} % (TOST); ↓ lower is better, "
                        "↑ higher", title_justify="left")
    table.add_column("workload", overflow="fold", min_width=6)
    table.add_column("metric", overflow="fold", min_width=6)
    if several:
        table.add_column("variant", overflow="fold", min_width=6)
    table.add_column("NEW/BASE [95 % CI]", no_wrap=True)
    table.add_column("verdict", overflow="fold", min_width=12)
    if gate:
        table.add_column("gate", overflow="fold", min_width=4)
    if chance is not None:
        # two short header lines: the table still fits 80 columns
        table.add_column(f"P(≥{chance:g} %\nworse)", no_wrap=True, justify="right")
    for row in comparison.rows:
        arrow = _ARROW[better_text(row.metric.better)]
        cells: list[Any] = [safetext.text(row.workload_id),
                            safetext.text(f"{row.metric.name} {arrow}")]
        if several:
            cells.append(safetext.text(row.variant))
        cells += [ratio_text(row), _verdict(row)]
        if gate:
            cells.append("[red]FAIL[/]" if row.regression
                         else ("[yellow]cannot judge[/]" if row.unjudged else "ok"))
        if chance is not None:
            cells.append("–" if math.isnan(row.probability_worse)
                         else _probability_text(row.probability_worse))
        table.add_row(*cells)
    return table


def _row_name(row: ComparisonRow, several: bool) -> str:
    return f"{row.workload_id} · {row.metric.name}" + (f" ({row.variant})" if several else "")


def _render_gate(comparison: Comparison, console: Console, several: bool,
                 allow_unjudged: bool) -> None:
    """The gate's outcome: the regressions (or none) and the rows it cannot judge."""
    bad = comparison.regressions
    pct = f"{comparison.fail_pct:g} %"
    if bad:
        console.print(f"[red]regression[/]: NEW worse than BASE by more than {pct} "
                      f"(one-sided α = 5 %, Holm over {len(comparison.rows)} metrics) on "
                      + safetext.markup("; ".join(
                          f"{_row_name(r, several)}, p = {r.p_worse_holm:.2g}" for r in bad)),
                      highlight=False)
    else:
        console.print(f"no regression beyond {pct} shown (one-sided α = 5 %, Holm over "
                      f"{len(comparison.rows)} metrics)", highlight=False)
    unjudged = comparison.unjudged
    if unjudged:
        verdict = ("passed (--allow-unjudged)" if allow_unjudged
                   else "[red]fails the gate[/] (--allow-unjudged to pass it)")
        console.print(f"cannot judge {len(unjudged)} of {len(comparison.rows)}, {verdict}: "
                      + safetext.markup("; ".join(
                          f"{_row_name(r, several)}: {r.unjudged}" for r in unjudged)),
                      highlight=False)


def _relative_ci(mean: float, low: float, high: float) -> str:
    """The CI as percentages of the mean, e.g. '-0.9/+1.0 %' (log-scale CIs are asymmetric)."""
    if math.isnan(low) or mean == 0:
        return "–"
    return f"{100 * (low / mean - 1):+.1f}/{100 * (high / mean - 1):+.1f} %"


def render_history(history: History, console: Console) -> None:
    """Selection, a table of series (last mean, sparkline, change points), then each change."""
    scope = (f"experiment file {history.experiment_hash}" if history.experiment_hash
             else "any experiment file")
    host = f"host {history.host}" if history.host else "any host"
    console.print(safetext.text(f"{history.experiment}: {len(history.run_ids)} runs ({scope}, "
                                f"{host})"), highlight=False)
    for why, count in history.excluded.items():
        console.print(safetext.text(f"  left out: {count} run(s), {why}"), highlight=False)
    console.print("latest = mean of the latest run; cp = change points, listed below",
                  highlight=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("workload · metric", overflow="fold", min_width=8)
    table.add_column("variant", overflow="fold", min_width=8)
    table.add_column("runs", justify="right")
    table.add_column("latest", no_wrap=True)
    table.add_column("95 % CI", no_wrap=True)
    table.add_column("trend", no_wrap=True)
    table.add_column("cp", justify="right")
    for s in history.series:
        last = s.points[-1] if s.points else None
        table.add_row(safetext.text(f"{s.workload_id} · {s.metric.name}"),
                      safetext.text(s.variant), str(len(s.points)),
                      fmt_value(last.mean, s.metric.unit) if last else "–",
                      _relative_ci(last.mean, last.ci_low, last.ci_high) if last else "–",
                      sparkline([p.mean for p in s.points]), str(len(s.steps)))
    console.print(table)
    for s in history.series:
        for step in s.steps:
            direction = "higher" if step.ratio > 1 else "lower"
            verdict = ("" if s.metric.better is None else ", better"
                       if (step.ratio > 1) == (s.metric.better is Better.HIGHER) else ", worse")
            console.print(safetext.text(
                f"change: {s.workload_id} · {s.metric.name} · {s.variant}: "
                f"{step.change_pct:+.2f} % [{100 * (step.ci_low - 1):+.2f}, "
                f"{100 * (step.ci_high - 1):+.2f}] ({direction}{verdict}; p = "
                f"{step.p_value:.1g}) between run {step.last_before} and {step.first_after} "
                f"({step.runs_before} runs before, {step.runs_after} after)"),
                highlight=False, overflow="fold")


def _num(value: float) -> str:
    """A percentage's number, compact: 0.56, 3.4, 12, 530."""
    return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"


def _pct(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{_num(value)} %"


def render_calibration(document: dict[str, Any], console: Console) -> None:
    """`virtbench calibrate`: per workload · metric the within- and between-run SD, the
    minimum detectable effect for n values per run and R runs per side, and with --detect the
    n and R needed; then what each column means and each metric's definition. ``document`` is
    calibration.plan_document's (names in it are stored text: shown with safetext.text)."""
    profile = document["profile"]
    n = document["values_per_run"]
    console.print(safetext.text(
        f"{profile['experiment']} on {profile['host']}: noise profile from "
        f"{len(profile['run_ids'])} runs of variant {profile['variant']} (A/A); runs "
        + ", ".join(profile["run_ids"])), highlight=False, soft_wrap=True)
    rows = document["rows"]
    detect = next((r["detect"] for r in rows if r.get("detect")), None)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1),
                  title=f"SD in % of the mean; R = r: detectable worsening in % at n = {n} "
                        "per run, r runs per side", title_justify="left")
    table.add_column("workload · metric", overflow="fold", min_width=12)
    table.add_column("runs×n", justify="right", no_wrap=True)
    table.add_column("within SD", justify="right", no_wrap=True)
    table.add_column("between SD [95 % CI]", no_wrap=True)
    runs_per_side = [d["runs_per_side"] for d in next(
        (r["detectable_pct"] for r in rows if r.get("detectable_pct")), [])]
    for r in runs_per_side:
        table.add_column(f"R = {r}", justify="right", no_wrap=True)
    if detect is not None:
        table.add_column(f"n for {detect['pct']:g} %", justify="right", no_wrap=True)
        table.add_column(f"R for {detect['pct']:g} %", justify="right", no_wrap=True)
    drifting: list[str] = []
    for row in rows:
        arrow = _ARROW.get(row["better"], "")
        name = safetext.text(f"{row['workload_id']} · {row['metric']} {arrow}")
        if row.get("problem"):
            table.add_row(name, "–", "–", safetext.text(f"cannot estimate: {row['problem']}"),
                          *["–"] * (len(runs_per_side) + (2 if detect is not None else 0)))
            continue
        low, high = row["between_sd_ci_pct"]
        cells: list[Any] = [name, f"{row['runs']}×{row['values_per_run']:.3g}",
                            _pct(row["within_sd_pct"]),
                            f"{_pct(row['between_sd_pct'])} [{_num(low)}, {_num(high)}]"]
        cells += [_pct(d["pct"]) for d in row["detectable_pct"]]
        if detect is not None:
            wanted = row["detect"]
            needed = wanted["n_with_one_run_per_side"]
            cells += ["never" if needed is None else str(needed),
                      str(wanted["runs_per_side_at_n"])]
        table.add_row(*cells)
        if (row["between_sd_pct"] / 100) ** 2 > (row["within_sd_pct"] / 100) ** 2 / n:
            drifting.append(f"{row['workload_id']} · {row['metric']}")
    console.print(table)
    console.print(
        "within SD, between SD: σ_w and σ_b of a one-way random-effects model (ANOVA estimator, "
        "σ_b truncated at 0), ×100, on the natural log of the values (≈ % of the mean); a "
        "metric with values ≤ 0 on the values / their mean. CI of σ_b: χ² with runs − 1 df. "
        "R = r: the smallest worsening (% of BASE) a gate of one-sided α = 5 % finds with 80 % "
        "power, (z₀.₉₅ + z₀.₈)·√(2(σ_b² + σ_w²/n)/R) on the log scale; with "
        "--fail-if-worse P it finds a worsening of about P plus that. n for D %: repetitions "
        "needed with one run per side to detect D % (never: drift alone is too large); R for "
        f"D %: runs per side needed at n = {n} (`compare B1 B2 -- N1 N2`).", highlight=False)
    for row in rows:
        definition = (f"{row['unit'] or 'unitless'}, "
                      f"{direction_text(parse_better(row['better'], row['metric']))}")
        if row["description"]:
            definition += f": {row['description']}"
        console.print(safetext.text(f"{row['workload_id']} · {row['metric']}: {definition}"),
                      highlight=False)
    if drifting:
        console.print(safetext.text(
            "drift between runs outweighs the noise within a run at n = "
            f"{n} for {'; '.join(drifting)}: more repetitions help little, more runs per side "
            "do (`compare B1 B2 -- N1 N2`)"), highlight=False)
    if document.get("stopped"):
        console.print(safetext.text(str(document["stopped"])), style="yellow", highlight=False)
