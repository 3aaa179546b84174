"""RFC 9971 multi-goal capacity searches: each goal's relevant bounds, conditional throughput,
regularity and settings, and the trace of trials with the goals each informed."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from virtbench.analysis import Analysis
from virtbench.report.formatting import fmt_num, fmt_value
from virtbench.report.sections import Section

if TYPE_CHECKING:
    from virtbench.search.spec import SearchSpec

__all__ = ["goal_sections"]

SERIES = "search"
_TRACE = ("search_load", "search_loss_ratio", "search_duration")


def _trials(analysis: Analysis) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Each multi-goal search's trials (series ``search`` with a loss ratio), in order."""
    steps: dict[tuple[str, str], dict[int, dict[str, float]]] = defaultdict(dict)
    for series in analysis.series:
        if series.labels.get("series") != SERIES or not len(series.values) \
                or series.metric not in _TRACE:
            continue
        pair = (series.variant, series.workload_id)
        steps[pair].setdefault(series.repetition, {})[series.metric] = float(series.values[0])
    return {pair: [v for _i, v in sorted(by.items()) if all(m in v for m in _TRACE)]
            for pair, by in steps.items()
            if any("search_loss_ratio" in v for v in by.values())}


def _scalar(analysis: Analysis, variant: str, wid: str, metric: str) -> float | None:
    values = analysis.values.get((variant, wid, metric))
    return float(values[-1]) if values is not None and values.size else None


def goal_sections(analysis: Analysis) -> list[Section]:
    searches = _trials(analysis)
    if not searches:
        return []
    from virtbench.report.sections.capacity import search_specs

    specs: dict[str, SearchSpec] = search_specs(analysis)
    summary = Section(
        "capacity-goals", "Capacity searches: RFC 9971 goals",
        paragraphs=["One search per configuration served every goal, sharing its trials. For "
                    "a goal, a load is an upper bound, a lower bound or undecided from the "
                    "sum of its trials' durations (RFC 9971): the relevant upper bound is the "
                    "smallest upper bound, the relevant lower bound (the headline) the "
                    "largest lower bound below it, the conditional throughput the lower bound "
                    "times one minus the exceed-ratio quantile of its full-length trials' loss "
                    "ratios. Regular: both bounds found; irregular: a load limit was reached."],
        columns=["variant", "workload", "goal", "lower bound", "upper bound",
                 "conditional throughput", "result", "trials", "trial-seconds", "settings"])
    traces: list[Section] = []
    for (variant, wid), steps in sorted(searches.items()):
        spec = specs.get(wid)
        goals = spec.search_goals() if spec is not None and spec.goals else ()
        unit = analysis.metric_defs[(wid, "capacity")].unit \
            if (wid, "capacity") in analysis.metric_defs else ""
        done = _scalar(analysis, variant, wid, "search_trials") is not None
        for goal in goals:
            n = goal.name
            regular = _scalar(analysis, variant, wid, f"{n}_regular")
            result = ("unfinished (resume the run)" if not done
                      else "regular" if regular == 1.0 else "irregular")
            settings = (f"loss {goal.loss_ratio:g}, exceed {goal.exceed_ratio:g}, final "
                        f"{goal.final_trial_duration:g} s, sum {goal.duration_sum:g} s, width "
                        f"{goal.width:g}, initial {goal.initial_trial_duration:g} s")
            equivalent = goal.equivalence()
            if equivalent:
                settings += f"; this is {equivalent}"
            summary.rows.append([
                variant, wid, n,
                fmt_value(_scalar(analysis, variant, wid, f"{n}_lower"), unit),
                fmt_value(_scalar(analysis, variant, wid, f"{n}_upper"), unit),
                fmt_value(_scalar(analysis, variant, wid, f"{n}_throughput"), unit),
                result, str(len(steps)),
                fmt_num(sum(s["search_duration"] for s in steps)), settings])
        trace = Section(f"capacity-goals-trace-{variant}-{wid}",
                        f"Search trace: {variant} / {wid}",
                        columns=["step", "duration", f"load ({unit})", "loss ratio",
                                 "full-length for"])
        for index, step in enumerate(steps):
            informs = [g.name for g in goals
                       if step["search_duration"] >= g.final_trial_duration * (1 - 1e-9)]
            trace.rows.append([str(index), fmt_value(step["search_duration"], "s"),
                               fmt_num(step["search_load"]), fmt_num(step["search_loss_ratio"]),
                               ", ".join(informs) or "— (shorter: guides the search)"])
        traces.append(trace)
    return [summary, *traces]
