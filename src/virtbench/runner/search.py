"""Capacity searches in the runner: a searched workload runs once per search step.

``searched(workload, spec)`` wraps a workload whose ``search:`` block names a load parameter;
each trial of the wrapper runs the real workload at the load the search asks for, judges it
against ``pass_if`` and stores the verdict with the trial (samples in series ``search`` and the
``search.*`` trial notes). ``run_search`` drives one (variant, workload) to its result and
continues from the stored trace when a run is resumed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from virtbench.contract import Realisation
from virtbench.model import Better, Measurement, Metric, VirtbenchError
from virtbench.search.spec import SearchSpec
from virtbench.service_base import Service
from virtbench.targets.target_contract import Target
from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload

if TYPE_CHECKING:
    # The search itself loads where a search runs or a stored one is read (below), not where
    # a plan wraps a workload: `run FILE --check` imports none of it (tests/unit/cli/test_root.py).
    from virtbench.search import Search, SearchResult, Step, TraceEntry
    from virtbench.search.goals import Trial
    from virtbench.search.multi import GoalResult, MultiSearch

__all__ = ["AFTER_SERIES", "SEARCH_SERIES", "SearchedWorkload", "after_from_trials",
           "goal_metrics", "goal_trace_from_trials", "run_goal_search", "run_search",
           "search_metrics", "searched", "trace_from_trials"]

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
        *_trace_metrics(unit),
        Metric("search_passed", "bool", None, "1 when the search trial passed every "
               "pass_if criterion, else 0 (series 'search')"),
    )


def _trace_metrics(unit: str) -> tuple[Metric, ...]:
    """The metrics of every search's trace: its trial count, each trial's load and duration."""
    return (
        Metric("search_trials", "trials", None, "trials the search took"),
        Metric("search_load", unit, None, "offered load of one search trial (one "
               "sample per trial, series 'search')"),
        Metric("search_duration", "s", None, "trial duration the search asked for "
               "(series 'search')"),
    )


def goal_metrics(spec: SearchSpec) -> tuple[Metric, ...]:
    """The metrics of an RFC 9971 multi-goal search: per goal its relevant bounds, conditional
    throughput and regularity; ``capacity`` is the first goal's relevant lower bound."""
    unit = spec.unit
    found = [
        Metric("capacity", unit, Better.HIGHER, "the first goal's Relevant Lower Bound (RFC "
               "9971): the largest lower bound below the smallest upper bound", primary=True),
        *_trace_metrics(unit),
        Metric("search_seconds", "s", None, "sum of the search's trial durations"),
        Metric("search_loss_ratio", "ratio", None, "loss ratio of one search trial (series "
               "'search')"),
    ]
    for goal in spec.search_goals():
        n = goal.name
        found += [
            Metric(f"{n}_lower", unit, Better.HIGHER, f"goal {n}: Relevant Lower Bound (RFC "
                   "9971), the largest lower bound below the relevant upper bound"),
            Metric(f"{n}_upper", unit, Better.HIGHER, f"goal {n}: Relevant Upper Bound, the "
                   "smallest load classified as an upper bound (absent: the highest load was "
                   "a lower bound)"),
            Metric(f"{n}_throughput", unit, Better.HIGHER, f"goal {n}: Conditional Throughput"
                   ", the relevant lower bound × (1 − the exceed-ratio quantile of its "
                   "full-length trials' loss ratios)"),
            Metric(f"{n}_regular", "bool", None, f"goal {n}: 1 when both relevant bounds "
                   "were found (a regular result), else 0"),
        ]
    return tuple(found)


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
        self.multi: dict[str, MultiSearch] = {}
        """Multi-goal (RFC 9971) searches, one per variant, when the spec has goals."""

    def multi_for(self, variant: str) -> MultiSearch:
        from virtbench.search.multi import MultiSearch

        if variant not in self.multi:
            self.multi[variant] = MultiSearch(self.spec.multi_plan())
        return self.multi[variant]

    def search_for(self, variant: str) -> Search:
        from virtbench.search import Search

        if variant not in self.searches:
            self.searches[variant] = Search(self.spec.plan())
        return self.searches[variant]

    # ---- the wrapped workload, unchanged -----------------------------------------------------
    def primary_metrics(self) -> list[Metric]:
        return [self.metric("capacity")]

    def active_metrics(self) -> list[Metric]:
        added = goal_metrics(self.spec) if self.spec.goals else search_metrics(self.spec.unit)
        return [*self.inner.active_metrics(), *added]

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
        from virtbench.search import SearchResult, Step

        if self.spec.goals:
            return self._run_goals(ctx)
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
        measurements = _trace_measurements(result, ctx, Step(step.load, step.duration_s,
                                                             step.phase),
                                           "search_passed", 0.0 if failures else 1.0)
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

    def _run_goals(self, ctx: TrialContext) -> TrialResult:
        """One trial of a multi-goal search: its loss ratio informs every goal."""
        from virtbench.search import Step

        search = self.multi_for(ctx.variant)
        step = search.next()
        if step is None:
            raise VirtbenchError(f"search of {ctx.variant}/{self.name} is already finished")
        self.inner.params = self._params_at(Step(step.load, step.duration_s, step.target))
        why = ""
        for attempt in range(1, self.spec.retries + 2):  # noqa: B007 - counted in notes
            result = self.inner.run(ctx)
            scalars = {m.metric: m.value for m in result.measurements
                       if m.t is None and m.value is not None}
            measured = scalars.get(self.spec.loss)
            loss = 1.0 if measured is None else min(1.0, max(0.0, measured))
            why = "" if measured is not None else f"{self.spec.loss} was not measured"
            # Low loss needs the load really offered; high loss at more than asked says
            # nothing about the asked load: both are inconclusive (as with pass_if).
            ratios = [g.loss_ratio for g in self.spec.search_goals()]
            passes_some, fails_some = loss <= max(ratios), loss > min(ratios)
            if measured is not None \
                    and (not passes_some or self.spec.conclusive(True, step.load, scalars)) \
                    and (not fails_some or self.spec.conclusive(False, step.load, scalars)):
                break
        else:
            loss = 1.0
            why = why or (f"{self.spec.offered} stayed more than "
                          f"{self.spec.offered_tolerance:.0%} off the asked load")
        search.record(loss)
        trial = search.trace[-1]
        measurements = _trace_measurements(result, ctx, Step(step.load, step.duration_s,
                                                             step.target),
                                           "search_loss_ratio", loss)
        notes = {**result.notes, "search.load": repr(step.load),
                 "search.duration_s": repr(step.duration_s), "search.phase": str(step.target),
                 "search.goal": self.spec.search_goals()[step.goal].name,
                 "search.loss_ratio": repr(loss), "search.failures": why,
                 "search.informs": ",".join(search.informs(trial)),
                 "search.attempts": str(attempt)}
        if self.spec.offered is not None and self.spec.offered in scalars:
            notes["search.offered"] = repr(scalars[self.spec.offered])
        if search.next() is None:
            measurements += _goal_measurements(search)
            notes["search.result"] = "; ".join(f"{r.goal.name}: {r.reason()}"
                                               for r in search.results())
        return TrialResult(measurements, result.artifacts, notes)

    def _after(self, ctx: TrialContext, result: SearchResult) -> TrialResult:
        """A trial at a fraction of the found load (latency below capacity)."""
        from virtbench.search import Step

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


