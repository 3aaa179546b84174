"""Capacity searches in the runner: a searched workload runs once per search step.

``searched(workload, spec)`` wraps a workload whose ``search:`` block names a load parameter;
each trial of the wrapper runs the real workload at the load the search asks for, judges it
against ``pass_if`` and stores the verdict with the trial (samples in series ``search`` and the
``search.*`` trial notes). ``run_search`` drives one (variant, workload) to its result and
continues from the stored trace when a run is resumed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from pydantic import ValidationError

from virtbench.contract import Realisation
from virtbench.model import Better, Measurement, Metric, VirtbenchError
from virtbench.search import Search, SearchResult, Step, TraceEntry
from virtbench.search.spec import SearchSpec
from virtbench.services import Service
from virtbench.targets.target_contract import Target
from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload

__all__ = ["AFTER_SERIES", "SEARCH_SERIES", "SearchedWorkload", "after_from_trials",
           "run_search", "search_metrics", "searched", "trace_from_trials"]

SEARCH_SERIES = "search"
"""The series label of every per-step sample of a search (kept out of scalar statistics)."""
AFTER_SERIES = "search_after"
"""The series label of the trials at fractions of the found load (``latency_at``)."""


def search_metrics(unit: str) -> tuple[Metric, ...]:
    """The metrics a search adds to the workload it searches, in the load's ``unit``."""
    return (
        Metric("capacity", unit, Better.HIGHER, "the search result: the highest offered load "
               "that passed every pass_if criterion at the final trial duration", primary=True),
        Metric("capacity_upper", unit, Better.HIGHER, "the lowest load above the result that "
               "failed at the final trial duration (absent when the upper bound passed)"),
        Metric("search_trials", "trials", None, "trials the search took"),
        Metric("search_load", unit, None, "offered load of one search trial (one "
               "sample per trial, series 'search')"),
        Metric("search_passed", "bool", None, "1 when the search trial passed every "
               "pass_if criterion, else 0 (series 'search')"),
        Metric("search_duration", "s", None, "trial duration the search asked for "
               "(series 'search')"),
    )


class SearchedWorkload(Workload):
    """A workload run at the loads a capacity search chooses, one search per variant."""

    inner_class: ClassVar[type[Workload]]

    def __init__(self, inner: Workload, spec: SearchSpec) -> None:
        super().__init__(inner.params)
        self.inner = inner
        self.spec = spec
        self.base_params: dict[str, Any] = inner.params.model_dump()
        self.searches: dict[str, Search] = {}
        self.after: dict[str, float] = {}
        """The fraction of the found load the next after-trial of a variant runs at."""
        self.after_done: dict[str, set[float]] = {}

    def search_for(self, variant: str) -> Search:
        if variant not in self.searches:
            self.searches[variant] = Search(self.spec.plan())
        return self.searches[variant]

    # ---- the wrapped workload, unchanged -----------------------------------------------------
    def primary_metrics(self) -> list[Metric]:
        return [self.metric("capacity")]

    def active_metrics(self) -> list[Metric]:
        return [*self.inner.active_metrics(), *search_metrics(self.spec.unit)]

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        return self.inner.realise(knobs)

    def check(self, target: Target) -> list[str]:
        return self.inner.check(target)

    def needed_services(self) -> tuple[type[Service], ...]:
        return self.inner.needed_services()

    def setup(self, ctx: TrialContext) -> None:
        self.inner.setup(ctx)

    def teardown(self, ctx: TrialContext) -> None:
        self.inner.teardown(ctx)

    # ---- one search step -----------------------------------------------------------------
    def run(self, ctx: TrialContext) -> TrialResult:
        search = self.search_for(ctx.variant)
        step = search.next()
        if isinstance(step, SearchResult):
            return self._after(ctx, step)
        self.inner.params = self._params_at(step)
        for attempt in range(1, self.spec.retries + 2):  # noqa: B007 - counted in notes
            result = self.inner.run(ctx)
            scalars = {m.metric: m.value for m in result.measurements
                       if m.t is None and m.value is not None}
            failures = self.spec.failures(scalars)
            if self.spec.conclusive(not failures, step.load, scalars):
                break
        else:
            # The load asked for was never really offered (or overshot into a failure): the
            # verdict stays unknown, so the load counts as failed — the result is then the
            # highest load the generator could verify, and the report says so.
            failures = [*failures, f"{self.spec.offered} stayed more than "
                        f"{self.spec.offered_tolerance:.0%} off the asked load"]
        search.record(not failures)
        labels = {"series": SEARCH_SERIES, "step": str(ctx.repetition),
                  "phase": str(step.phase)}
        # A step's own values describe one load, not a repetition: they join the trace.
        measurements = [Measurement(m.metric, m.value, 0.0, {**m.labels, **labels}, m.status)
                        if m.t is None else m for m in result.measurements]
        measurements += [
            Measurement("search_load", step.load, 0.0, labels),
            Measurement("search_passed", 0.0 if failures else 1.0, 0.0, labels),
            Measurement("search_duration", step.duration_s, 0.0, labels),
        ]
        notes = {**result.notes, "search.load": repr(step.load),
                 "search.duration_s": repr(step.duration_s), "search.phase": str(step.phase),
                 "search.passed": "0" if failures else "1",
                 "search.failures": "; ".join(failures), "search.attempts": str(attempt)}
        if self.spec.offered is not None and self.spec.offered in scalars:
            notes["search.offered"] = repr(scalars[self.spec.offered])
        outcome = search.next()
        if isinstance(outcome, SearchResult):
            measurements += _result_measurements(outcome)
            notes["search.result"] = outcome.reason
        return TrialResult(measurements, result.artifacts, notes)

    def _after(self, ctx: TrialContext, result: SearchResult) -> TrialResult:
        """A trial at a fraction of the found load (latency below capacity)."""
        fraction = self.after.get(ctx.variant)
        if fraction is None or result.load is None:
            raise VirtbenchError(f"search of {ctx.variant}/{self.name} is already finished")
        final = self.spec.durations_s[-1]
        step = Step(_round(self.spec, result.load * fraction), final, -1)
        self.inner.params = self._params_at(step)
        inner = self.inner.run(ctx)
        labels = {"series": AFTER_SERIES, "fraction": f"{fraction:g}",
                  "step": str(ctx.repetition)}
        measurements = [Measurement(m.metric, m.value, 0.0, {**m.labels, **labels}, m.status)
                        if m.t is None else m for m in inner.measurements]
        measurements += [Measurement("search_load", step.load, 0.0, labels),
                         Measurement("search_duration", final, 0.0, labels)]
        self.after_done.setdefault(ctx.variant, set()).add(fraction)
        return TrialResult(measurements, inner.artifacts,
                           {**inner.notes, "search.after": repr(fraction),
                            "search.load": repr(step.load)})

    def _params_at(self, step: Step) -> Any:
        load: float | int = int(step.load) if self.spec.integer else step.load
        values = {**self.base_params, self.spec.load: load}
        if self.spec.duration is not None:
            values[self.spec.duration] = step.duration_s
        try:
            return self.inner.Params.model_validate(values)
        except ValidationError as exc:
            raise VirtbenchError(f"{self.name}: search step {self.spec.load}={load}, "
                                 f"{self.spec.duration}={step.duration_s}: {exc}") from exc


