"""Steal and foreign load per trial, cheaply enough for a trial of `true` (well under 0.1 ms).

Reading every /proc/PID/stat costs milliseconds here, more than a short trial. So per trial this
reads only /proc/stat (busy and steal ticks), this process's CPU time with its reaped
children's (getrusage), and /proc/PID/stat of the few processes a full scan found that are the
run's own but outside that count (lab daemons, children still running) or kernel threads that
were busy (they work for everyone, e.g. softirq for our own traffic). The busy time left over
is foreign. A full scan runs at the first trial, at a trial that follows a pause longer than
the window (a lab switch, say), and, at most once per ``rescan_every_s``, when the leftover is
high: it finds the run's new processes and newly busy kernel threads.

Tick counters move in whole ticks (10 ms): over a 0.2 ms trial they show 0 or 1. So a trial's
figures cover a window of at least ``window_s`` that ends with the trial (the trial alone when
it is longer), and they are lower bounds: one tick per CPU, plus one of truncation, is taken off
before dividing, so tick noise alone never marks a trial.
"""

from __future__ import annotations

import collections
import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

from virtbench.preflight.ownership import RunProcesses, user_space
from virtbench.preflight.procfs import CpuTimes, HostReader, ProcInfo
from virtbench.preflight.thresholds import (
    DEFAULT_THRESHOLDS,
    NOTE_FOREIGN,
    NOTE_STEAL,
    NOTE_WINDOW,
    Thresholds,
)

__all__ = ["Reading", "TrialNoise", "TrialSample", "own_cpu_seconds"]


def own_cpu_seconds() -> float:
    """CPU time (s) of this process and of every child it has reaped (µs resolution)."""
    me, children = (resource.getrusage(resource.RUSAGE_SELF),
                    resource.getrusage(resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Reading:
    """The counters at one moment."""

    at: float  # monotonic seconds
    cpu: CpuTimes
    own_s: float  # own_cpu_seconds()
    tracked: dict[int, ProcInfo]  # the tracked processes that exist


class TrialNoise:
    """The per-run state: which processes are tracked, and the recent readings."""

    def __init__(self, reader: HostReader, window_s: float = 1.0, rescan_every_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic,
                 own_cpu_s: Callable[[], float] = own_cpu_seconds) -> None:
        self.reader = reader
        self.window_s = window_s
        self.rescan_every_s = rescan_every_s
        self.clock = clock
        self.own_cpu_s = own_cpu_s
        self.full_scans = 0
        self._snapshot: dict[int, ProcInfo] | None = None  # the last full scan
        self._scanned_at = -math.inf
        self._tracked: dict[int, bool] = {}  # pid -> the run's own (else a kernel thread)
        self._cpus = 1
        self._hz = reader.clock_ticks()
        # Readings since the last full scan, oldest first; pruned to the one window baseline.
        self._history: collections.deque[Reading] = collections.deque()

    def _read(self) -> Reading:
        tracked = {}
        for pid in self._tracked:
            info = self.reader.process(pid)
            if info is not None:
                tracked[pid] = info
        return Reading(self.clock(), self.reader.cpu_times(), self.own_cpu_s(), tracked)

    def _rescan(self, ours: RunProcesses) -> Reading:
        """Scan every process; track the run's own (but this one) and kernel threads that ran
        since the previous scan. Windows restart here: older readings lack the new pids."""
        procs = self.reader.processes()
        mine = ours.ours(procs)
        before = self._snapshot
        # A kernel thread that used less than 1 % of a CPU since the last scan is not worth a
        # read per trial: its few ticks stay in the leftover.
        least = max(1.0, 0.01 * self._hz * (self.clock() - self._scanned_at))
        tracked = {}
        for pid, info in procs.items():
            if pid == ours.root_pid:
                continue  # its time and its reaped children's come from getrusage
            if pid in mine:
                tracked[pid] = True
            elif not user_space(info) and before is not None:
                prev = before.get(pid)
                start = prev.ticks if prev is not None and prev.starttime == info.starttime else 0
                if info.ticks - start >= least:
                    tracked[pid] = False
        self._snapshot, self._tracked = procs, tracked
        self._cpus = self.reader.cpu_count()
        self.full_scans += 1
        reading = self._read()
        self._scanned_at = reading.at
        self._history = collections.deque([reading])
        return reading

    def start(self, ours: RunProcesses) -> Reading:
        """The reading a trial starts from (the last one, when it was taken just before)."""
        if self._snapshot is None:
            return self._rescan(ours)
        gap = self.clock() - self._history[-1].at
        if gap <= 0.01:  # e.g. the previous trial's end
            return self._history[-1]
        if gap > self.window_s:
            # Something else ran meanwhile (a lab switch, set-up, checks): new processes may
            # be the run's own, and a window must not reach back over it.
            return self._rescan(ours)
        reading = self._read()
        self._history.append(reading)
        return reading

    def notes(self, start: Reading, ours: RunProcesses,
              limits: Thresholds = DEFAULT_THRESHOLDS) -> dict[str, str]:
        """Steal and foreign load (% as text) over the window that ends now."""
        end = self._read()
        history = self._history
        while len(history) > 1 and history[1].at <= end.at - self.window_s:
            history.popleft()
        base = history[0] if history[0].at <= start.at else start
        history.append(end)
        elapsed = max(end.at - base.at, 1e-6)
        capacity = elapsed * self._hz * self._cpus
        foreign = max(0.0, self._leftover(base, end, ours.root_pid) - (self._cpus + 1))
        steal = max(0, end.cpu.steal - base.cpu.steal - 1)
        total = max(end.cpu.total - base.cpu.total, 1)
        foreign_pct = min(100.0, 100.0 * foreign / capacity)
        if (foreign_pct > limits.foreign_warn / 2
                and end.at - self._scanned_at >= self.rescan_every_s):
            self._rescan(ours)  # before the next trial: attribute what is new
        return {NOTE_STEAL: f"{100.0 * steal / total:.2f}",
                NOTE_FOREIGN: f"{foreign_pct:.2f}", NOTE_WINDOW: f"{elapsed:.3f}"}

    def _leftover(self, base: Reading, end: Reading, root_pid: int) -> float:
        """Busy ticks between two readings that neither we nor a tracked process account for."""
        own = (end.own_s - base.own_s) * self._hz
        tracked = 0
        for pid, info in end.tracked.items():
            prev = base.tracked.get(pid)
            if prev is not None and prev.starttime == info.starttime:
                tracked += info.ticks - prev.ticks
        for pid, prev in base.tracked.items():
            now = end.tracked.get(pid)
            # A child we reaped in between: getrusage now holds its whole life.
            if (now is None or now.starttime != prev.starttime) and prev.ppid == root_pid:
                own -= prev.ticks
        return end.cpu.busy - base.cpu.busy - own - tracked


class TrialSample:
    """One trial's handle: created as it starts, asked for its notes when it ends."""

    def __init__(self, noise: TrialNoise, ours: RunProcesses,
                 limits: Thresholds = DEFAULT_THRESHOLDS) -> None:
        self.noise, self.ours, self.limits = noise, ours, limits
        self.start = noise.start(ours)

    def notes(self) -> dict[str, str]:
        return self.noise.notes(self.start, self.ours, self.limits)
