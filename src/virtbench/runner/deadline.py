"""The time limit of one trial.

A trial sees its target through :class:`DeadlineTarget`: every command it runs gets at most the
time left (the target ends the command's whole process group when that runs out: locally with
``killpg``, over SSH and the guest agent with ``timeout`` on the far side), and every process it
spawns is killed with its process group when the limit passes (SIGALRM in the main thread, a
timer thread elsewhere). A trial still stuck :data:`GRACE_S` later, in Python code of its own,
is interrupted by a second SIGALRM (main thread only). Whatever the workload returns or raises
after the limit, the trial failed with "time limit N s exceeded".
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from virtbench.targets.process import Process
from virtbench.targets.target_contract import ProcResult, Target

if TYPE_CHECKING:
    from virtbench.spec.models import WorkloadSpec
    from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload

__all__ = ["GRACE_S", "DeadlineTarget", "TimeLimitExceeded", "run_with_time_limit",
           "time_limits"]

GRACE_S = 5.0
"""After the limit, how long a trial still stuck (not in a command) gets before SIGALRM."""


class TimeLimitExceeded(Exception):
    """The trial ran longer than its workload's time limit."""


def time_limits(specs: Sequence[WorkloadSpec], workloads: Mapping[str, Workload]
                ) -> dict[str, float]:
    """Each workload's limit per trial (s): the experiment's ``timeout_s``, else its default."""
    return {spec.workload_id: spec.timeout_s or workloads[spec.workload_id].trial_time_limit_s()
            for spec in specs}


class _Deadline:
    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.ends_at = time.monotonic() + limit_s
        self._spawned: list[Process] = []
        # Re-entrant: the SIGALRM handler may run while the main thread holds it in track().
        self._lock = threading.RLock()

    def remaining(self) -> float:
        return self.ends_at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def clip(self, timeout: float | None) -> float:
        left = self.remaining()
        if left <= 0:
            raise TimeLimitExceeded(self.reason())
        return left if timeout is None else min(timeout, left)

    def reason(self) -> str:
        return f"time limit {self.limit_s:g} s exceeded"

    def track(self, proc: Process) -> None:
        with self._lock:
            self._spawned.append(proc)

    def kill_spawned(self) -> None:
        with self._lock:
            for proc in self._spawned:
                if proc.poll() is None:  # poll() never blocks, also inside a signal handler
                    proc.kill_group(reap=False)


class DeadlineTarget(Target):
    """``inner`` as one trial sees it: nothing it starts outlives the trial's time limit."""

    def __init__(self, inner: Target, deadline: _Deadline) -> None:
        self.inner = inner
        self.deadline = deadline
        self.name = inner.name

    def run(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
            cwd: str | None = None, timeout: float | None = None, input: str | None = None,
            check: bool = True) -> ProcResult:
        return self.inner.run(argv, env=env, cwd=cwd, timeout=self.deadline.clip(timeout),
                              input=input, check=check)

    def run_timed(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
                  timeout: float | None = None, check: bool = True) -> ProcResult:
        return self.inner.run_timed(argv, env=env, timeout=self.deadline.clip(timeout),
                                    check=check)

    def spawn(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
              cwd: str | None = None, stdout: int | None = subprocess.DEVNULL,
              stderr: int | None = subprocess.DEVNULL) -> Process:
        self.deadline.clip(None)
        proc = self.inner.spawn(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
        self.deadline.track(proc)
        return proc

    def which(self, binary: str) -> str | None:
        return self.inner.which(binary)

    def python(self) -> list[str]:
        return self.inner.python()

    def check(self) -> list[str]:
        return self.inner.check()

    def describe(self) -> str:
        return self.inner.describe()


def run_with_time_limit(run: Callable[[TrialContext], TrialResult], ctx: TrialContext,
                        limit_s: float) -> TrialResult:
    """``run(ctx)`` within ``limit_s`` seconds; TimeLimitExceeded when it took longer."""
    deadline = _Deadline(limit_s)
    limited = dataclasses.replace(ctx, target=DeadlineTarget(ctx.target, deadline))
    with _watchdog(deadline):
        try:
            result = run(limited)
        except Exception as exc:
            _raise_if_expired(deadline, exc)
            raise
    _raise_if_expired(deadline, None)
    return result


def _raise_if_expired(deadline: _Deadline, cause: Exception | None) -> None:
    # Also a trial that ended on its own, late: its numbers were not measured within the limit.
    if deadline.expired():
        deadline.kill_spawned()
        raise TimeLimitExceeded(deadline.reason()) from cause


@contextlib.contextmanager
def _watchdog(deadline: _Deadline) -> Iterator[None]:
    """At the limit, kill what the trial spawned; GRACE_S later, interrupt the trial itself.

    In the main thread this costs two system calls per trial (no thread is started).
    """
    if threading.current_thread() is not threading.main_thread():
        timer = threading.Timer(deadline.limit_s, deadline.kill_spawned)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
        return
    rings = 0

    def ring(_signum: int, _frame: FrameType | None) -> None:
        nonlocal rings
        rings += 1
        deadline.kill_spawned()  # a wait() on a spawned process now returns
        if rings > 1:  # once: the workload's own clean-up (finally:) then runs undisturbed
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise TimeLimitExceeded(deadline.reason())

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, deadline.limit_s, GRACE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
