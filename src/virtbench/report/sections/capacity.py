"""Capacity searches: the found load with its bounds, the search trace, the load–latency
curve from the tested loads, and RFC 2544's throughput table for packet-rate searches."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from virtbench.analysis import Analysis
from virtbench.model import Better, Metric
from virtbench.packetgen import frame_mix
from virtbench.report.formatting import fmt_num, fmt_value
from virtbench.report.sections import Section, SectionPlugin
from virtbench.report.sections.capacity_goals import goal_sections
from virtbench.search import SearchResult, TraceEntry, trace_problems

if TYPE_CHECKING:
    from virtbench.search.spec import SearchSpec

__all__ = ["SECTIONS", "capacity_sections", "search_specs"]

SERIES = "search"
"""The series label of a search's per-trial samples (``virtbench.runner.search``)."""
AFTER_SERIES = "search_after"
"""The series label of the trials at fractions of the found load (``latency_at``)."""
_TRACE_METRICS = ("search_load", "search_passed", "search_duration")
_LATENCY_UNITS = ("ms", "µs", "us", "ns", "s")
PACKET_WORKLOAD = "net.packet-rate"
_FIRST = ("loss_ratio", "offered_pps", "generator_shortfall", "generator_cpu_pct",
          "rtt_mean_ms", "response_time_p99", "failures", "achieved_rate")
"""Trace columns shown first when the workload measures them."""


@dataclass
class Step:
    """One trial of a search, as stored: its load, verdict and the workload's own values."""

    index: int
    values: dict[str, float] = field(default_factory=dict)

    @property
    def entry(self) -> TraceEntry:
        return TraceEntry(self.values["search_load"], self.values["search_duration"], 0,
                          self.values["search_passed"] >= 0.5)


def _steps(analysis: Analysis, label: str) -> dict[tuple[str, str], dict[int, Step]]:
    """Each trial's values in the series ``label``, by (variant, workload) and repetition."""
    steps: dict[tuple[str, str], dict[int, Step]] = defaultdict(dict)
    for series in analysis.series:
        if series.labels.get("series") != label or not len(series.values):
            continue
        pair = (series.variant, series.workload_id)
        step = steps[pair].setdefault(series.repetition, Step(series.repetition))
        step.values[series.metric] = float(series.values[0])
    return steps


def _searches(analysis: Analysis) -> dict[tuple[str, str], list[Step]]:
    """Each search's trials in the order they ran."""
    return {pair: [s for _i, s in sorted(by_index.items())
                   if all(m in s.values for m in _TRACE_METRICS)]
            for pair, by_index in _steps(analysis, SERIES).items()}


def _after_trials(analysis: Analysis) -> dict[tuple[str, str], list[Step]]:
    """The latency_at trials of each search (series ``search_after``), by load."""
    return {pair: sorted((s for s in by_index.values() if "search_load" in s.values),
                         key=lambda s: s.values["search_load"])
            for pair, by_index in _steps(analysis, AFTER_SERIES).items()}


def _below(analysis: Analysis, variant: str, wid: str, steps: list[Step]) -> Section:
    """Latency and loss at fractions of the found load (RFC 2544's latency test)."""
    capacity = _scalar(analysis, variant, wid, "capacity")
    unit = _unit(analysis, wid)
    shown = [m for m in _metrics(analysis, wid)
             if any(m.name in s.values for s in steps) and m.name not in _TRACE_METRICS
             and ((m.unit in _LATENCY_UNITS and m.better is Better.LOWER)
                  or m.name in ("loss_ratio", "probe_loss_pct", "failures"))]
    return Section(f"capacity-below-{variant}-{wid}",
                   f"Below the found load: {variant} / {wid}",
                   columns=["fraction", f"load ({unit})", *[f"{m.name} ({m.unit})"
                                                             for m in shown]],
                   rows=[[f"{s.values['search_load'] / capacity:.0%}" if capacity else "–",
                          fmt_num(s.values["search_load"]),
                          *[fmt_num(s.values.get(m.name)) for m in shown]] for s in steps])