def _round(spec: SearchSpec, load: float) -> float:
    return float(max(1, round(load))) if spec.integer else load


def _result_measurements(result: SearchResult) -> list[Measurement]:
    found = [Measurement("search_trials", float(result.trials))]
    if result.load is not None:
        found.append(Measurement("capacity", result.load))
    if result.upper is not None:
        found.append(Measurement("capacity_upper", result.upper))
    return found


def searched(inner: Workload, spec: SearchSpec) -> SearchedWorkload:
    """``inner`` run by a search; refuses a load or metric the workload does not have."""
    fields = inner.Params.model_fields
    problems = [f"search.{key}: '{name}' is not a parameter of {inner.name} (parameters: "
                f"{', '.join(fields) or 'none'})"
                for key, name in (("load", spec.load), ("duration", spec.duration))
                if name is not None and name not in fields]
    declared = {m.name for m in inner.metrics}
    problems += [f"search.pass_if: {inner.name} declares no metric '{c.metric}' (metrics: "
                 f"{', '.join(sorted(declared))})" for c in spec.pass_if
                 if c.metric not in declared]
    if problems:
        raise VirtbenchError("; ".join(problems))
    cls = type(inner)
    wrapper = type(f"Searched{cls.__name__}", (SearchedWorkload,), {
        "name": cls.name, "description": f"capacity search of {cls.name}: {cls.description}",
        "metrics": (*cls.metrics, *search_metrics(spec.unit)), "tools": cls.tools,
        "python_modules": cls.python_modules, "Params": cls.Params, "knobs": cls.knobs,
        "needs": cls.needs, "inner_class": cls})
    return wrapper(inner, spec)  # type: ignore[no-any-return]


def trace_from_trials(trials: Iterable[Mapping[str, Any]], variant: str,
                      workload_id: str) -> list[TraceEntry]:
    """The stored trace of one search, from the run's trial rows (``Store.trials``)."""
    steps: dict[int, TraceEntry] = {}
    for trial in trials:
        notes = trial.get("notes") or {}
        if (trial["variant"], trial["workload_id"]) != (variant, workload_id) \
                or trial["status"] != "ok" or trial["warmup"] or "search.load" not in notes \
                or "search.after" in notes:
            continue
        steps[int(trial["repetition"])] = TraceEntry(
            float(notes["search.load"]), float(notes["search.duration_s"]),
            int(notes["search.phase"]), notes["search.passed"] == "1")
    return [steps[i] for i in sorted(steps)]


def after_from_trials(trials: Iterable[Mapping[str, Any]], variant: str,
                      workload_id: str) -> set[float]:
    """The fractions of the found load whose after-trials are stored already."""
    return {float(trial["notes"]["search.after"]) for trial in trials
            if (trial["variant"], trial["workload_id"]) == (variant, workload_id)
            and trial["status"] == "ok" and "search.after" in (trial.get("notes") or {})}


def run_search(workload: SearchedWorkload, variant: str, trace: list[TraceEntry],
               run_trial: Callable[[int], None], after_done: set[float] | None = None,
               ) -> SearchResult:
    """Continue the search of ``variant`` after ``trace`` until it has a result, then run the
    trials at ``latency_at`` fractions of it that ``after_done`` lacks.

    ``run_trial(index)`` runs and stores one trial with repetition ``index``; a failed trial
    is retried at the same index, and the runner stops after repeated failures.
    """
    search = Search(workload.spec.plan())
    search.replay(trace)
    workload.searches[variant] = search
    while not isinstance(outcome := search.next(), SearchResult):
        run_trial(len(search.trace))
    if outcome.load is None:
        return outcome
    done = workload.after_done.setdefault(variant, set(after_done or ()))
    for fraction in workload.spec.latency_at:
        workload.after[variant] = fraction
        while fraction not in done:
            run_trial(len(search.trace) + len(done))
    return outcome