def _trace_measurements(result: TrialResult, ctx: TrialContext, step: Step, verdict: str,
                        value: float) -> list[Measurement]:
    """A search trial's samples: the workload's own values and the step's load, duration and
    ``verdict`` metric, all in the series ``search`` (they describe one load, not a
    repetition, so they join the trace and stay out of the scalar statistics)."""
    labels = {"series": SEARCH_SERIES, "step": str(ctx.repetition), "phase": str(step.phase)}
    return [*(Measurement(m.metric, m.value, 0.0, {**m.labels, **labels}, m.status)
              if m.t is None else m for m in result.measurements),
            Measurement("search_load", step.load, 0.0, labels),
            Measurement(verdict, value, 0.0, labels),
            Measurement("search_duration", step.duration_s, 0.0, labels)]


def _round(spec: SearchSpec, load: float) -> float:
    return float(max(1, round(load))) if spec.integer else load


def _result_measurements(result: SearchResult) -> list[Measurement]:
    found = [Measurement("search_trials", float(result.trials))]
    if result.load is not None:
        found.append(Measurement("capacity", result.load))
    if result.upper is not None:
        found.append(Measurement("capacity_upper", result.upper))
    return found


def _goal_measurements(search: MultiSearch) -> list[Measurement]:
    results: list[GoalResult] = search.results()
    found = [Measurement("search_trials", float(len(search.trace))),
             Measurement("search_seconds", sum(t.duration_s for t in search.trace))]
    if results[0].lower is not None:
        found.append(Measurement("capacity", results[0].lower))
    for r in results:
        n = r.goal.name
        found.append(Measurement(f"{n}_regular", 1.0 if r.regular else 0.0))
        if r.lower is not None:
            found.append(Measurement(f"{n}_lower", r.lower))
        if r.upper is not None:
            found.append(Measurement(f"{n}_upper", r.upper))
        if r.conditional_throughput is not None:
            found.append(Measurement(f"{n}_throughput", r.conditional_throughput))
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
    if spec.goals and spec.loss not in declared:
        problems.append(f"search.loss: {inner.name} declares no metric '{spec.loss}' "
                        f"(metrics: {', '.join(sorted(declared))})")
    if problems:
        raise VirtbenchError("; ".join(problems))
    cls = type(inner)
    wrapper = type(f"Searched{cls.__name__}", (SearchedWorkload,), {
        "name": cls.name, "description": f"capacity search of {cls.name}: {cls.description}",
        "metrics": (*cls.metrics, *(goal_metrics(spec) if spec.goals
                                    else search_metrics(spec.unit))), "tools": cls.tools,
        "python_modules": cls.python_modules, "Params": cls.Params, "knobs": cls.knobs,
        "needs": cls.needs, "inner_class": cls})
    return wrapper(inner, spec)  # type: ignore[no-any-return]


