"""Stressed neighbours (study 002): stress-ng processes, each held to its CPU share by a cgroup."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from virtbench.labs.base import Manifest
from virtbench.labs.cgroups import Cgroup, CgroupLimits
from virtbench.targets.base import Target

__all__ = ["Neighbour", "start_neighbour"]


@dataclass
class Neighbour:
    """One stressed neighbour: its cgroup and its stress-ng process."""

    index: int
    cgroup: Cgroup
    popen: subprocess.Popen[bytes]
    record: dict[str, object]

    def stop(self, manifest: Manifest) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        manifest.remove("pid", self.record)
        self.cgroup.remove()


def start_neighbour(target: Target, manifest: Manifest, name: str, index: int,
                    cpu_quota_cores: float, load_pct: int, cpus: list[int] | None) -> Neighbour:
    """A neighbour VNF stand-in: ``stress-ng --cpu 1 --cpu-load LOAD`` in cgroup ``name``."""
    cgroup = Cgroup(name, CgroupLimits(cpus=cpus, cpu_quota_cores=cpu_quota_cores), manifest)
    cgroup.create()
    argv = ["stress-ng", "--cpu", "1", "--cpu-load", str(load_pct), "--timeout", "86400s",
            "--quiet"]
    popen = target.spawn(cgroup.wrap(argv))
    record: dict[str, object] = {"pid": popen.pid, "ns": "", "argv0": "stress-ng"}
    manifest.add("pid", record)
    return Neighbour(index, cgroup, popen, record)
