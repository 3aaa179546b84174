"""Where a guest runs on the host: vCPU and emulator pinning (``vcpupin``/``emulatorpin``,
cpusets) and huge-page memory backing (``hugepages``).

Validated against the host (its online CPUs, its reserved huge pages), realised in the domain
XML (``<cputune>``, ``<memoryBacking>``), verified from the live XML and from QEMU's own
threads and memory map (``/proc/PID/task/*/status`` ``Cpus_allowed_list``, ``/proc/PID/smaps``
``KernelPageSize``). Pure: :mod:`virtbench.labs.guest` reads /proc and /sys and hands the text
in (tests/unit/kvm/test_guest_placement.py).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "HostPlacement",
    "cputune_xml",
    "format_cpuset",
    "hugepage_backed_mib",
    "memory_backing_xml",
    "parse_cpuset",
    "parse_meminfo_hugepages",
    "placement_problems",
    "read_live_placement",
    "vcpu_pins",
    "verify_threads",
]


@dataclass(frozen=True)
class HostPlacement:
    """The host's CPUs and huge pages, as the guest's placement knobs need them."""

    cpus: frozenset[int]
    """Online host CPUs (/sys/devices/system/cpu/online)."""
    hugepage_kib: int = 0
    """The default huge page size (``Hugepagesize`` in /proc/meminfo), KiB; 0: none."""
    hugepages_total: int = 0
    hugepages_free: int = 0
    """Free and not reserved by another process (HugePages_Free - HugePages_Rsvd)."""
    hugepage_sizes: tuple[int, ...] = ()
    """Sizes the kernel offers (/sys/kernel/mm/hugepages/hugepages-*kB), KiB."""
    hugetlbfs: bool = True
    """Whether libvirt will find a hugetlbfs mount to back the guest's memory with."""


def parse_cpuset(text: str) -> frozenset[int]:
    """A libvirt cpuset (``0-3,^2,5``) as its CPU numbers; ValueError when it is not one."""
    cpus: set[int] = set()
    excluded: set[int] = set()
    for raw in text.split(","):
        part = raw.strip()
        into = cpus
        if part.startswith("^"):
            into, part = excluded, part[1:]
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"{text!r} is not a cpuset (such as 0-3,^2,5)")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"{text!r}: range {part} runs backwards")
        into.update(range(first, last + 1))
    chosen = frozenset(cpus - excluded)
    if not chosen:
        raise ValueError(f"{text!r} names no CPU")
    return chosen


