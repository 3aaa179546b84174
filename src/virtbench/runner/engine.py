"""The runner: plans trials, drives labs and workloads, commits every sample as it is measured."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from virtbench import __version__
from virtbench.facts import collect_facts
from virtbench.labs.base import LabState
from virtbench.model import RunFailed, VirtbenchError
from virtbench.preflight import NoiseWatch, checks_facts, summary_line
from virtbench.profiling import PROFILE_UNITS
from virtbench.runner.adaptive import unconverged_pairs
from virtbench.runner.deadline import run_with_time_limit
from virtbench.runner.plan import Plan, build_plan, check_experiment, check_plan, make_profiler
from virtbench.runner.schedule import Pair, TrialKey, blocked_variant_order, round_order
from virtbench.runner.search import (
    SearchedWorkload,
    after_from_trials,
    run_search,
    trace_from_trials,
)
from virtbench.runner.trial_times import TrialTimes, trial_key
from virtbench.spec.models import Adaptive, Experiment
from virtbench.spec.resolve import ResolvedExperiment
from virtbench.store import RunInfo, Store, StoreFailed, TrialRecord
from virtbench.store.ids import check_run_id
from virtbench.targets.base import CommandFailed, Target
from virtbench.targets.factory import make_target
from virtbench.workloads.base import TrialContext, Workload

__all__ = ["ProgressHook", "RunOutcome", "Runner", "check_experiment", "refuse_if_running",
           "sigterm_as_interrupt"]

MAX_CONSECUTIVE_FAILURES = 3
# What stops a run without being a bug of virtbench (the CLI prints these without a traceback).
EXPECTED_FAILURES = (VirtbenchError, CommandFailed, OSError, subprocess.TimeoutExpired)


class ProgressHook:
    """Receives progress events; the CLI renders them with rich. The default does nothing."""

    def start(self, total: int) -> None: ...
    def advance(self, key: TrialKey, ok: bool) -> None: ...
    def set_total(self, total: int) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


@dataclass
class RunOutcome:
    run_id: str
    status: str
    stop_reason: str
    trials: int
    failures: int
    repetitions: dict[Pair, int] = field(default_factory=dict)
    paused: bool = False
    """stopped by ``run(rounds=N)`` with repetitions left: status 'interrupted', resumable"""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGHUP) clean up like Ctrl-C does, instead of killing us mid-write."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield  # a fleet's per-host runner: signals reach the main thread, which stops us
        return

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def refuse_if_running(info: RunInfo) -> None:
    """A run whose process still runs it (or may: on another host) is not resumed: two
    processes would measure its remaining trials twice."""
    if info.status != "running" or info.owner_pid is None:  # None: recorded before schema 5
        return
    if info.owner_host == socket.gethostname():
        raise VirtbenchError(f"run {info.id} is still running ({info.owner}); wait for it to "
                             "end, or stop that process, then resume")
    raise VirtbenchError(f"run {info.id} is marked running by {info.owner}, which this host "
                         "cannot check; resume it on that host once it has stopped")


def spec_digest(spec_yaml: str) -> str:
    return hashlib.sha256(spec_yaml.encode()).hexdigest()[:16]


class Runner:
    def __init__(self, store: Store, exp: Experiment | ResolvedExperiment | Plan,
                 spec_yaml: str, spec_path: str = "",
                 progress: ProgressHook | None = None, workdir: Path | None = None,
                 noise: NoiseWatch | None = None, target: Target | None = None,
                 host_label: str | None = None, run_id: str | None = None) -> None:
        self.store = store
        # One build step (runner.plan): workloads, realisations and time limits come from the
        # plan, built here only for an experiment given unplanned.
        self.plan = exp if isinstance(exp, Plan) else build_plan(exp)
        self.exp = self.plan.experiment
        self.spec_yaml = spec_yaml
        self.spec_path = spec_path
        self.progress = progress or ProgressHook()
        # A fleet gives each host's runner its own target, label and pre-chosen run id.
        self.target = target or make_target(self.exp.target)
        self.host_label = host_label or socket.gethostname()
        self.new_run_id = run_id
        self.workloads = self.plan.workloads
        self.time_limits = self.plan.time_limits
        self.profiler = make_profiler(self.exp, self.target, self.time_limits)
        self.variants = self.plan.variants
        self.baseline = self.plan.baseline
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        # Each run gets its own directory under this one, so two runs of one experiment at the
        # same time never share files.
        self.work_root = workdir or cache / "virtbench" / "work" / self.exp.name
        self.workdir = self.work_root
        self.lab = self.plan.make_lab(self.workdir, self.target)  # the run's one lab
        self._values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        self._setup_done: set[Pair] = set()
        self._setup_states: dict[Pair, LabState] = {}
        self._order_index = 0
        self._failures_in_a_row = 0
        self._facts_id: int | None = None
        self.noise = noise
        self._checked = False
        # Durations of this run's measured trials by trial_key, kept for run --check's
        # estimate of later runs (runner.trial_times).
        self._durations: dict[str, list[float]] = defaultdict(list)
        self._duration_keys: dict[Pair, str] = {}
        self._round_limit: int | None = None
        self._rounds_measured = 0  # in this call of run(), for its round limit

    # ---- public --------------------------------------------------------------------------
    def check(self) -> None:
        """Everything that would stop the run (tools, target, lab, knobs), before anything runs;
        raises RunFailed listing them. ``run`` calls it unless it was called already."""
        problems = check_plan(self.plan, self.target, self.lab)
        if problems:
            raise RunFailed("cannot run; fix these first:\n  " + "\n  ".join(problems))
        self._checked = True

    def open_run(self, stop_reason: str, *, calibration: str | None = None) -> str:
        """Store the run (its variants and workloads) without measuring anything, status
        'interrupted' with ``stop_reason``: ``run(resume_run_id=...)`` measures it later
        (calibrate opens its K runs first, tagged with its ``calibration`` id, then runs them
        in blocks)."""
        run_id = self._open_run(None, calibration)
        self.store.set_run_status(run_id, "interrupted", stop_reason)
        return run_id

    def run(self, resume_run_id: str | None = None, *, rounds: int | None = None,
            facts: dict[str, Any] | None = None) -> RunOutcome:
        """Run (or resume) the run to its end. ``rounds``: stop after this many repetition
        rounds that measure something (warm-up trials go with the first; a capacity search
        runs whole), leaving the run 'interrupted' and ``outcome.paused``; a later
        ``run(resume_run_id=...)`` continues it. A run whose last round falls in the limit
        completes as usual. ``facts``: the target's facts collected by the caller minutes ago
        (calibrate's blocks), stored as this call's "before" facts instead of collecting them
        again; a paused call then collects no "after" facts either (its run's last call
        does)."""
        if not self._checked:
            self.check()
        self._round_limit, self._rounds_measured = rounds, 0
        run_id = self._open_run(resume_run_id)
        self.workdir = self.work_root / run_id
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.lab.workdir = self.workdir
        outcome = RunOutcome(run_id, "running", "", 0, 0)
        failed: RunFailed | None = None  # raised once the run is cleaned up and its status kept
        with sigterm_as_interrupt():
            try:
                self._facts_id = self.store.add_facts(
                    run_id, "before", facts if facts is not None else collect_facts(self.target))
                self._preflight(run_id, "start")
                self.lab.up()
                outcome.stop_reason = self._execute(run_id, outcome)
                outcome.status = "interrupted" if outcome.paused else "complete"
            except KeyboardInterrupt as exc:
                outcome.status = "interrupted"
                outcome.stop_reason = f"interrupted ({str(exc) or 'SIGINT'}); resume with --resume"
                raise
            except BaseException as exc:
                outcome.status = "failed"
                outcome.stop_reason = f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, EXPECTED_FAILURES):  # a lab that did not start, a full
                    raise                                    # disk: the user's to fix, no bug
                failed = RunFailed(f"run {run_id} failed: {exc}")
                failed.__cause__ = exc
            finally:
                try:
                    self._cleanup()
                finally:
                    # Even a second Ctrl-C during a slow lab.down() must not leave the run
                    # marked as running. Another error on its way (Ctrl-C, a bug) stays the
                    # one raised.
                    other = failed is None and sys.exc_info()[0] is not None
                    status_failed = self._store_status(run_id, outcome, other)
                    if facts is None or outcome.status != "interrupted":
                        with contextlib.suppress(Exception):
                            self.store.add_facts(run_id, "after", collect_facts(self.target))
                    with contextlib.suppress(Exception):  # only an estimate's input
                        TrialTimes.load().add(self._durations)
                    self.target.close()
                    self.progress.stop()
                    if failed is not None:
                        if status_failed is not None:  # said with the run's own error
                            failed = RunFailed(
                                f"{failed}; its status (failed) was not stored either "
                                f"({status_failed.reason}): `virtbench runs` shows it abandoned "
                                f"until it is resumed or deleted")
                            failed.__cause__ = status_failed
                        raise failed
                    if status_failed is not None:
                        raise status_failed
        return outcome

    # ---- internals -----------------------------------------------------------------------
    def _store_status(self, run_id: str, outcome: RunOutcome,
                      other_error: bool) -> StoreFailed | None:
        """Store the run's final status. When the store cannot take it (its disk is still
        full), the error, for the caller to raise once the rest is cleaned up (with the run's
        own failure, when it failed); while ``other_error`` is on its way (Ctrl-C, a bug), a
        message instead. `virtbench runs` shows such a run as abandoned."""
        try:
            self.store.set_run_status(run_id, outcome.status, outcome.stop_reason)
        except StoreFailed as exc:
            if not other_error:
                return exc
            self.progress.message(f"run {run_id}: its status ({outcome.status}) was not stored "
                                  f"either: {exc}")
        return None

    def _open_run(self, resume_run_id: str | None, calibration: str | None = None) -> str:
        if resume_run_id is not None:
            info = self.store.run(resume_run_id)
            # an older store's id outside the grammar can be read, not resumed: the run id
            # names the work directory
            check_run_id(info.id, "run id")
            if spec_digest(info.spec_yaml) != spec_digest(self.spec_yaml):
                raise VirtbenchError(
                    f"run {info.id} was started from a different experiment file; "
                    "resume needs the same file (or start a new run)")
            if info.status == "complete":
                raise VirtbenchError(f"run {info.id} is already complete")
            refuse_if_running(info)
            if not self.store.claim_run(info):
                raise VirtbenchError(f"run {info.id} was resumed by another process just now; "
                                     "`virtbench runs` shows it")
            for row in self.store.samples(info.id):
                if row.t is None and row.value is not None:
                    self._values[(row.variant, row.workload_id, row.metric)].append(row.value)
            self._order_index = self.store.next_order_index(info.id)
            return info.id
        run_id = self.store.create_run(
            experiment=self.exp.name, description=self.exp.description,
            spec_yaml=self.spec_yaml, spec_path=self.spec_path, seed=self.exp.seed,
            host=self.host_label, target=self.target.describe(), baseline=self.baseline,
            version=__version__, run_id=self.new_run_id, calibration=calibration)
        self.store.add_variants(
            run_id, [(name, dict(knobs)) for name, knobs in self.variants.items()],
            self.baseline)
        for position, (workload_id, workload) in enumerate(self.workloads.items()):
            self.store.add_workload(run_id, workload_id, workload.name, position,
                                    workload.params.model_dump(mode="json"),
                                    [*workload.active_metrics(),
                                     *self.profiler.metrics(workload_id)])
        return run_id

    def _pairs(self) -> list[Pair]:
        return [(v, w) for v in self.variants for w in self.workloads]

    def _blocked(self) -> bool:
        if self.exp.order == "auto":
            return self.lab.switch_cost == "expensive"
        return self.exp.order == "blocked"

    def _execute(self, run_id: str, outcome: RunOutcome) -> str:
        done = self.store.completed_trials(run_id)
        rule = self.exp.repetitions
        max_reps = rule.max if isinstance(rule, Adaptive) else rule
        pairs = self._pairs()
        total = len(pairs) * (max_reps + self.exp.warmup) - len(done)
        self.progress.start(total)
        if self._blocked():
            reasons: list[str] = []
            for variant in blocked_variant_order(list(self.variants), self.exp.seed):
                block = [p for p in pairs if p[0] == variant]
                if reasons:  # the first block follows the start's checks directly
                    self._preflight(run_id, f"before block {variant}")
                with self._entered(variant) as state:
                    reasons.append(self._rounds(run_id, block, state, done, outcome))
                if outcome.paused:
                    return reasons[-1]
            return "; ".join(sorted(set(reasons)))
        return self._rounds(run_id, pairs, None, done, outcome)

    def _rounds(self, run_id: str, pairs: list[Pair], state: LabState | None,
                done: set[tuple[str, str, int]], outcome: RunOutcome) -> str:
        rule = self.exp.repetitions
        adaptive = rule if isinstance(rule, Adaptive) else None
        max_reps = adaptive.max if adaptive else int(rule)  # type: ignore[arg-type]
        started = time.monotonic()
        searches = [p for p in pairs if isinstance(self.workloads[p[1]], SearchedWorkload)]
        if searches:
            self._searches(run_id, searches, state, outcome)
            pairs = [p for p in pairs if p not in searches]
            if not pairs:
                return "capacity searches done"
        for warm in range(self.exp.warmup):
            for key in round_order(pairs, -1 - warm, self.exp.seed):
                if not any(d[0] == key.variant and d[1] == key.workload_id for d in done):
                    self._trial(run_id, TrialKey(key.variant, key.workload_id, -1 - warm, True),
                                state, outcome)
        active = list(pairs)
        primaries = {w: wl.primary_metrics() for w, wl in self.workloads.items()}
        for repetition in range(max_reps):
            if adaptive and repetition >= adaptive.min:
                active = unconverged_pairs(active, self._values, primaries, adaptive,
                                           self.baseline)
                if not active:
                    self.progress.set_total(outcome.trials)
                    return f"converged: every primary metric within ±{adaptive.target_rel_ci:.1%}"
                if adaptive.budget_s and time.monotonic() - started > adaptive.budget_s:
                    return f"time budget of {adaptive.budget_s:g} s spent before convergence"
            keys = [key for key in round_order(active, repetition, self.exp.seed)
                    if (key.variant, key.workload_id, key.repetition) not in done]
            if keys and self._round_limit is not None:
                if self._rounds_measured >= self._round_limit:
                    outcome.paused = True
                    return (f"paused after {self._rounds_measured} repetition round(s), as "
                            "asked; resuming continues it")
                self._rounds_measured += 1  # blocked: counted over the variants' blocks
            if state is None and repetition > 0 and self.noise and self.noise.round_due():
                self._preflight(run_id, f"before round {repetition + 1}")  # interleaved
            for key in keys:
                self._trial(run_id, key, state, outcome)
                outcome.repetitions[(key.variant, key.workload_id)] = repetition + 1
        if adaptive:
            return f"repetition budget ({adaptive.max}) spent before convergence"
        return f"fixed repetitions ({max_reps})"

    def _searches(self, run_id: str, pairs: list[Pair], state: LabState | None,
                  outcome: RunOutcome) -> None:
        """Each searched (variant, workload) to its result, continuing a stored trace."""
        trials = self.store.trials(run_id)
        for key in round_order(pairs, 0, self.exp.seed):
            workload = self.workloads[key.workload_id]
            assert isinstance(workload, SearchedWorkload)

            def step(index: int, key: TrialKey = key) -> None:
                self._trial(run_id, TrialKey(key.variant, key.workload_id, index), state,
                            outcome)

            run_search(workload, key.variant,
                       trace_from_trials(trials, key.variant, key.workload_id), step,
                       after_from_trials(trials, key.variant, key.workload_id))

    @contextlib.contextmanager
    def _entered(self, variant: str) -> Iterator[LabState]:
        if self.lab.switch_cost == "expensive":
            self.progress.message(f"entering variant {variant}")
        state = self.lab.enter(variant, self.lab.own_knobs(self.variants[variant]))
        try:
            yield state
        finally:
            self.lab.leave(variant)

    def _context(self, key: TrialKey, state: LabState) -> tuple[TrialContext, Workload]:
        workload = self.workloads[key.workload_id]
        pair = (key.variant, key.workload_id)
        realisation = self.plan.realisations[pair]
        seed = int(hashlib.sha256(f"{self.exp.seed}:{key}".encode()).hexdigest()[:8], 16)
        ctx = TrialContext(
            target=state.target or self.target, variant=key.variant,
            knobs=self.variants[key.variant], workdir=self.workdir, repetition=key.repetition,
            seed=seed, env={**state.env, **realisation.env}, services=state.services,
            realisation=realisation)
        return ctx, workload

    def _trial(self, run_id: str, key: TrialKey, state: LabState | None,
               outcome: RunOutcome) -> None:
        if state is None:  # interleaved, cheap lab: enter around each trial
            with self._entered(key.variant) as entered:
                self._trial_in(run_id, key, entered, outcome)
        else:
            self._trial_in(run_id, key, state, outcome)

    def _trial_in(self, run_id: str, key: TrialKey, state: LabState,
                  outcome: RunOutcome) -> None:
        ctx, workload = self._context(key, state)
        pair = (key.variant, key.workload_id)
        if pair not in self._setup_done:
            self._record_realisation(run_id, pair, state, ctx.env)
            if state.target is not None:  # the lab's own target (a guest): check it there too
                problems = workload.check(state.target)
                if problems:
                    raise RunFailed("cannot run; fix these first:\n  "
                                         + "\n  ".join(problems))
            workload.setup(ctx)
            self._setup_done.add(pair)
            self._setup_states[pair] = state
        started = time.time()
        error = ""
        measurements = []
        artifacts: list[Any] = []
        notes: dict[str, str] = {}
        noise = self.noise.trial() if self.noise else None
        try:
            with self.profiler.trial(key.workload_id, key.repetition, key.warmup, ctx.target,
                                     self.lab.serving_daemons) as profile:  # docs/explain.md
                result = run_with_time_limit(workload.run, ctx, self.time_limits[key.workload_id])
                profile.window = result.window
            declared = {m.name: m for m in workload.metrics}
            undeclared = sorted({m.metric for m in result.measurements} - set(declared))
            if undeclared:
                raise VirtbenchError(f"{workload.name} returned undeclared metrics: "
                                     f"{', '.join(undeclared)}")
            measurements = [*result.measurements, *profile.measurements]
            artifacts = [*result.artifacts, *profile.artifacts]
            notes = {**result.notes, **profile.notes}
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        ended = time.time()
        if noise is not None:  # steal and foreign load during the trial, for the report's marks
            notes = {**notes, **noise.notes()}
        units = {m.name: m.unit for m in workload.metrics} | PROFILE_UNITS
        self.store.record_trial(run_id, TrialRecord(
            variant=key.variant, workload_id=key.workload_id, repetition=key.repetition,
            order_index=self._order_index, warmup=key.warmup,
            status="failed" if error else "ok", error=error, started_at=started,
            ended_at=ended, target=ctx.target.describe(), facts_id=self._facts_id,
            notes=notes), measurements, units, artifacts)
        self._order_index += 1
        outcome.trials += 1
        self.progress.advance(key, not error)
        if error:
            outcome.failures += 1
            self._failures_in_a_row += 1
            self.progress.message(f"trial {key.variant}/{key.workload_id} failed: {error}")
            if self._failures_in_a_row >= MAX_CONSECUTIVE_FAILURES:
                raise VirtbenchError(f"{MAX_CONSECUTIVE_FAILURES} trials failed in a row; "
                                     f"last: {error}")
            return
        self._failures_in_a_row = 0
        if not key.warmup and not isinstance(workload, SearchedWorkload):
            self._durations[self._duration_key(pair)].append(ended - started)
        if not key.warmup:
            for m in measurements:
                if m.t is None and m.value is not None:
                    self._values[(key.variant, key.workload_id, m.metric)].append(m.value)

    def _duration_key(self, pair: Pair) -> str:
        if pair not in self._duration_keys:
            workload = self.workloads[pair[1]]
            self._duration_keys[pair] = trial_key(
                workload.name, workload.params.model_dump(mode="json"), self.variants[pair[0]])
        return self._duration_keys[pair]

    def _preflight(self, run_id: str, label: str) -> None:
        """Noise checks, stored as facts of phase 'preflight <label>' and printed."""
        if self.noise is None:
            return
        checks = (self.noise.at_start() if label == "start"
                  else self.noise.checks(self.noise.between_seconds))
        self.store.add_facts(run_id, f"preflight {label}", checks_facts(checks))
        self.progress.message(summary_line(label, checks))

    def _record_realisation(self, run_id: str, pair: Pair, state: LabState,
                            env: dict[str, str | None]) -> None:
        realisation = self.plan.realisations[pair]
        settings: dict[str, Any] = dict(realisation.settings)
        settings.update({f"lab.{k}": v for k, v in state.notes.items()})
        self.store.add_realisation(run_id, pair[0], pair[1], realisation.mechanism, settings,
                                   realisation.limitations, env)

    def _cleanup(self) -> None:
        errors: list[str] = []
        for variant, workload_id in sorted(self._setup_done):
            # Teardown runs where setup ran: on the lab's target of that variant, if any.
            state = self._setup_states.get((variant, workload_id), LabState())
            ctx, workload = self._context(TrialKey(variant, workload_id, 0), state)
            _try(errors, functools.partial(workload.teardown, ctx))
        _try(errors, self.lab.down)
        for error in errors:
            self.progress.message(f"cleanup problem: {error}")


def _try(errors: list[str], action: Callable[[], object]) -> None:
    try:
        action()
    except Exception as exc:  # keep cleaning up the rest; report every failure
        errors.append(f"{type(exc).__name__}: {exc}")


