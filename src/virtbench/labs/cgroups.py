"""Resource limits for processes virtbench starts: cgroup v2, v1, or a hybrid of both.

A group lives under virtbench's own subtree only: ``<v2 root>/virtbench/NAME`` or, on v1, one
directory per controller (``/sys/fs/cgroup/cpuset/virtbench/NAME``). Each controller is taken
from v2 when the unified hierarchy offers it, else from its v1 mount (this machine: cpu, cpuset
and memory exist only on v1). Nothing of the calling session is ever moved: processes join a
group when a :class:`~virtbench.targets.cgroup.CgroupTarget` starts them (only targets spawn);
this module makes, limits and removes the group.
"""

from __future__ import annotations

import contextlib
import errno
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from virtbench.labs.lab_contract import Manifest
from virtbench.model import VirtbenchError
from virtbench.targets.cgroup import kill_members

__all__ = ["SUBTREE", "Cgroup", "CgroupLayout", "CgroupLimits", "remove_cgroup_dir"]

SUBTREE = "virtbench"
CFS_PERIOD_US = 100_000


class CgroupLimits(BaseModel):
    """Limits of one group; None leaves that resource unlimited (its controller is not used)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    cpus: list[int] | None = Field(None, description="CPU numbers the group may run on (cpuset)")
    cpu_quota_cores: float | None = Field(
        None, ge=0.01, le=4096,
            description="CPU time per wall second, in cores (CFS quota / period)")
    memory_bytes: int | None = Field(
        None, gt=0, description="memory limit in bytes, page cache included")

    def controllers(self) -> list[str]:
        out = []
        if self.cpus is not None:
            out.append("cpuset")
        if self.cpu_quota_cores is not None:
            out.append("cpu")
        if self.memory_bytes is not None:
            out.append("memory")
        return out


@dataclass(frozen=True)
class CgroupLayout:
    """Where each controller is mounted: v1 mount points and the v2 root with its controllers."""

    v1: dict[str, Path] = field(default_factory=dict)
    v2: Path | None = None
    v2_controllers: frozenset[str] = frozenset()

    @classmethod
    def probe(cls, mounts_text: str | None = None) -> CgroupLayout:
        text = mounts_text if mounts_text is not None else Path("/proc/self/mounts").read_text()
        v1: dict[str, Path] = {}
        v2: Path | None = None
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 4:
                continue
            mount_point, fstype, options = Path(parts[1]), parts[2], parts[3].split(",")
            if fstype == "cgroup2":
                v2 = mount_point
            elif fstype == "cgroup":
                for option in options:
                    if option in ("cpu", "cpuset", "memory", "perf_event"):
                        v1[option] = mount_point
        controllers: frozenset[str] = frozenset()
        if v2 is not None:
            try:
                controllers = frozenset((v2 / "cgroup.controllers").read_text().split())
            except OSError:
                controllers = frozenset()
        return cls(v1, v2, controllers)

    def version_of(self, controller: str) -> str | None:
        """'v2', 'v1' or None (unusable) for one controller; v2 preferred when offered.
        perf_event needs no enabling in v2: every v2 group has it unless a v1 hierarchy holds
        the controller."""
        if controller in self.v2_controllers:
            return "v2"
        if controller == "perf_event" and "perf_event" not in self.v1 and self.v2 is not None:
            return "v2"
        if controller in self.v1:
            return "v1"
        return None

    def describe(self) -> str:
        if self.v2 is not None and not self.v1:
            kind = "v2"
        elif self.v2 is None:
            kind = "v1"
        else:
            kind = "hybrid"
        usable = ", ".join(f"{c}={self.version_of(c) or 'unavailable'}"
                           for c in ("cpu", "cpuset", "memory"))
        return f"{kind} ({usable})"


def remove_cgroup_dir(directory: Path) -> bool:
    """Empty (kill leftovers started inside it) and rmdir one group; True when it is gone."""
    if not directory.exists():
        return True
    if SUBTREE not in directory.parts:
        raise VirtbenchError(f"refusing to remove {directory}: not under a '{SUBTREE}' subtree")
    for child in sorted((p for p in directory.iterdir() if p.is_dir()), reverse=True):
        remove_cgroup_dir(child)
    deadline = time.monotonic() + 5.0
    while True:  # ends: done, or past the deadline below
        kill_members(directory)
        try:
            directory.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
            time.sleep(0.05)


class Cgroup:
    """A named group under virtbench's subtree with the given limits."""

    def __init__(self, name: str, limits: CgroupLimits, manifest: Manifest | None = None,
                 *, layout: CgroupLayout | None = None) -> None:
        if not name or "/" in name or name.startswith("."):
            raise VirtbenchError(f"cgroup name {name!r} must be a plain directory name")
        self.name = name
        self.limits = limits
        self.manifest = manifest
        self.layout = layout or CgroupLayout.probe()
        self.dirs: dict[str, Path] = {}
        """controller → group directory (v2: the same directory for all controllers)."""
        for controller in limits.controllers():
            version = self.layout.version_of(controller)
            if version is None:
                raise VirtbenchError(
                    f"cgroup controller '{controller}' is not available here "
                    f"({self.layout.describe()}); drop the limit that needs it")
            if version == "v2":
                assert self.layout.v2 is not None
                self.dirs[controller] = self.layout.v2 / SUBTREE / name
            else:
                self.dirs[controller] = self.layout.v1[controller] / SUBTREE / name
        if self.dirs:
            # Membership only (no limit): the group perf -G records (profile scope cgroup); on a
            # v1 host whose perf_event controller no hierarchy holds, a v2 group has it.
            version = self.layout.version_of("perf_event")
            if version == "v2":
                assert self.layout.v2 is not None
                self.dirs.setdefault("perf_event", self.layout.v2 / SUBTREE / name)
            elif version == "v1":
                self.dirs["perf_event"] = self.layout.v1["perf_event"] / SUBTREE / name

    @staticmethod
    def detect() -> str:
        """'v1', 'v2' or 'hybrid', and which of cpu, cpuset, memory are usable where."""
        return CgroupLayout.probe().describe()

    def _unique_dirs(self) -> list[Path]:
        return sorted(set(self.dirs.values()))

    def _write(self, directory: Path, filename: str, value: str) -> None:
        try:
            (directory / filename).write_text(value)
        except OSError as exc:
            raise VirtbenchError(
                f"cgroup {self.name}: cannot write {value!r} to {directory / filename}: "
                f"{exc.strerror}") from exc

    def _parent_setup(self, controller: str, parent: Path) -> None:
        if self.dirs[controller].parent != parent or controller == "perf_event":
            return  # perf_event: membership only, nothing to enable or copy
        if self.layout.version_of(controller) == "v2":
            # v2 needs the controller delegated to children of our own subtree directory.
            control = (parent / "cgroup.subtree_control").read_text().split()
            if controller not in control:
                self._write(parent, "cgroup.subtree_control", f"+{controller}")
        elif controller == "cpuset":
            # v1 cpuset groups start empty; a process cannot join until cpus and mems are set.
            for key in ("cpuset.cpus", "cpuset.mems"):
                if not (parent / key).read_text().strip():
                    value = (parent.parent / key).read_text().strip()
                    self._write(parent, key, value)

    def create(self) -> None:
        for controller, directory in sorted(self.dirs.items()):
            if controller == "perf_event" and list(self.dirs.values()).count(directory) == 1:
                self._create_membership_only(directory)
                continue
            parent = directory.parent
            for _ in range(5):
                # Another developer's group may remove the shared parent concurrently: retry.
                try:
                    parent.mkdir(exist_ok=True)
                    self._parent_setup(controller, parent)
                    if not directory.exists():
                        if self.manifest is not None:
                            self.manifest.add("cgroup", str(directory))
                        directory.mkdir()
                    break
                except FileNotFoundError:
                    continue
            else:
                raise VirtbenchError(f"cgroup {self.name}: could not create {directory}")
        self._apply()

    def _create_membership_only(self, directory: Path) -> None:
        """The perf_event group: best effort. Where this host refuses it (a container's
        read-only v2 hierarchy), the group works without it and profile scope cgroup records
        the whole host with a note."""
        try:
            directory.parent.mkdir(exist_ok=True)
            if not directory.exists():
                if self.manifest is not None:
                    self.manifest.add("cgroup", str(directory))
                directory.mkdir()
            if not (directory / "cgroup.procs").exists():
                raise OSError(errno.ENOENT, "no cgroup.procs", str(directory))
        except OSError:
            del self.dirs["perf_event"]
            with contextlib.suppress(OSError):
                directory.rmdir()
            if self.manifest is not None:
                self.manifest.remove("cgroup", str(directory))

    def _apply(self) -> None:
        limits = self.limits
        for controller, directory in self.dirs.items():
            v2 = self.layout.version_of(controller) == "v2"
            if controller == "cpuset" and limits.cpus is not None:
                allowed = _allowed_cpus(directory.parent)
                missing = sorted(set(limits.cpus) - set(allowed)) if allowed else []
                if missing:
                    raise VirtbenchError(
                        f"cgroup {self.name}: CPUs {missing} do not exist here "
                        f"(available: {_format_cpulist(allowed)})")
                self._write(directory, "cpuset.cpus", _format_cpulist(limits.cpus))
                mems = (directory.parent / "cpuset.mems").read_text().strip()
                if not v2 or mems:
                    self._write(directory, "cpuset.mems", mems or "0")
            elif controller == "cpu" and limits.cpu_quota_cores is not None:
                quota = max(1000, round(limits.cpu_quota_cores * CFS_PERIOD_US))
                if v2:
                    self._write(directory, "cpu.max", f"{quota} {CFS_PERIOD_US}")
                else:
                    self._write(directory, "cpu.cfs_period_us", str(CFS_PERIOD_US))
                    self._write(directory, "cpu.cfs_quota_us", str(quota))
            elif controller == "memory" and limits.memory_bytes is not None:
                if v2:
                    self._write(directory, "memory.max", str(limits.memory_bytes))
                    if (directory / "memory.swap.max").exists():
                        self._write(directory, "memory.swap.max", "0")
                else:
                    self._write(directory, "memory.limit_in_bytes", str(limits.memory_bytes))
                    memsw = directory / "memory.memsw.limit_in_bytes"
                    if memsw.exists():
                        # Without swap in the limit a guest-sized group could swap instead.
                        self._write(directory, memsw.name, str(limits.memory_bytes))

    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self._unique_dirs()]

    def perf_event_path(self) -> str | None:
        """The group as ``perf -G`` names it (relative to its hierarchy's mount), or None
        when this machine offers no perf_event group."""
        directory = self.dirs.get("perf_event")
        if directory is None:
            return None
        return str(directory.relative_to(directory.parent.parent))

    def remove(self) -> None:
        """Remove the group's directories; leftover processes started inside are killed."""
        failed = []
        for directory in self._unique_dirs():
            if remove_cgroup_dir(directory):
                if self.manifest is not None:
                    self.manifest.remove("cgroup", str(directory))
                with contextlib.suppress(OSError):
                    directory.parent.rmdir()  # the shared subtree dir, only when empty
            else:
                failed.append(str(directory))
        if failed:
            raise VirtbenchError(f"cgroup {self.name}: could not remove {', '.join(failed)} "
                                 "(processes still inside)")

    def __enter__(self) -> Cgroup:
        self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _allowed_cpus(parent: Path) -> list[int]:
    for name in ("cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"):
        path = parent / name
        if path.exists() and path.read_text().strip():
            return _parse_cpulist(path.read_text())
    return []


def _parse_cpulist(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def _format_cpulist(cpus: list[int]) -> str:
    return ",".join(str(c) for c in sorted(set(cpus)))
