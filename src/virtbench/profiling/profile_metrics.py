"""The counters a profiled trial adds, declared like any workload's metrics.

Every name starts with ``profile.``: the analysis side (compare, gate) treats them as
diagnostics and leaves them out of verdicts. Lower is better for all of them: none is a goal,
and more of any means the trial did more work beside (or for) the workload.
"""

from __future__ import annotations

from virtbench.model import PROFILE_PREFIX, Better, Domain, Metric

__all__ = ["PROFILE_METRICS", "PROFILE_PREFIX", "PROFILE_UNITS"]


def _metric(name: str, unit: str, description: str, domain: Domain | None = None) -> Metric:
    return Metric(PROFILE_PREFIX + name, unit, Better.LOWER, description, domain=domain)


PROFILE_METRICS: tuple[Metric, ...] = (
    _metric("task_clock_ms", "ms",
            "perf stat task-clock over the trial's window, summed over the counted tasks: in "
            "scope system every CPU's time, idle included (about window × CPUs); in scope "
            "cgroup the group's tasks; in scope guest the QEMU process's threads"),
    _metric("context_switches", "count",
            "perf stat context-switches over the trial's window, in the profile's scope",
            Domain.POSITIVE),
    _metric("cpu_migrations", "count",
            "perf stat cpu-migrations (a task moved to another CPU) over the trial's window, "
            "in the profile's scope", Domain.POSITIVE),
    _metric("page_faults", "count",
            "perf stat page-faults (minor and major) over the trial's window, in the profile's "
            "scope", Domain.POSITIVE),
    _metric("major_faults", "count",
            "perf stat major-faults (page faults that had to read the page from a disk or "
            "other backing store) over the trial's window, in the profile's scope",
            Domain.POSITIVE),
    _metric("softirq_net_rx", "count",
            "NET_RX softirqs raised on the host during the trial: /proc/softirqs delta, summed "
            "over CPUs (packets received by the network stack)", Domain.POSITIVE),
    _metric("softirq_net_tx", "count",
            "NET_TX softirqs raised on the host during the trial: /proc/softirqs delta, summed "
            "over CPUs", Domain.POSITIVE),
    _metric("softirq_block", "count",
            "BLOCK softirqs (block I/O completions) raised on the host during the trial: "
            "/proc/softirqs delta, summed over CPUs", Domain.POSITIVE),
    _metric("interrupts", "count",
            "hardware interrupts serviced on the host during the trial: delta of the first "
            "number of /proc/stat's intr line (all interrupts, all CPUs)", Domain.POSITIVE),
    _metric("steal_pct", "%",
            "CPU time stolen by the hypervisor from this host's CPUs during the trial, as % of "
            "all CPU time (/proc/stat cpu line: steal delta / total delta)"),
    _metric("iowait_pct", "%",
            "CPU time idle while waiting for I/O during the trial, as % of all CPU time "
            "(/proc/stat cpu line: iowait delta / total delta)"),
)
"""Every counter a profiled trial may record, with its unit and definition."""

PROFILE_UNITS = {m.name: m.unit for m in PROFILE_METRICS}
