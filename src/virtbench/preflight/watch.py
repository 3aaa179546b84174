"""The noise checks as a run uses them: before it starts, between blocks, and per trial."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from typing import Any

from virtbench.preflight.checks import Check, Status, run_checks
from virtbench.preflight.ownership import MARKER_VARIABLE, RunProcesses
from virtbench.preflight.procfs import HostReader
from virtbench.preflight.run_pidfiles import RunRegistry
from virtbench.preflight.thresholds import DEFAULT_THRESHOLDS, Thresholds
from virtbench.preflight.trial_noise import TrialNoise, TrialSample

__all__ = ["NoiseWatch", "TrialSample", "checks_facts", "summary_line"]


class NoiseWatch:
    """Runs the checks for one run; ``initial`` holds checks the CLI took before the run."""

    def __init__(self, reader: HostReader | None = None, limits: Thresholds = DEFAULT_THRESHOLDS,
                 registry: RunRegistry | None = None, seconds: float = 1.0,
                 between_seconds: float = 0.5, rounds_every_s: float = 30.0) -> None:
        self.reader = reader or HostReader()
        self.limits = limits
        self.registry = registry or RunRegistry(reader=self.reader)
        self.seconds = seconds
        self.between_seconds = between_seconds
        # Rounds of short trials come every few seconds: check between them at most this often.
        self.rounds_every_s = rounds_every_s
        self._last = -math.inf
        self.ours = RunProcesses(self.reader)
        self.per_trial = TrialNoise(self.reader)
        self.initial: list[Check] | None = None

    def checks(self, seconds: float | None = None) -> list[Check]:
        self._last = time.monotonic()
        return run_checks(self.reader, self.ours, self.registry, self.limits,
                          self.seconds if seconds is None else seconds)

    def round_due(self) -> bool:
        """Whether a check between repetition rounds is due (blocks are always checked)."""
        return time.monotonic() - self._last >= self.rounds_every_s

    def at_start(self) -> list[Check]:
        """The checks taken before the run (if the CLI took them), else fresh ones."""
        taken, self.initial = self.initial, None
        return taken if taken is not None else self.checks()

    @contextlib.contextmanager
    def registered(self, experiment: str) -> Iterator[None]:
        """While the run is on: its pid file, and the environment marker that makes processes
        it starts (even daemons that detach) count as the run's own."""
        before = os.environ.get(MARKER_VARIABLE)
        self.ours = RunProcesses.with_new_marker(self.reader)
        self.per_trial = TrialNoise(self.reader)  # its tracked processes came from the old marker
        try:
            with self.registry.registered(experiment):
                yield
        finally:  # a process that runs more than once (tests, a library user) starts clean
            if before is None:
                os.environ.pop(MARKER_VARIABLE, None)

    def trial(self) -> TrialSample:
        """Steal and foreign load over the trial that starts now (cheap: see trial_noise)."""
        return TrialSample(self.per_trial, self.ours, self.limits)


def checks_facts(checks: list[Check]) -> dict[str, Any]:
    return {"checks": [c.as_dict() for c in checks]}


def summary_line(label: str, checks: list[Check]) -> str:
    """'preflight (start): fail foreign_load 62.0 % of 2 CPUs; warn transparent_hugepages'."""
    parts = [f"{c.status.value} {c.name} {c.value}" for c in checks if c.status == Status.FAIL]
    parts += [f"{c.status.value} {c.name}" for c in checks if c.status == Status.WARN]
    return f"preflight ({label}): " + ("; ".join(parts) if parts else "all checks ok")
