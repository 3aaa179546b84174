"""The trial's counters from text: ``perf stat -x,`` output and /proc snapshots before and
after. Pure functions (the capture reads the files and runs perf)."""

from __future__ import annotations

from dataclasses import dataclass

from virtbench.model import Measurement
from virtbench.profiling.profile_metrics import PROFILE_PREFIX

__all__ = ["PERF_STAT_EVENTS", "ProcSnapshot", "parse_perf_stat", "proc_measurements",
           "read_snapshot"]

PERF_STAT_EVENTS = {
    "task-clock": "task_clock_ms",
    "context-switches": "context_switches",
    "cpu-migrations": "cpu_migrations",
    "page-faults": "page_faults",
    "major-faults": "major_faults",
}
"""perf stat's software events and the profile metric each becomes."""

_SOFTIRQS = {"NET_RX": "softirq_net_rx", "NET_TX": "softirq_net_tx", "BLOCK": "softirq_block"}
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal (guest and guest_nice
# are already inside user and nice).
_IOWAIT, _STEAL, _CPU_FIELDS = 4, 7, 8


def parse_perf_stat(text: str) -> tuple[list[Measurement], list[str]]:
    """Measurements from ``perf stat -x,`` output (value,unit,event,...), and notes for the
    events perf could not count (``<not counted>``, ``<not supported>``)."""
    measurements: list[Measurement] = []
    notes: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, event = fields[0], fields[2].split(":")[0]  # "task-clock:u" is task-clock
        metric = PERF_STAT_EVENTS.get(event)
        if metric is None:
            continue
        try:
            number = float(value)
        except ValueError:
            notes.append(f"perf stat could not count {event}: {value}")
            continue
        measurements.append(Measurement(PROFILE_PREFIX + metric, number))
    return measurements, notes


@dataclass(frozen=True)
class ProcSnapshot:
    """What the profile's /proc counters read at one moment."""

    softirqs: dict[str, int]
    """Summed over CPUs, by softirq name (NET_RX, ...)."""
    interrupts: int | None
    cpu: tuple[int, ...]
    """/proc/stat's cpu line, clock ticks: user nice system idle iowait irq softirq steal."""


def read_snapshot(stat: str | None, softirqs: str | None) -> ProcSnapshot:
    """Parse /proc/stat and /proc/softirqs texts (None: unreadable, nothing from it)."""
    sums: dict[str, int] = {}
    for line in (softirqs or "").splitlines():
        name, _, counts = line.partition(":")
        if counts and name.strip() in _SOFTIRQS:
            sums[name.strip()] = sum(int(c) for c in counts.split())
    interrupts: int | None = None
    cpu: tuple[int, ...] = ()
    for line in (stat or "").splitlines():
        fields = line.split()
        if fields and fields[0] == "intr" and len(fields) > 1:
            interrupts = int(fields[1])
        elif fields and fields[0] == "cpu":
            cpu = tuple(int(v) for v in fields[1:1 + _CPU_FIELDS])
    return ProcSnapshot(sums, interrupts, cpu)


def proc_measurements(before: ProcSnapshot, after: ProcSnapshot) -> list[Measurement]:
    """The deltas between two snapshots, as profile measurements (what both had)."""
    found: list[Measurement] = []
    for name, metric in _SOFTIRQS.items():
        if name in before.softirqs and name in after.softirqs:
            found.append(Measurement(PROFILE_PREFIX + metric,
                                     float(after.softirqs[name] - before.softirqs[name])))
    if before.interrupts is not None and after.interrupts is not None:
        found.append(Measurement(PROFILE_PREFIX + "interrupts",
                                 float(after.interrupts - before.interrupts)))
    if len(before.cpu) == len(after.cpu) == _CPU_FIELDS:
        deltas = [a - b for a, b in zip(after.cpu, before.cpu, strict=True)]
        total = sum(deltas)
        if total > 0:  # a trial shorter than one clock tick has no shares to give
            found.append(Measurement(PROFILE_PREFIX + "steal_pct", 100.0 * deltas[_STEAL] / total))
            found.append(Measurement(PROFILE_PREFIX + "iowait_pct",
                                     100.0 * deltas[_IOWAIT] / total))
    return found
