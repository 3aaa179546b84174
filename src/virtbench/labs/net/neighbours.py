"""Stressed neighbours (study 002): stress-ng processes, each held to its CPU share by a cgroup."""

from __future__ import annotations

from dataclasses import dataclass

from virtbench.labs.cgroups import Cgroup, CgroupLimits
from virtbench.labs.daemons import start_recorded
from virtbench.labs.lab_contract import Manifest
from virtbench.model import VirtbenchError
from virtbench.targets.cgroup import CgroupTarget
from virtbench.targets.daemon import Daemon, wait_until
from virtbench.targets.local import LocalTarget

__all__ = ["Neighbour", "start_neighbour"]


@dataclass
class Neighbour:
    """One stressed neighbour: its cgroup and its stress-ng process."""

    index: int
    cgroup: Cgroup
    daemon: Daemon

    def stop(self) -> None:
        self.daemon.stop()
        self.cgroup.remove()


def start_neighbour(target: LocalTarget, manifest: Manifest, name: str, index: int,
                    cpu_quota_cores: float, load_pct: int, cpus: list[int] | None) -> Neighbour:
    """A neighbour VNF stand-in: ``stress-ng --cpu 1 --cpu-load LOAD`` in cgroup ``name``."""
    cgroup = Cgroup(name, CgroupLimits(cpus=cpus, cpu_quota_cores=cpu_quota_cores), manifest)
    cgroup.create()
    argv = ["stress-ng", "--cpu", "1", "--cpu-load", str(load_pct), "--timeout", "86400s",
            "--quiet"]
    daemon = start_recorded(manifest, CgroupTarget(target, cgroup), argv,
                            what=f"neighbour {index} (stress-ng)")
    neighbour = Neighbour(index, cgroup, daemon)
    try:
        # The launcher puts itself (then exec's stress-ng, same PID) into every cgroup file: a
        # measurement must not start while a neighbour still runs unconstrained.
        pid, files = str(daemon.pid), cgroup.procs_files()
        wait_until(lambda: all(pid in f.read_text().split() for f in files),
                   f"neighbour {index} in its cgroup", daemons=[daemon], timeout_s=10.0,
                   interval_s=0.01)
    except VirtbenchError:
        neighbour.stop()
        raise
    return neighbour
