"""What the pages show, built from the store: run rows, a run's report parts, its progress."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from virtbench.analysis import Analysis, analyse
from virtbench.decide.explain import WorkloadExplanation, explain_run
from virtbench.plugins import build_sections
from virtbench.report.html import report_context, report_environment
from virtbench.serve.cache import VersionedCache
from virtbench.serve.svgstyle import presentation_attributes
from virtbench.store import RunInfo, Store

__all__ = ["ReportParts", "RunReports", "progress", "run_row"]


def _time(epoch: float | None) -> str:
    if epoch is None or not math.isfinite(epoch):
        return "–"
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M")


def _duration(run: RunInfo, now: float | None = None) -> str:
    end = run.ended_at if run.ended_at is not None else now
    if end is None:
        return "–"
    seconds = max(0, round(end - run.started_at))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def _seconds(run: RunInfo) -> float | None:
    """A finished run's duration in seconds (what the runs table sorts its duration by)."""
    if run.ended_at is None:
        return None
    return max(0.0, run.ended_at - run.started_at)


def run_row(run: RunInfo, samples: int | None) -> dict[str, Any]:
    """One line of the runs table (and of its CSV/JSON download); ``started_at`` is epoch
    seconds, ``duration_s`` seconds (None while running)."""
    return {"id": run.id, "experiment": run.experiment, "host": run.host, "status": run.status,
            "started": _time(run.started_at), "started_at": run.started_at,
            "duration": _duration(run), "duration_s": _seconds(run), "samples": samples,
            "stop_reason": run.stop_reason, "description": run.description}


def progress(store: Store, run: RunInfo, samples: int, now: float) -> dict[str, Any]:
    """A run's progress as the live page polls it."""
    ok, failed, last = store.trial_progress(run.id)
    return {"id": run.id, "status": run.status, "stop_reason": run.stop_reason,
            "samples": samples, "trials_ok": ok, "trials_failed": failed,
            "last_trial": _time(last), "duration": _duration(run, now)}


@dataclass(frozen=True)
class ReportParts:
    """A rendered report (the partials shared with `report -f html`) and its analysis."""

    analysis: Analysis
    title: str
    explain: list[WorkloadExplanation]
    """the run's profiles (decide.explain.explain_run); [] for several runs or none stored"""
    toc: Markup
    body: Markup
    samples: dict[str, int]
    """each run's sample count when this was rendered"""


class RunReports:
    """Reports of one run or of several side by side, cached per selection of runs.

    The cache key is each run's status and trials (count, latest end): the store writes a
    trial and its samples in one transaction, so it changes exactly when the sample count does,
    and it is read from the small trials table instead of counting a million samples.
    """

    def __init__(self, store: Store, size: int = 16) -> None:
        self.store = store
        self.cache: VersionedCache[ReportParts] = VersionedCache(size)
        self.env = report_environment()

    def parts(self, runs: list[RunInfo]) -> ReportParts:
        ids = tuple(r.id for r in runs)
        version = tuple((r.id, r.status, self.store.trial_progress(r.id)) for r in runs)
        return self.cache.get(ids, version, lambda: self._render(list(ids)))

    def _render(self, ids: list[str]) -> ReportParts:
        analysis = analyse(self.store, ids)
        explain = explain_run(self.store, ids[0], [v.name for v in analysis.variants],
                              analysis.baseline) if len(ids) == 1 else []
        context = report_context(analysis, sections=build_sections(analysis), explain=explain)
        # Markup: rendered by the autoescaping environment, every stored value already escaped;
        # the charts' inline styles become attributes the page's CSP allows
        return ReportParts(
            analysis, str(context["title"]), explain,
            Markup(self.env.get_template("report_toc.html.j2").render(**context)),
            Markup(presentation_attributes(
                self.env.get_template("report_body.html.j2").render(**context))),
            {run_id: self.store.sample_count(run_id) for run_id in ids})
