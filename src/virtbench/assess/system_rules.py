"""Rules on the machine virtbench runs on (a host, or inside a guest), read from /proc and
/sys below a root directory, so tests run them on fake trees and the real machine alike."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from virtbench.assess.domain_rules import WANTED_FLAGS
from virtbench.assess.findings import Change, Evidence, Finding, Gain
from virtbench.assess.rules import Rule
from virtbench.kvm.flags import uses_of
from virtbench.kvm.hostcpu import cpuinfo_flags

__all__ = ["SYSTEM_FILES", "SYSTEM_RULES", "SystemView"]

KERNEL_DOC = "https://docs.kernel.org/admin-guide/"
TUNING_DOC = ("Red Hat, Virtualization Tuning and Optimization Guide (RHEL 7), "
              "https://access.redhat.com/documentation/en-us/red_hat_enterprise_linux/7/"
              "html/virtualization_tuning_and_optimization_guide")
# Every file the rules below read (glob patterns below the root), so a remote machine's tree can
# be fetched in one command (virtbench.assess.remote_tree).
SYSTEM_FILES = (
    "proc/cpuinfo",
    "sys/block/*/queue/scheduler",
    "sys/block/*/queue/rotational",
    "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor",
    "sys/devices/system/cpu/cpufreq/boost",
    "sys/kernel/mm/transparent_hugepage/enabled",
    "sys/devices/system/clocksource/clocksource0/current_clocksource",
    "sys/devices/system/clocksource/clocksource0/available_clocksource",
    "sys/class/net/*/device/uevent",
)
# Linux drivers of the NICs QEMU emulates (in a guest, each packet costs register exits).
_EMULATED_NIC_DRIVERS = ("e1000", "e1000e", "8139too", "8139cp", "ne2k-pci", "pcnet32")
_SELECTED = re.compile(r"\[([^\]]+)\]")


@dataclass(frozen=True)
class SystemView:
    """/proc and /sys of a machine below ``root`` ("/" for the real one)."""

    root: Path = Path("/")

    def read(self, relative: str) -> str | None:
        try:
            return (self.root / relative).read_text().strip()
        except OSError:
            return None

    def flags(self) -> frozenset[str]:
        """The CPU flags in libvirt's spelling (sse4.2, pclmuldq, sha-ni)."""
        return cpuinfo_flags(self.read("proc/cpuinfo") or "")

    def in_guest(self) -> bool:
        return "hypervisor" in self.flags()

    def glob(self, pattern: str) -> list[Path]:
        return sorted(self.root.glob(pattern))

    def show(self, path: Path) -> str:
        """``path`` as it is on the machine (without a test tree's root)."""
        return "/" + str(path.relative_to(self.root))


def _selected(text: str | None) -> str | None:
    match = _SELECTED.search(text or "")
    return match.group(1) if match else None


def check_cpu_flags(view: SystemView) -> Finding | None:
    flags = view.flags()
    if not flags:
        return None
    missing = [f for f in WANTED_FLAGS if f not in flags]
    where = "this guest" if view.in_guest() else "this host"
    if not missing:
        return Finding(
            rule="cpu-flags-present", title=f"{where} has the CPU flags common software uses; "
                                            "a qemu64 guest would lack them",
            severity="info",
            evidence=[Evidence("/proc/cpuinfo", " ".join(WANTED_FLAGS))],
            source="study 000 (docs/cpu-features.md)",
            changes=[Change("guest", "keep them; guests on this host get them with "
                                     "`virtbench kvm tune DOMAIN --require aes,sse4.2,…` or "
                                     "host-model")],
            cost="none (nothing to change here)", measure="cpu-flags",
            gain=Gain("cited", "what the flags buy is measured below (flags masked vs not)",
                      source="study 000"),
            extra={"granted": [], "missing": []})
    high = any(f in missing for f in ("aes", "sse4.2"))
    change = (f"on the host: virtbench kvm tune DOMAIN --require {','.join(missing)}"
              if view.in_guest() else "a host CPU without them cannot give them to guests")
    return Finding(
        rule="cpu-flags", title=f"{where} lacks CPU flags common software uses",
        severity="high" if high else "medium",
        evidence=[Evidence("/proc/cpuinfo", f"no {f}: {uses_of(f) or f}") for f in missing],
        source="study 000 (docs/cpu-features.md)",
        changes=[Change("virtbench", change)],
        cost=("'require' pins the guest to hosts with these flags; host-passthrough blocks live "
              "migration to unlike hosts"),
        gain=Gain("cited", "AES-NI and SSE4.2 make AES and CRC32C several times faster "
                           "(study 000)", source="study 000"),
        measure="cpu-flags", extra={"missing": missing})