def search_specs(analysis: Analysis) -> dict[str, SearchSpec]:
    """Each searched workload's ``search:`` block, from the stored experiment files."""
    # Here, not at the top: every report builds this section (it is empty without a search),
    # and the YAML reader and the pydantic model are a twentieth of a second of its start-up.
    from pydantic import ValidationError

    from virtbench.inputs.yamlfile import YamlInputError, load_yaml
    from virtbench.search.spec import SearchSpec

    specs: dict[str, SearchSpec] = {}
    for run in analysis.runs:
        try:  # bounded: an imported run's text may be hostile (nested aliases)
            tree = load_yaml(run.spec_yaml, "the stored experiment", typ="safe")
        except YamlInputError:
            continue
        for item in (tree or {}).get("workloads") or []:
            if not isinstance(item, dict) or not isinstance(item.get("search"), dict):
                continue
            try:
                spec = SearchSpec.model_validate(item["search"])
            except ValidationError:
                continue
            specs.setdefault(str(item.get("id") or item.get("name")), spec)
    return specs


def _scalar(analysis: Analysis, variant: str, wid: str, metric: str) -> float | None:
    values = analysis.values.get((variant, wid, metric))
    return float(values[-1]) if values is not None and values.size else None


def _result(analysis: Analysis, variant: str, wid: str, steps: list[Step]) -> SearchResult:
    load = _scalar(analysis, variant, wid, "capacity")
    upper = _scalar(analysis, variant, wid, "capacity_upper")
    reasons = analysis.notes.get((variant, wid), {}).get("search.result", [])
    return SearchResult(load, upper, reasons[-1] if reasons else "unfinished", len(steps))


def _unit(analysis: Analysis, wid: str) -> str:
    metric = analysis.metric_defs.get((wid, "capacity"))
    return metric.unit if metric else ""


def _limit_note(steps: list[Step], result: SearchResult) -> str:
    """Whether the generator, rather than the path, decided the upper end."""
    if result.reason == "unfinished":
        return "search unfinished (resume the run)"
    if result.upper is None:
        return "upper bound passed: the capacity is at least the bound"
    if result.load is None:
        return "even the lower bound failed"
    final = max(s.values["search_duration"] for s in steps)
    above = [s for s in steps if s.values["search_duration"] == final
             and s.values["search_load"] == result.upper]
    if above and above[-1].values.get("generator_shortfall", 0.0) > 0.01:
        return (f"the generator, not the path, was the limit: it offered only "
                f"{1 - above[-1].values['generator_shortfall']:.1%} of {result.upper:g}")
    return ""


def _summary(analysis: Analysis, searches: dict[tuple[str, str], list[Step]],
             specs: dict[str, SearchSpec]) -> Section:
    section = Section(
        "capacity", "Capacity searches",
        paragraphs=["The highest load each configuration sustained: every criterion of the "
                    "search's pass_if held at the final trial duration. The interval runs from "
                    "the found load to the lowest load above it that failed; 'consistent' "
                    "checks that every final trial at or below the result passed and every "
                    "one above it failed."],
        columns=["variant", "workload", "capacity", "failed at", "width", "trials",
                 "generator CPU", "consistent", "note"])
    for (variant, wid), steps in sorted(searches.items()):
        result = _result(analysis, variant, wid, steps)
        unit = _unit(analysis, wid)
        width = ("" if result.load is None or result.upper is None
                 else f"{(result.upper - result.load) / result.load:.2%}")
        spec = specs.get(wid)
        if spec is None or result.reason == "unfinished":
            consistent = "unfinished" if result.reason == "unfinished" else "—"
        else:
            problems = trace_problems(spec.plan(), [s.entry for s in steps], result)
            consistent = "yes" if not problems else "NO: " + "; ".join(problems)
            if problems:
                section.warnings.append(f"{variant}/{wid}: inconsistent trace: "
                                        + "; ".join(problems))
        cpu = [s.values["generator_cpu_pct"] for s in steps
               if s.values.get("search_load") == result.load and "generator_cpu_pct" in s.values]
        section.rows.append([
            variant, wid, fmt_value(result.load, unit), fmt_value(result.upper, unit), width,
            str(len(steps)), fmt_value(cpu[-1], "%") if cpu else "—", consistent,
            _limit_note(steps, result) or result.reason])
    return section


def _metrics(analysis: Analysis, wid: str) -> list[Metric]:
    """The workload's declared metrics (a search keeps its per-step values as series)."""
    return [m for (owner, _name), m in analysis.metric_defs.items() if owner == wid]


