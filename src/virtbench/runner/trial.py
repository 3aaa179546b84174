"""The trial: setup → run under its time limit and profiler → record → teardown.

Each (variant, workload) is set up once, before its first trial, with that trial's context;
every trial then runs under the workload's time limit (runner.deadline) and the profiler,
and is stored the moment it ends, failed or not; at the end of the run each workload is torn
down with the very context it was set up with (its lab state's target, env and services)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import Measurement, RunFailed, VirtbenchError
from virtbench.profiling import PROFILE_UNITS
from virtbench.runner.deadline import run_with_time_limit
from virtbench.runner.outcome import ProgressHook, RunOutcome
from virtbench.runner.plan import Plan
from virtbench.runner.record import Measured, RunRecord
from virtbench.runner.schedule import Pair, TrialKey
from virtbench.runner.search import SearchedWorkload
from virtbench.runner.trial_times import trial_key
from virtbench.store import TrialRecord
from virtbench.targets.target_contract import Target
from virtbench.workloads.workload_contract import TrialContext

if TYPE_CHECKING:
    from virtbench.preflight import NoiseWatch
    from virtbench.profiling import Profiler

__all__ = ["MAX_CONSECUTIVE_FAILURES", "Trials"]

MAX_CONSECUTIVE_FAILURES = 3


@dataclass
class _Taken:
    """What one trial gave: its samples, files and notes, or the error that ended it."""

    measurements: list[Measurement] = field(default_factory=list)
    artifacts: list[Any] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    error: str = ""


class Trials:
    """Runs and stores the trials of one run, in the order the schedule asks for them."""

    def __init__(self, plan: Plan, record: RunRecord, lab: Lab, target: Target,
                 profiler: Profiler, measured: Measured, *, workdir: Path,
                 progress: ProgressHook, noise: NoiseWatch | None, outcome: RunOutcome) -> None:
        self.plan, self.record, self.lab, self.target = plan, record, lab, target
        self.profiler, self.workdir, self.progress = profiler, workdir, progress
        self.noise, self.outcome = noise, outcome
        self.values = measured.values
        """Scalar values measured so far by (variant, workload id, metric): adaptive stopping"""
        self.durations: dict[str, list[float]] = defaultdict(list)
        """This run's measured trial times by trial_key, for run --check's later estimates"""
        self.facts_id: int | None = None
        """The run's "before" facts, which every trial refers to"""
        self._order_index = measured.next_order_index
        self._failures_in_a_row = 0
        self._set_up: dict[Pair, TrialContext] = {}
        self._declared = {w: {m.name for m in wl.metrics} for w, wl in plan.workloads.items()}
        self._units = {w: {m.name: m.unit for m in wl.metrics} | PROFILE_UNITS
                       for w, wl in plan.workloads.items()}
        self._duration_keys = {
            (v, w): trial_key(wl.name, wl.params.model_dump(mode="json"), knobs)
            for v, knobs in plan.variants.items() for w, wl in plan.workloads.items()}

    @contextlib.contextmanager
    def entered(self, variant: str) -> Iterator[LabState]:
        """The lab in ``variant`` for the block."""
        if self.lab.switch_cost == "expensive":
            self.progress.message(f"entering variant {variant}")
        state = self.lab.enter(variant, self.lab.own_knobs(self.plan.variants[variant]))
        try:
            yield state
        finally:
            self.lab.leave(variant)

    def run(self, key: TrialKey, state: LabState | None) -> None:
        """One trial, stored; ``state`` None: the lab (cheap to switch) enters around it."""
        if state is not None:
            self._run(key, state)
            return
        with self.entered(key.variant) as entered:
            self._run(key, entered)

    def tear_down(self, errors: list[str]) -> None:
        """Every workload set up, with the context it was set up with; each failure is
        appended to ``errors`` and the rest still torn down."""
        for (_variant, workload_id), ctx in sorted(self._set_up.items()):
            attempt(errors, functools.partial(self.plan.workloads[workload_id].teardown, ctx))

    # ---- one trial -----------------------------------------------------------------------
    def _run(self, key: TrialKey, state: LabState) -> None:
        ctx = self._context(key, state)
        pair = (key.variant, key.workload_id)
        if pair not in self._set_up:
            self._set_up_pair(pair, ctx, state)
        started = time.time()
        noise = self.noise.trial() if self.noise else None
        taken = self._measure(key, ctx)
        ended = time.time()
        if noise is not None:  # steal and foreign load during the trial, for the report's marks
            taken.notes = {**taken.notes, **noise.notes()}
        self.record.store.record_trial(self.record.run_id, TrialRecord(
            variant=key.variant, workload_id=key.workload_id, repetition=key.repetition,
            order_index=self._order_index, warmup=key.warmup,
            status="failed" if taken.error else "ok", error=taken.error, started_at=started,
            ended_at=ended, target=ctx.target.describe(), facts_id=self.facts_id,
            notes=taken.notes), taken.measurements, self._units[key.workload_id],
            taken.artifacts)
        self._order_index += 1
        self._count(key, taken, ended - started)

    def _context(self, key: TrialKey, state: LabState) -> TrialContext:
        realisation = self.plan.realisations[(key.variant, key.workload_id)]
        seed = int(hashlib.sha256(f"{self.plan.experiment.seed}:{key}".encode()).hexdigest()[:8],
                   16)
        return TrialContext(
            target=state.target or self.target, variant=key.variant,
            knobs=self.plan.variants[key.variant], workdir=self.workdir,
            repetition=key.repetition, seed=seed, env={**state.env, **realisation.env},
            services=state.services, realisation=realisation)

    def _set_up_pair(self, pair: Pair, ctx: TrialContext, state: LabState) -> None:
        realisation = self.plan.realisations[pair]
        settings: dict[str, Any] = dict(realisation.settings)
        settings.update({f"lab.{k}": v for k, v in state.notes.items()})
        self.record.store.add_realisation(self.record.run_id, pair[0], pair[1],
                                          realisation.mechanism, settings,
                                          [*realisation.limitations, *state.caveats], ctx.env)
        workload = self.plan.workloads[pair[1]]
        if state.target is not None:  # the lab's own target (a guest): check it there too
            problems = workload.check(state.target)
            if problems:
                raise RunFailed("cannot run; fix these first:\n  " + "\n  ".join(problems))
        workload.setup(ctx)
        self._set_up[pair] = ctx

    def _measure(self, key: TrialKey, ctx: TrialContext) -> _Taken:
        workload = self.plan.workloads[key.workload_id]
        try:
            with self.profiler.trial(key.workload_id, key.repetition, key.warmup, ctx.target,
                                     self.lab.serving_daemons,
                                     ctx.services) as profile:  # docs/explain.md
                result = run_with_time_limit(workload.run, ctx,
                                             self.plan.time_limits[key.workload_id])
                profile.window = result.window
            undeclared = sorted({m.metric for m in result.measurements}
                                - self._declared[key.workload_id])
            if undeclared:
                raise VirtbenchError(f"{workload.name} returned undeclared metrics: "
                                     f"{', '.join(undeclared)}")
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:
            return _Taken(error=f"{type(exc).__name__}: {exc}")
        return _Taken([*result.measurements, *profile.measurements],
                      [*result.artifacts, *profile.artifacts], {**result.notes, **profile.notes})

    def _count(self, key: TrialKey, taken: _Taken, duration_s: float) -> None:
        """The outcome's counts, the failures in a row (three stop the run), the values and
        durations measured."""
        self.outcome.trials += 1
        self.progress.advance(key, not taken.error)
        if taken.error:
            self.outcome.failures += 1
            self._failures_in_a_row += 1
            self.progress.message(f"trial {key.variant}/{key.workload_id} failed: "
                                  f"{taken.error}")
            if self._failures_in_a_row >= MAX_CONSECUTIVE_FAILURES:
                raise VirtbenchError(f"{MAX_CONSECUTIVE_FAILURES} trials failed in a row; "
                                     f"last: {taken.error}")
            return
        self._failures_in_a_row = 0
        if key.warmup:
            return
        pair = (key.variant, key.workload_id)
        if not isinstance(self.plan.workloads[key.workload_id], SearchedWorkload):
            self.durations[self._duration_keys[pair]].append(duration_s)
        for m in taken.measurements:
            if m.t is None and m.value is not None:
                self.values[(key.variant, key.workload_id, m.metric)].append(m.value)


def attempt(errors: list[str], action: Callable[[], object]) -> None:
    """``action()``; its failure is appended to ``errors`` (clean-up goes on with the rest)."""
    try:
        action()
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