def check_io_scheduler(view: SystemView) -> Finding | None:
    slow = []
    for path in view.glob("sys/block/*/queue/scheduler"):
        device = path.parent.parent.name
        if device.startswith(("loop", "ram", "zram", "dm-", "md", "sr")):
            continue
        chosen = _selected(path.read_text())
        rotational = view.read(f"sys/block/{device}/queue/rotational") == "1"
        if chosen == "bfq" or (chosen == "mq-deadline" and not rotational
                                and device.startswith(("vd", "nvme"))):
            slow.append((device, chosen, view.show(path)))
    if not slow:
        return None
    device = slow[0][0]
    return Finding(
        rule="io-scheduler", title=f"I/O scheduler {slow[0][1]} on a fast or virtual disk",
        severity="low",
        evidence=[Evidence(shown, f"[{chosen}] on {dev}") for dev, chosen, shown in slow],
        source=KERNEL_DOC + "../block/switching-sched.html; " + TUNING_DOC,
        changes=[Change("sysfs", f"echo none > /sys/block/{device}/queue/scheduler"),
                 Change("udev", 'ACTION=="add|change", KERNEL=="vd[a-z]", '
                                'ATTR{queue/scheduler}="none"   (/etc/udev/rules.d/60-io.rules)')],
        cost="no per-process I/O fairness inside this machine (the host schedules anyway)",
        gain=Gain("cited", "less per-request CPU work in the guest; the host's scheduler "
                           "already orders the I/O", source=TUNING_DOC),
        measure="disk-scheduler", extra={"scheduler": slow[0][1]})


def check_governor(view: SystemView) -> Finding | None:
    slow = []
    for path in view.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
        governor = path.read_text().strip()
        if governor in ("powersave", "conservative", "ondemand"):
            slow.append((path.parent.parent.name, governor))
    if not slow:
        return None
    return Finding(
        rule="cpu-governor", title=f"CPU frequency governor {slow[0][1]}",
        severity="medium",
        evidence=[Evidence("/sys/devices/system/cpu/*/cpufreq/scaling_governor",
                           ", ".join(f"{c}={g}" for c, g in slow))],
        source=KERNEL_DOC + "pm/cpufreq.html",
        changes=[Change("sysfs", "echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/"
                                 "scaling_governor"),
                 Change("guest", "cpupower frequency-set -g performance   (or tuned-adm "
                                 "profile virtual-host / throughput-performance)")],
        cost="more power and heat at low load",
        gain=Gain("cited", "no ramp-up delay before the CPU reaches full speed",
                  source=KERNEL_DOC + "pm/cpufreq.html"))


def check_boost(view: SystemView) -> Finding | None:
    if view.read("sys/devices/system/cpu/cpufreq/boost") != "0":
        return None
    return Finding(
        rule="cpu-boost", title="CPU boost (turbo) is off",
        severity="low",
        evidence=[Evidence("/sys/devices/system/cpu/cpufreq/boost", "0")],
        source=KERNEL_DOC + "pm/cpufreq.html#frequency-boost-support",
        changes=[Change("sysfs", "echo 1 > /sys/devices/system/cpu/cpufreq/boost")],
        cost="more power and heat; benchmark results vary more with boost on",
        gain=Gain("cited", "higher clock while thermal headroom lasts",
                  source=KERNEL_DOC + "pm/cpufreq.html#frequency-boost-support"))