def _trace(analysis: Analysis, variant: str, wid: str, steps: list[Step]) -> Section:
    unit = _unit(analysis, wid)
    extra = [m for m in _metrics(analysis, wid)
             if m.name not in _TRACE_METRICS and any(m.name in s.values for s in steps)]
    extra = sorted((m for m in extra if m.name not in ("capacity", "capacity_upper",
                                                       "search_trials")),
                   key=lambda m: (_FIRST.index(m.name) if m.name in _FIRST else len(_FIRST),
                                  not m.primary, m.name))[:6]
    section = Section(f"capacity-trace-{variant}-{wid}", f"Search trace: {variant} / {wid}",
                      columns=["step", "duration", f"load ({unit})", "verdict",
                               *[f"{m.name} ({m.unit})" for m in extra]])
    for step in steps:
        section.rows.append([
            str(step.index), fmt_value(step.values["search_duration"], "s"),
            fmt_num(step.values["search_load"]),
            "pass" if step.values["search_passed"] >= 0.5 else "fail",
            *[fmt_num(step.values.get(m.name)) for m in extra]])
    return section


def _curve(analysis: Analysis, variant: str, wid: str, steps: list[Step]) -> Section | None:
    """Latency against load at the final trial duration: the hockey stick."""
    latencies = [m for m in _metrics(analysis, wid)
                 if m.better is Better.LOWER and m.unit in _LATENCY_UNITS
                 and m.name != "search_duration" and any(m.name in s.values for s in steps)]
    if not latencies or not steps:
        return None
    final = max(s.values["search_duration"] for s in steps)
    unit = _unit(analysis, wid)
    points = sorted((s for s in steps if s.values["search_duration"] == final),
                    key=lambda s: s.values["search_load"])
    return Section(f"capacity-curve-{variant}-{wid}",
                   f"Load and latency: {variant} / {wid} (final {final:g} s trials)",
                   columns=[f"load ({unit})", "verdict",
                            *[f"{m.name} ({m.unit})" for m in latencies]],
                   rows=[[fmt_num(s.values["search_load"]),
                          "pass" if s.values["search_passed"] >= 0.5 else "fail",
                          *[fmt_num(s.values.get(m.name)) for m in latencies]]
                         for s in points])


def _rfc2544(analysis: Analysis, searches: dict[tuple[str, str], list[Step]],
             specs: dict[str, SearchSpec]) -> Section | None:
    """RFC 2544 section 26.1's layout: frame size, rate in frames/s and bit/s, loss."""
    params = {wid: p for wid, name, p in analysis.workloads if name == PACKET_WORKLOAD}
    rows = []
    for (variant, wid), steps in sorted(searches.items()):
        if wid not in params:
            continue
        size = params[wid].get("frame_size", 64)
        try:
            mix = frame_mix(size)
        except Exception:  # a stored param this version cannot read: skip the row
            continue
        result = _result(analysis, variant, wid, steps)
        passing = [s for s in steps if s.values.get("search_load") == result.load]
        loss = passing[-1].values.get("loss_ratio") if passing else None
        spec = specs.get(wid)
        criterion = ", ".join(
            f"{c.metric} ≤ {c.max:g}" if c.max is not None else f"{c.metric} ≥ {c.min:g}"
            for c in spec.pass_if) if spec else ""
        pps = result.load
        rows.append([variant, str(size), criterion, fmt_num(pps),
                     fmt_num(mix.bits_per_second(pps) / 1e6 if pps else None),
                     fmt_num(mix.wire_bits_per_second(pps) / 1e6 if pps else None),
                     fmt_num(loss), _limit_note(steps, result)])
    if not rows:
        return None
    return Section("capacity-rfc2544", "Throughput per frame size (RFC 2544)",
                   paragraphs=["Frame sizes include the FCS; Mbit/s of frames counts them, "
                               "Mbit/s on the wire adds the preamble and inter-frame gap "
                               "(20 B per frame). NDR: no frame lost; PDR: loss ratio at most "
                               "the stated bound."],
                   columns=["variant", "frame size (B)", "criterion", "rate (frames/s)",
                            "Mbit/s (frames)", "Mbit/s (wire)", "loss ratio", "note"],
                   rows=rows)


def capacity_sections(analysis: Analysis) -> list[Section]:
    searches = _searches(analysis)
    if not searches:
        return []
    specs = search_specs(analysis)
    sections = [_summary(analysis, searches, specs)]
    table = _rfc2544(analysis, searches, specs)
    if table is not None:
        sections.append(table)
    below = _after_trials(analysis)
    for (variant, wid), steps in sorted(searches.items()):
        sections.append(_trace(analysis, variant, wid, steps))
        curve = _curve(analysis, variant, wid, steps)
        if curve is not None:
            sections.append(curve)
        if below.get((variant, wid)):
            sections.append(_below(analysis, variant, wid, below[(variant, wid)]))
    return sections


SECTIONS = (SectionPlugin("capacity", capacity_sections),
            SectionPlugin("capacity-goals", goal_sections))
