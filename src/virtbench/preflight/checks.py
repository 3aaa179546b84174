"""The noise checks: what on this host spoils a benchmark, each with a status and advice."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from virtbench.preflight.ownership import RunProcesses, foreign_ticks
from virtbench.preflight.procfs import HostReader
from virtbench.preflight.run_pidfiles import RunRegistry
from virtbench.preflight.thresholds import DEFAULT_THRESHOLDS, Thresholds

__all__ = ["Check", "Status", "Window", "failed", "run_checks", "static_checks", "window_checks"]


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    name: str
    value: str
    threshold: str
    status: Status
    advice: str
    number: float | None = None
    """The measured number behind ``value`` (a percentage, pages/s), when there is one."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"status": self.status.value}


def _grade(value: float, warn: float, fail: float) -> Status:
    return Status.FAIL if value > fail else Status.WARN if value > warn else Status.OK


@dataclass(frozen=True)
class Window:
    """What the counters did over a short window: the input of the window checks."""

    seconds: float
    steal_pct: float
    foreign_pct: float
    cpus: int
    top_foreign: list[tuple[str, int, float]]  # the 5 busiest: (comm, pid, % of one CPU)
    swapped_pages: int


def measure_window(reader: HostReader, ours: RunProcesses, seconds: float) -> Window:
    cpu0, procs0, vm0 = reader.cpu_times(), reader.processes(), reader.vmstat()
    start = time.monotonic()
    time.sleep(seconds)
    cpu1, procs1, vm1 = reader.cpu_times(), reader.processes(), reader.vmstat()
    elapsed = max(time.monotonic() - start, 1e-6)
    total = max(cpu1.total - cpu0.total, 1)
    cpus = reader.cpu_count()
    hz = reader.clock_ticks()
    used = foreign_ticks(procs0, procs1, ours.ours(procs1))
    foreign = sum(ticks for _info, ticks in used)
    swapped = sum(vm1.get(k, 0) - vm0.get(k, 0) for k in ("pswpin", "pswpout"))
    return Window(
        seconds=elapsed, steal_pct=100.0 * (cpu1.steal - cpu0.steal) / total,
        foreign_pct=100.0 * foreign / (elapsed * hz * cpus), cpus=cpus,
        top_foreign=[(info.comm, info.pid, 100.0 * ticks / (elapsed * hz))
                     for info, ticks in used[:5]],
        swapped_pages=max(swapped, 0))


def window_checks(w: Window, limits: Thresholds) -> list[Check]:
    top = ", ".join(f"{comm} (pid {pid}) {pct:.0f} %" for comm, pid, pct in w.top_foreign[:3])
    swap_rate = w.swapped_pages / w.seconds
    return [
        Check("steal", f"{w.steal_pct:.1f} % of CPU time",
              f"warn > {limits.steal_warn:g} %, fail > {limits.steal_fail:g} %",
              _grade(w.steal_pct, limits.steal_warn, limits.steal_fail),
              "the hypervisor gives this guest's CPUs to others: run on a host with dedicated "
              "(pinned) CPUs or compare only runs taken at the same steal", w.steal_pct),
        Check("foreign_load", f"{w.foreign_pct:.1f} % of {w.cpus} CPUs"
              + (f" (top: {top})" if top else ""),
              f"warn > {limits.foreign_warn:g} %, fail > {limits.foreign_fail:g} %",
              _grade(w.foreign_pct, limits.foreign_warn, limits.foreign_fail),
              "other processes compete for the CPUs: stop them or wait until the host is idle",
              w.foreign_pct),
        Check("swap", f"{swap_rate:.0f} pages/s swapped in or out",
              f"warn > 0, fail > {limits.swap_fail_pages_per_s:g} pages/s",
              Status.FAIL if swap_rate > limits.swap_fail_pages_per_s
              else Status.WARN if w.swapped_pages else Status.OK,
              "memory is short: free memory or reduce the experiment's footprint", swap_rate),
    ]


def _selected(text: str | None) -> str | None:
    """'always [madvise] never' -> 'madvise'."""
    if text is None:
        return None
    if "[" in text:
        return text.split("[", 1)[1].split("]", 1)[0]
    return text


def static_checks(reader: HostReader, registry: RunRegistry) -> list[Check]:
    checks = []
    governors = sorted(set(reader.governors()))
    if not governors:
        checks.append(Check("cpu_governor", "not exposed (fixed frequency or a guest)",
                            "warn unless performance", Status.OK, "nothing to do"))
    else:
        slow = [g for g in governors if g != "performance"]
        checks.append(Check("cpu_governor", ", ".join(governors), "warn unless performance",
                            Status.WARN if slow else Status.OK,
                            "the frequency follows load: `cpupower frequency-set -g performance`"
                            if slow else "nothing to do"))
    no_turbo = reader.sys("devices/system/cpu/intel_pstate/no_turbo")
    boost = reader.sys("devices/system/cpu/cpufreq/boost")
    if no_turbo is not None:
        on = no_turbo == "0"
        checks.append(Check("cpu_boost", "turbo on" if on else "turbo off",
                            "warn when on", Status.WARN if on else Status.OK,
                            "turbo makes the clock depend on temperature and other cores: echo 1 "
                            "> /sys/devices/system/cpu/intel_pstate/no_turbo" if on
                            else "nothing to do"))
    elif boost is not None:
        on = boost == "1"
        checks.append(Check("cpu_boost", "boost on" if on else "boost off", "warn when on",
                            Status.WARN if on else Status.OK,
                            "boost makes the clock depend on temperature and other cores: echo 0 "
                            "> /sys/devices/system/cpu/cpufreq/boost" if on else "nothing to do"))
    else:
        checks.append(Check("cpu_boost", "not exposed", "warn when on", Status.OK,
                            "nothing to do"))
    thp = _selected(reader.sys("kernel/mm/transparent_hugepage/enabled"))
    checks.append(Check("transparent_hugepages", thp or "not exposed", "warn when always",
                        Status.WARN if thp == "always" else Status.OK,
                        "khugepaged compacts memory in the background: echo madvise > "
                        "/sys/kernel/mm/transparent_hugepage/enabled" if thp == "always"
                        else "nothing to do"))
    clock = reader.sys("devices/system/clocksource/clocksource0/current_clocksource")
    good = {"tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page", "xen"}
    status = (Status.OK if clock in good or clock is None
              else Status.FAIL if clock == "jiffies" else Status.WARN)
    checks.append(Check("clocksource", clock or "not exposed", "warn unless tsc or kvm-clock",
                        status, "reading the clock is slow or coarse, which distorts short "
                        "timings: check dmesg for a TSC marked unstable" if status != Status.OK
                        else "nothing to do"))
    others = registry.others()
    checks.append(Check("other_runs",
                        ", ".join(f"{o.get('experiment', '?')} (pid {o['pid']})" for o in others)
                        or "none", "fail when any", Status.FAIL if others else Status.OK,
                        "another virtbench run measures on this host at the same time: wait "
                        "for it to end" if others else "nothing to do", float(len(others))))
    return checks


def run_checks(reader: HostReader, ours: RunProcesses, registry: RunRegistry,
               limits: Thresholds = DEFAULT_THRESHOLDS, seconds: float = 1.0) -> list[Check]:
    """Every check: the window ones over ``seconds`` of sleeping, then the static ones."""
    return (window_checks(measure_window(reader, ours, seconds), limits)
            + static_checks(reader, registry))


def failed(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == Status.FAIL]
