"""What the host offers a guest and shows of it, read from /proc and /sys: the online CPUs and
huge pages (:class:`~virtbench.kvm.guest_placement.HostPlacement`), the QEMU process of a
domain, its threads' CPU affinity and how much of its memory sits on huge pages."""

from __future__ import annotations

import itertools
from pathlib import Path

from virtbench.kvm.guest_placement import (
    HostPlacement,
    hugepage_backed_mib,
    parse_cpuset,
    parse_meminfo_hugepages,
)

__all__ = ["host_placement", "qemu_hugepage_mib", "qemu_process", "qemu_thread_affinity",
           "qemu_thread_names"]

PROC = Path("/proc")
SYS = Path("/sys")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def host_placement(*, own_hugetlbfs: bool = False) -> HostPlacement:
    """This host's placement facts; ``own_hugetlbfs``: the lab mounts one for its private
    libvirtd (else a hugetlbfs must already be mounted)."""
    try:
        cpus = parse_cpuset(_read(SYS / "devices/system/cpu/online").strip())
    except ValueError:
        cpus = frozenset()
    size, total, free = parse_meminfo_hugepages(_read(PROC / "meminfo"))
    pools = SYS / "kernel/mm/hugepages"
    sizes = tuple(sorted(int(p.name.removeprefix("hugepages-").removesuffix("kB"))
                         for p in pools.glob("hugepages-*kB"))) if pools.is_dir() else ()
    mounted = any(len(f) > 2 and f[2] == "hugetlbfs"
                  for f in (line.split() for line in _read(PROC / "mounts").splitlines()))
    return HostPlacement(cpus=cpus, hugepage_kib=size, hugepages_total=total,
                         hugepages_free=free, hugepage_sizes=sizes,
                         hugetlbfs=own_hugetlbfs or mounted)


def qemu_process(domain: str, proc: Path = PROC) -> tuple[int, list[str]] | None:
    """(PID, argv) of the running QEMU of libvirt domain ``domain`` on this machine (libvirt
    names it ``-name guest=DOMAIN,...``), or None; ``proc``: where /proc is (tests)."""
    wanted = f"guest={domain}".encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = [w for w in (entry / "cmdline").read_bytes().split(b"\0") if w]
        except OSError:
            continue  # ended meanwhile, or not ours to read
        if any(flag == b"-name" and value.split(b",")[0] == wanted
               for flag, value in itertools.pairwise(argv)):
            return int(entry.name), [w.decode(errors="replace") for w in argv]
    return None


def qemu_argv(domain: str) -> list[str] | None:
    """The command line of ``domain``'s running QEMU, or None when none runs."""
    found = qemu_process(domain)
    return None if found is None else found[1]


def qemu_thread_affinity(pid: int) -> dict[str, frozenset[int]]:
    """Thread name -> CPUs it may run on (``Cpus_allowed_list``), the main thread as
    ``"main"``; QEMU names its vCPU threads ``CPU N/TCG`` (``/KVM``)."""
    out: dict[str, frozenset[int]] = {}
    for task in (PROC / str(pid) / "task").glob("*"):
        allowed = next((line.split(":", 1)[1].strip() for line in
                        _read(task / "status").splitlines()
                        if line.startswith("Cpus_allowed_list:")), "")
        if not allowed:
            continue
        name = "main" if task.name == str(pid) else _read(task / "comm").strip()
        out[name] = parse_cpuset(allowed)
    return out


def qemu_thread_names(pid: int, proc: Path = PROC) -> list[str]:
    """The names of the process's threads now, as QEMU names them with libvirt's
    debug-threads (``CPU 0/TCG``, ``IO iothread1``, ``worker``, the main thread
    ``qemu-system-x86``), sorted; empty when the process is gone."""
    return sorted(name for name in (_read(task / "comm").strip()
                                    for task in (proc / str(pid) / "task").glob("*")) if name)


def qemu_hugepage_mib(pid: int, page_kib: int) -> int:
    """MiB of the process's memory mapped with ``page_kib`` pages (/proc/PID/smaps)."""
    return hugepage_backed_mib(_read(PROC / str(pid) / "smaps"), page_kib)