def check_thp(view: SystemView) -> Finding | None:
    chosen = _selected(view.read("sys/kernel/mm/transparent_hugepage/enabled"))
    if chosen != "never":
        return None
    return Finding(
        rule="transparent-hugepages", title="transparent huge pages are off",
        severity="low",
        evidence=[Evidence("/sys/kernel/mm/transparent_hugepage/enabled", "[never]")],
        source=KERNEL_DOC + "mm/transhuge.html",
        changes=[Change("sysfs", "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"),
                 Change("kernel-cmdline", "transparent_hugepage=madvise")],
        cost="compaction can add latency spikes; madvise limits huge pages to programs that ask "
             "(QEMU does for guest memory)",
        gain=Gain("cited", "fewer TLB misses for programs (and guests) that use them",
                  source=KERNEL_DOC + "mm/transhuge.html"))


def check_clocksource(view: SystemView) -> Finding | None:
    current = view.read("sys/devices/system/clocksource/clocksource0/current_clocksource")
    good = ("kvm-clock", "tsc", "hyperv_clocksource_tsc_page")
    if current is None or not view.in_guest() or current in good:
        return None
    available = view.read("sys/devices/system/clocksource/clocksource0/"
                          "available_clocksource") or ""
    better = "kvm-clock" if "kvm-clock" in available.split() else "tsc"
    return Finding(
        rule="guest-clocksource", title=f"guest clocksource {current}",
        severity="medium",
        evidence=[Evidence("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                           current),
                  Evidence("available_clocksource", available or "?")],
        source=KERNEL_DOC + "kernel-parameters.html (clocksource=)",
        changes=[Change("sysfs", f"echo {better} > /sys/devices/system/clocksource/"
                                 "clocksource0/current_clocksource"),
                 Change("kernel-cmdline", f"clocksource={better}")],
        cost="none",
        gain=Gain("cited", "time reads without a VM exit", source=TUNING_DOC))


def check_guest_nic(view: SystemView) -> Finding | None:
    if not view.in_guest():
        return None  # on a host an e1000 is real hardware
    emulated = []
    for path in view.glob("sys/class/net/*/device/uevent"):
        fields = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
        if fields.get("DRIVER") in _EMULATED_NIC_DRIVERS:
            emulated.append((path.parent.parent.name, fields["DRIVER"], view.show(path)))
    if not emulated:
        return None
    return Finding(
        rule="guest-nic-model", title=f"guest NIC driven by {emulated[0][1]}: an emulated NIC "
                                      "instead of virtio-net",
        severity="high",
        evidence=[Evidence(shown, f"{nic}: DRIVER={driver}") for nic, driver, shown in emulated],
        source=TUNING_DOC,
        changes=[Change("libvirt-xml", "on the host: <model type='virtio'/> in the domain's "
                                       "<interface> (virtbench assess --domain NAME shows the "
                                       "diff)"),
                 Change("openstack", "image property: hw_vif_model=virtio")],
        cost="the guest needs virtio-net drivers (built into Linux); the interface name may "
             "change",
        gain=Gain("cited", "virtio-net (with vhost) avoids emulating a real NIC per packet and "
                           "offers segmentation and checksum offloads", source=TUNING_DOC),
        measure="nic-offloads", extra={"model": emulated[0][1]})


SYSTEM_RULES: tuple[Rule[SystemView], ...] = (
    Rule("cpu-flags", "CPU flags visible here", "study 000", check_cpu_flags),
    Rule("io-scheduler", "block I/O scheduler", KERNEL_DOC, check_io_scheduler),
    Rule("cpu-governor", "CPU frequency governor", KERNEL_DOC, check_governor),
    Rule("cpu-boost", "CPU boost", KERNEL_DOC, check_boost),
    Rule("transparent-hugepages", "transparent huge pages", KERNEL_DOC, check_thp),
    Rule("guest-clocksource", "guest clock source", KERNEL_DOC, check_clocksource),
    Rule("guest-nic-model", "guest NIC driver", TUNING_DOC, check_guest_nic),
)