def _search_notes(trials: Iterable[Mapping[str, Any]], variant: str, workload_id: str,
                  key: str) -> list[Mapping[str, str]]:
    """The notes of one search's stored trials that carry ``key``, in repetition order
    (``Store.trials`` rows: ok, not warm-up, not a ``latency_at`` trial)."""
    steps: dict[int, Mapping[str, str]] = {}
    for trial in trials:
        notes = trial.get("notes") or {}
        if (trial["variant"], trial["workload_id"]) == (variant, workload_id) \
                and trial["status"] == "ok" and not trial["warmup"] and key in notes \
                and "search.after" not in notes:
            steps[int(trial["repetition"])] = notes
    return [steps[i] for i in sorted(steps)]


def trace_from_trials(trials: Iterable[Mapping[str, Any]], variant: str,
                      workload_id: str) -> list[TraceEntry]:
    """The stored trace of one search, from the run's trial rows (``Store.trials``)."""
    from virtbench.search import TraceEntry

    return [TraceEntry(float(n["search.load"]), float(n["search.duration_s"]),
                       int(n["search.phase"]), n["search.passed"] == "1")
            for n in _search_notes(trials, variant, workload_id, "search.passed")]


def goal_trace_from_trials(trials: Iterable[Mapping[str, Any]], variant: str,
                           workload_id: str) -> list[Trial]:
    """The stored trials of one multi-goal search (load, duration, loss ratio), in order."""
    from virtbench.search.goals import Trial

    return [Trial(float(n["search.load"]), float(n["search.duration_s"]),
                  float(n["search.loss_ratio"]))
            for n in _search_notes(trials, variant, workload_id, "search.loss_ratio")]


def run_goal_search(workload: SearchedWorkload, variant: str, trace: list[Trial],
                    run_trial: Callable[[int], None]) -> list[GoalResult]:
    """Continue the multi-goal search of ``variant`` after ``trace`` until every goal has its
    result (``run_trial`` as for ``run_search``)."""
    from virtbench.search.multi import MultiSearch

    search = MultiSearch(workload.spec.multi_plan())
    search.replay(trace)
    workload.multi[variant] = search
    while search.next() is not None:
        run_trial(len(search.trace))
    return search.results()


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
    from virtbench.search import Search, SearchResult

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
