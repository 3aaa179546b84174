"""Stressed neighbours (study 002): stress-ng processes, each held to its CPU share by a cgroup."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from virtbench.labs.base import Manifest
from virtbench.labs.cgroups import Cgroup, CgroupLimits
from virtbench.model import VirtbenchError
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
    neighbour = Neighbour(index, cgroup, popen, record)
    try:
        _wait_inside(neighbour)
    except VirtbenchError:
        neighbour.stop(manifest)
        raise
    return neighbour


def _wait_inside(neighbour: Neighbour, timeout_s: float = 10.0) -> None:
    """Return once the launcher has put itself (then exec'd stress-ng, same PID) into every
    cgroup file: a measurement must not start while a neighbour still runs unconstrained."""
    pid = str(neighbour.popen.pid)
    deadline = time.monotonic() + timeout_s
    files = neighbour.cgroup.procs_files()
    while not all(pid in f.read_text().split() for f in files):
        if neighbour.popen.poll() is not None:
            raise VirtbenchError(f"neighbour {neighbour.index}: stress-ng exited "
                                 f"({neighbour.popen.returncode}) before joining its cgroup")
        if time.monotonic() > deadline:
            raise VirtbenchError(f"neighbour {neighbour.index}: not in its cgroup after "
                                 f"{timeout_s:.0f} s")
        time.sleep(0.01)
