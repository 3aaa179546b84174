"""The runner: one run of a plan, from its checks to its final status.

Three parts do the work, each in its own module: the run record (runner.record: opened new or
resumed, its status), the schedule (runner.schedule: which trial next, when to stop) and the
trial (runner.trial: setup, run under a time limit and the profiler, store, teardown). The
runner checks, opens the record, brings the lab up, hands the schedule its trials, and then —
whatever happened, Ctrl-C and SIGTERM included — tears down, stores the status and the
"after" facts."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from virtbench.facts import collect_facts
from virtbench.model import RunFailed, VirtbenchError
from virtbench.preflight import NoiseWatch, checks_facts, summary_line
from virtbench.runner.outcome import ProgressHook, RunOutcome
from virtbench.runner.plan import Plan, check_experiment, check_plan, make_profiler
from virtbench.runner.record import (
    Measured,
    RunRecord,
    refuse_if_running,
    sigterm_as_interrupt,
)
from virtbench.runner.schedule import Schedule
from virtbench.runner.trial import Trials, attempt
from virtbench.runner.trial_times import TrialTimes
from virtbench.store import StoreFailed
from virtbench.targets.factory import make_target
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["ProgressHook", "RunOutcome", "Runner", "check_experiment", "refuse_if_running",
           "sigterm_as_interrupt"]

# What stops a run without being a bug of virtbench (the CLI prints these without a traceback).
EXPECTED_FAILURES = (VirtbenchError, CommandFailed, OSError, subprocess.TimeoutExpired)


def default_work_root(experiment: str) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "virtbench" / "work" / experiment


class Runner:
    """Runs ``plan`` as the run ``record`` (a new one, or one to resume).

    ``target``: where it runs (default: the experiment's own; a fleet gives each host's);
    ``workdir``: the folder under which each run gets its own (default: the user's cache)."""

    def __init__(self, plan: Plan, record: RunRecord, *, target: Target | None = None,
                 progress: ProgressHook | None = None, noise: NoiseWatch | None = None,
                 workdir: Path | None = None) -> None:
        self.plan, self.record, self.noise = plan, record, noise
        self.progress = progress or ProgressHook()
        self.target = target or make_target(plan.experiment.target)
        self.profiler = make_profiler(plan.experiment, self.target, plan.time_limits)
        # Each run its own directory, so two runs of one experiment never share files.
        self.workdir = (workdir or default_work_root(plan.experiment.name)) / record.run_id
        self.lab = plan.make_lab(self.workdir, self.target)  # the run's one lab
        self._checked = False

    def check(self) -> None:
        """Everything that would stop the run (tools, target, lab, knobs), before anything runs;
        raises RunFailed listing them. ``run`` calls it unless it was called already."""
        problems = check_plan(self.plan, self.target, self.lab)
        if problems:
            raise RunFailed("cannot run; fix these first:\n  " + "\n  ".join(problems))
        self._checked = True

    def open_run(self, stop_reason: str) -> str:
        """Store the run without measuring anything, status 'interrupted' with
        ``stop_reason``: a Runner of ``RunRecord.resume`` measures it later (calibrate opens
        its K runs first, then runs them in blocks)."""
        self.record.open(self.plan, self.target.describe(), self.profiler)
        self.record.store.set_run_status(self.record.run_id, "interrupted", stop_reason)
        return self.record.run_id

    def run(self, *, rounds: int | None = None, facts: dict[str, Any] | None = None
            ) -> RunOutcome:
        """Run (or resume) the run to its end. ``rounds``: stop after this many repetition
        rounds that measure something (warm-up trials go with the first; a capacity search
        runs whole), leaving the run 'interrupted' and ``outcome.paused``; a later resume
        continues it. ``facts``: the target's facts collected by the caller minutes ago
        (calibrate's blocks), stored as this call's "before" facts instead of collecting them
        again; a paused call then collects no "after" facts either (its run's last call
        does)."""
        if not self._checked:
            self.check()
        measured = self.record.open(self.plan, self.target.describe(), self.profiler)
        self.workdir.mkdir(parents=True, exist_ok=True)
        outcome = RunOutcome(self.record.run_id, "running", "", 0, 0)
        trials = Trials(self.plan, self.record, self.lab, self.target, self.profiler, measured,
                        workdir=self.workdir, progress=self.progress, noise=self.noise,
                        outcome=outcome)
        failed: RunFailed | None = None  # raised once the run is cleaned up
        status_failed: StoreFailed | None = None
        with sigterm_as_interrupt():
            try:
                failed = self._measure(trials, measured, outcome, rounds, facts)
            finally:
                # Another error on its way (Ctrl-C, a bug) stays the one raised.
                status_failed = self._end(trials, outcome, facts,
                                          other_error=failed is None
                                          and sys.exc_info()[0] is not None)
        if failed is not None:
            raise _with_status(failed, status_failed)
        if status_failed is not None:
            raise status_failed
        return outcome

    # ---- internals -----------------------------------------------------------------------
    def _measure(self, trials: Trials, measured: Measured, outcome: RunOutcome,
                 rounds: int | None, facts: dict[str, Any] | None) -> RunFailed | None:
        """The run's trials; sets the outcome's status and reason. An expected failure (a lab
        that did not start, a full disk: the user's to fix, no bug) is returned, to raise
        once the run is cleaned up; Ctrl-C and bugs propagate."""
        run_id = self.record.run_id
        try:
            trials.facts_id = self.record.store.add_facts(
                run_id, "before", facts if facts is not None else collect_facts(self.target))
            self._preflight("start")
            self.lab.up()
            outcome.stop_reason = Schedule(
                self.plan, trials, self.record, blocked=self._blocked(), done=measured.done,
                rounds=rounds, between=self._preflight,
                round_due=lambda: self.noise is not None and self.noise.round_due(),
            ).run(outcome)
            outcome.status = "interrupted" if outcome.paused else "complete"
        except KeyboardInterrupt as exc:
            outcome.status = "interrupted"
            outcome.stop_reason = f"interrupted ({str(exc) or 'SIGINT'}); resume with --resume"
            raise
        except BaseException as exc:
            outcome.status = "failed"
            outcome.stop_reason = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, EXPECTED_FAILURES):
                raise
            failed = RunFailed(f"run {run_id} failed: {exc}")
            failed.__cause__ = exc
            return failed
        return None

    def _end(self, trials: Trials, outcome: RunOutcome, facts: dict[str, Any] | None, *,
             other_error: bool) -> StoreFailed | None:
        """Tear down, then — even after a second Ctrl-C during a slow lab.down() — store the
        status, the "after" facts and the trial times; the status the store refused, if any."""
        errors: list[str] = []
        try:
            trials.tear_down(errors)
            attempt(errors, self.lab.down)
            for error in errors:
                self.progress.message(f"cleanup problem: {error}")
        finally:
            status_failed = self.record.finish(outcome.status, outcome.stop_reason)
            if status_failed is not None and other_error:
                self.progress.message(f"run {self.record.run_id}: its status ({outcome.status})"
                                      f" was not stored either: {status_failed}")
                status_failed = None
            if facts is None or outcome.status != "interrupted":
                with contextlib.suppress(Exception):
                    self.record.store.add_facts(self.record.run_id, "after",
                                                collect_facts(self.target))
            with contextlib.suppress(Exception):  # only an estimate's input
                TrialTimes.load().add(trials.durations)
            self.target.close()
            self.progress.stop()
        return status_failed

    def _blocked(self) -> bool:
        order = self.plan.experiment.order
        if order == "auto":
            return self.lab.switch_cost == "expensive"
        return order == "blocked"

    def _preflight(self, label: str) -> None:
        """Noise checks, stored as facts of phase 'preflight <label>' and printed."""
        if self.noise is None:
            return
        checks = (self.noise.at_start() if label == "start"
                  else self.noise.checks(self.noise.between_seconds))
        self.record.store.add_facts(self.record.run_id, f"preflight {label}",
                                    checks_facts(checks))
        self.progress.message(summary_line(label, checks))


def _with_status(failed: RunFailed, status_failed: StoreFailed | None) -> RunFailed:
    """The run's failure, saying also that its status could not be stored."""
    if status_failed is None:
        return failed
    said = RunFailed(f"{failed}; its status (failed) was not stored either "
                     f"({status_failed.reason}): `virtbench runs` shows it abandoned "
                     f"until it is resumed or deleted")
    said.__cause__ = status_failed
    return said
