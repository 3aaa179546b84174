"""Whole-machine CPU use between two readings of /proc/stat."""

from __future__ import annotations

from virtbench.model import Better, Metric
from virtbench.targets.target_contract import Target

__all__ = ["CPU_BUSY_METRIC", "busy_percent", "read_cpu_times"]

CPU_BUSY_METRIC = Metric(
    "cpu_busy_pct", "%", Better.LOWER,
    "whole-machine CPU busy share during the trial (all cores, /proc/stat: "
    "user+nice+system+irq+softirq+steal over total)")
"""What :func:`busy_percent` between two :func:`read_cpu_times` readings measures."""


def read_cpu_times(target: Target) -> tuple[int, int]:
    """(busy, total) jiffies summed over all CPUs, from the 'cpu' line of /proc/stat."""
    first = target.run(["cat", "/proc/stat"]).stdout.splitlines()[0].split()
    values = [int(v) for v in first[1:9]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + values[4]
    total = sum(values)
    return total - idle, total


def busy_percent(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Busy share of all CPUs in %, counting softirq (where the kernel forwards packets)."""
    busy = after[0] - before[0]
    total = after[1] - before[1]
    return 100.0 * busy / total if total > 0 else float("nan")