def format_cpuset(cpus: Iterable[int]) -> str:
    """CPU numbers as the shortest cpuset: ``{0, 1, 2, 5}`` -> ``0-2,5``."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = ordered[0] if ordered else 0
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(parts) if ordered else ""


def vcpu_pins(value: str, vcpus: int) -> list[frozenset[int]]:
    """The host CPUs of each vCPU: one cpuset for all (``0-1``), or one per vCPU separated by
    ``/`` (``0/1``: vCPU 0 on CPU 0, vCPU 1 on CPU 1). ``""``: not pinned (``[]``)."""
    if not value:
        return []
    sets = [parse_cpuset(part) for part in value.split("/")]
    if len(sets) == 1:
        return sets * vcpus
    if len(sets) != vcpus:
        raise ValueError(f"{len(sets)} cpusets for {vcpus} vCPU(s): give one for all or one "
                         "per vCPU")
    return sets


def _pin_problem(knob: str, value: str, vcpus: int, host: HostPlacement) -> str | None:
    try:
        sets = vcpu_pins(value, vcpus) if knob == "vcpupin" else [parse_cpuset(value)]
    except ValueError as exc:
        return f"knob {knob}: {exc}"
    outside = sorted(set().union(*sets) - host.cpus)
    if outside:
        return (f"knob {knob}: CPU {format_cpuset(outside)} is not an online host CPU "
                f"(online: {format_cpuset(host.cpus)})")
    return None


def placement_problems(*, vcpus: int, memory_mib: int, vcpupin: str, emulatorpin: str,
                       hugepages: bool, host: HostPlacement) -> list[str]:
    """Every reason the host cannot place the guest so, each naming its knob."""
    problems = [p for knob, value in (("vcpupin", vcpupin), ("emulatorpin", emulatorpin))
                if value and (p := _pin_problem(knob, value, vcpus, host)) is not None]
    if hugepages:
        problems += _hugepage_problems(memory_mib, host)
    return problems


def _hugepage_problems(memory_mib: int, host: HostPlacement) -> list[str]:
    if not host.hugepage_sizes or not host.hugepage_kib:
        return ["knob hugepages: this kernel offers no huge pages (no "
                "/sys/kernel/mm/hugepages, no Hugepagesize in /proc/meminfo)"]
    if host.hugepages_total == 0:
        return ["knob hugepages: the host has no huge pages reserved (HugePages_Total 0 in "
                f"/proc/meminfo; reserve {host.hugepage_kib} kB pages with sysctl "
                "vm.nr_hugepages=N)"]
    needed = -(-memory_mib * 1024 // host.hugepage_kib)
    problems = []
    if needed > host.hugepages_free:
        problems.append(f"knob hugepages: {memory_mib} MiB of guest memory needs {needed} free "
                        f"{host.hugepage_kib} kB pages; the host has {host.hugepages_free} free "
                        f"of {host.hugepages_total} (HugePages_Free - HugePages_Rsvd in "
                        "/proc/meminfo)")
    if not host.hugetlbfs:
        problems.append("knob hugepages: no hugetlbfs is mounted (/proc/mounts), where "
                        "libvirt puts the guest's memory")
    return problems


def parse_meminfo_hugepages(meminfo: str) -> tuple[int, int, int]:
    """(Hugepagesize KiB, HugePages_Total, free pages nobody has reserved) from /proc/meminfo
    text: ``HugePages_Free`` counts pages another process has reserved (``HugePages_Rsvd``,
    mapped but not yet touched) as free."""
    values: dict[str, int] = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        if name in ("Hugepagesize", "HugePages_Total", "HugePages_Free", "HugePages_Rsvd") \
                and rest.split():
            values[name] = int(rest.split()[0])
    return (values.get("Hugepagesize", 0), values.get("HugePages_Total", 0),
            max(0, values.get("HugePages_Free", 0) - values.get("HugePages_Rsvd", 0)))


def cputune_xml(pins: list[frozenset[int]], emulatorpin: str) -> str:
    """``<cputune>`` with one ``<vcpupin>`` per vCPU and the ``<emulatorpin>``; ``""`` when
    nothing is pinned."""
    if not pins and not emulatorpin:
        return ""
    tune = ET.Element("cputune")
    for vcpu, cpus in enumerate(pins):
        ET.SubElement(tune, "vcpupin", {"vcpu": str(vcpu), "cpuset": format_cpuset(cpus)})
    if emulatorpin:
        ET.SubElement(tune, "emulatorpin", {"cpuset": format_cpuset(parse_cpuset(emulatorpin))})
    return ET.tostring(tune, encoding="unicode")


def memory_backing_xml(hugepages: bool) -> str:
    return "<memoryBacking><hugepages/></memoryBacking>" if hugepages else ""


def read_live_placement(root: ET.Element) -> dict[str, str]:
    """What a live domain XML says: ``vcpupin`` (``0:0/1:1``, per vCPU), ``emulatorpin``
    (a cpuset, ``""`` when none) and ``hugepages`` (``True``/``False``)."""
    pins = {int(el.get("vcpu", "0")): format_cpuset(parse_cpuset(el.get("cpuset", "")))
            for el in root.findall("./cputune/vcpupin")}
    emulator = root.find("./cputune/emulatorpin")
    return {"vcpupin": "/".join(pins[v] for v in sorted(pins)),
            "emulatorpin": "" if emulator is None else format_cpuset(
                parse_cpuset(emulator.get("cpuset", ""))),
            "hugepages": str(root.find("./memoryBacking/hugepages") is not None)}


def verify_threads(threads: Mapping[str, frozenset[int]], pins: list[frozenset[int]],
                   emulatorpin: str) -> list[str]:
    """Mismatches between QEMU's threads' CPU affinity and the pins asked.

    ``threads``: thread name -> allowed CPUs, as ``/proc/PID/task/TID`` shows them
    (``comm``, ``Cpus_allowed_list``), the main thread under the name ``"main"``. QEMU names
    each vCPU thread ``CPU N/TCG`` (or ``/KVM``) when libvirt turns debug-threads on."""
    wrong = []
    for vcpu, want in enumerate(pins):
        name = next((n for n in threads if n.startswith(f"CPU {vcpu}/")), None)
        if name is None:
            wrong.append(f"vcpupin: QEMU has no thread named 'CPU {vcpu}/...' (one thread for "
                         "all vCPUs cannot be pinned per vCPU)")
        elif threads[name] != want:
            wrong.append(f"vcpupin: vCPU {vcpu} asked on CPU {format_cpuset(want)}, its thread "
                         f"'{name}' may run on {format_cpuset(threads[name])}")
    if emulatorpin:
        want = parse_cpuset(emulatorpin)
        main = threads.get("main")
        if main != want:
            wrong.append(f"emulatorpin: asked {format_cpuset(want)}, QEMU's main thread may run "
                         f"on {format_cpuset(main or ())}")
    return wrong


def hugepage_backed_mib(smaps: str, page_kib: int) -> int:
    """MiB of a process's mappings whose kernel page size is ``page_kib`` (/proc/PID/smaps)."""
    total_kib = 0
    size_kib = 0
    for line in smaps.splitlines():
        name, _, rest = line.partition(":")
        if name == "Size":
            size_kib = int(rest.split()[0])
        elif name == "KernelPageSize" and int(rest.split()[0]) == page_kib:
            total_kib += size_kib
    return total_kib // 1024
