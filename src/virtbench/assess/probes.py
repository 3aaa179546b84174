"""The disk and network probes a finding can ask for: which setting as found against which
recommended one, on what (lab ``assess-probes``'s scratch objects), and what that does and does
not stand for. The workloads are ``probe.fio`` and ``probe.iperf3``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from virtbench.assess.findings import Finding

__all__ = ["Probe", "probe_for", "probe_problems", "probes_for"]

PROBE_RUNTIME_S = 1.0
PROBE_TRIAL_S = 1.5
"""What one probe trial costs here, for planning: 1 s of I/O or traffic plus starting the tool
and setting the knob (~1.4 s per trial in a run of all three probes)."""


@dataclass(frozen=True)
class Probe:
    """One measured what-if of a finding: ``knob`` as found against as recommended."""

    id: str
    """The workload id in the assessment's run."""
    measure: str
    """The findings it quantifies (their ``measure``)."""
    workload: str
    params: Mapping[str, object]
    knob: str
    as_found: str
    recommended: str
    needs: str
    """The lab part it runs on: "disk" or "network"."""
    measures: str
    """What exactly is timed, and where (the device is added from the run's trial notes)."""
    not_measured: str
    """What the finding claims beyond that: still cited."""
    tools: tuple[tuple[str, str], ...] = field(default=())
    """(program, Debian package) the probe needs."""

    def spec(self) -> dict[str, object]:
        return {"name": self.workload, "id": self.id, "params": dict(self.params)}


_DISK_TOOLS = (("fio", "fio"), ("losetup", "mount"))
_NET_TOOLS = (("iperf3", "iperf3"), ("ethtool", "ethtool"), ("ip", "iproute2"))


def _scheduler_probe(current: str) -> Probe:
    return Probe(
        id=f"disk.scheduler.{current}", measure="disk-scheduler", workload="probe.fio",
        params={"vary": "io_scheduler", "runtime_s": PROBE_RUNTIME_S},
        knob="io_scheduler", as_found=current, recommended="none", needs="disk",
        measures=(f"fio 4 KiB random reads, 16 in flight (libaio, O_DIRECT), {PROBE_RUNTIME_S:g} "
                  f"s per trial, on a scratch loop device with scheduler {current} vs none"),
        not_measured=("the machine's own disk was not touched: how much of the scheduler's "
                      "per-request cost shows on it (and behind the host's queue) is cited"),
        tools=_DISK_TOOLS)


def _cache_probe(current: str) -> Probe:
    return Probe(
        id=f"disk.cache.{current}", measure="disk-cache", workload="probe.fio",
        params={"vary": "disk_cache", "runtime_s": PROBE_RUNTIME_S},
        knob="disk_cache", as_found=current, recommended="none", needs="disk",
        measures=(f"fio 4 KiB random writes, one at a time (psync), {PROBE_RUNTIME_S:g} s per "
                  f"trial, on a scratch loop device opened as QEMU opens a disk with cache="
                  f"{current} vs cache=none (O_DIRECT)"),
        not_measured=("the guest's own disk image and QEMU were not involved; io='native' "
                      "(Linux AIO instead of QEMU's thread pool) is cited"),
        tools=_DISK_TOOLS)


def _offload_probe() -> Probe:
    return Probe(
        id="net.offloads", measure="nic-offloads", workload="probe.iperf3",
        params={"runtime_s": PROBE_RUNTIME_S},
        knob="nic_offloads", as_found="off", recommended="on", needs="network",
        measures=(f"one iperf3 TCP stream, {PROBE_RUNTIME_S:g} s per trial, through a veth pair "
                  "between two namespaces made for the probe, with tso/gso/gro/tx-checksum "
                  "offloads off (a NIC without them) vs on (as virtio-net offers them)"),
        not_measured=("the cost of emulating the NIC model itself (a VM exit per register "
                      "access) is cited, not measured; the guest's NIC was not touched"),
        tools=_NET_TOOLS)


def probe_for(finding: Finding) -> Probe | None:
    """The probe that measures what fixing ``finding`` buys, if there is one."""
    if finding.measure == "disk-scheduler":
        return _scheduler_probe(str(finding.extra["scheduler"]))
    if finding.measure == "disk-cache":
        return _cache_probe(str(finding.extra["cache"]))
    if finding.measure == "nic-offloads":
        return _offload_probe()
    return None


def probes_for(findings: Iterable[Finding]) -> list[Probe]:
    """One probe per distinct what-if, in the findings' order."""
    seen: dict[str, Probe] = {}
    for finding in findings:
        probe = probe_for(finding)
        if probe is not None:
            seen.setdefault(probe.id, probe)
    return list(seen.values())


def probe_problems(probe: Probe, is_root: bool | None = None) -> list[str]:
    """Why ``probe`` cannot run here (root for loop devices and namespaces, its tools)."""
    problems = []
    if not (os.geteuid() == 0 if is_root is None else is_root):
        problems.append("needs root (loop devices, network namespaces)")
    problems += [f"{tool} is missing (apt-get install {package})" for tool, package in probe.tools
                 if shutil.which(tool) is None]
    return problems
