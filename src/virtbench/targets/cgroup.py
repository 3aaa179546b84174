"""A local (or namespace) target whose processes start inside a cgroup: a host-side "VM size",
a VNF's CPU group, a stressed neighbour.

Placing processes is the targets' job (only targets spawn); making the group, its limits and
removing it is the labs' (``labs/cgroups.py``). The two meet in :class:`CgroupMembership`: the
``cgroup.procs`` files a new process writes its own PID into.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from virtbench.targets.local import LocalTarget

__all__ = ["CgroupMembership", "CgroupTarget", "cgroup_argv", "kill_members"]

# A fixed script: the procs files and the command arrive as arguments, never as text inside the
# script, so nothing is ever interpreted by the shell. Exit 125 when a write fails.
_LAUNCHER = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; '
    'exec "$@"'
)


class CgroupMembership(Protocol):
    """What a target needs of a group: its name and the files a process joins it through."""

    @property
    def name(self) -> str: ...

    def procs_files(self) -> list[Path]:
        """One ``cgroup.procs`` per hierarchy (v2: one; v1: one per controller)."""
        ...

    def perf_event_path(self) -> str | None:
        """The group as ``perf -G`` names it, or None when it has no perf_event group."""
        ...


def cgroup_argv(procs_files: Sequence[Path], argv: Sequence[str]) -> list[str]:
    """``argv`` started by a launcher that first joins every group file, then ``exec``s it
    (same PID, so the command and all its children are inside); unchanged without files."""
    if not procs_files:
        return list(argv)
    files = [str(p) for p in procs_files]
    return ["sh", "-c", _LAUNCHER, "vb-cgroup", str(len(files)), *files, *argv]


class CgroupTarget(LocalTarget):
    """Every command of ``inner`` (this machine, or a network namespace on it) inside ``group``.

    The launcher runs *outside* the inner prefix: ``ip netns exec`` remounts /sys for the
    namespace, which hides /sys/fs/cgroup from the command it starts. Children inherit the
    group, so the workload itself runs inside it.
    """

    def __init__(self, inner: LocalTarget, group: CgroupMembership) -> None:
        self.inner = inner
        self.group = group
        self.name = f"{inner.name}+cgroup:{group.name}"

    def _wrap(self, argv: Sequence[str]) -> list[str]:
        return cgroup_argv(self.group.procs_files(), self.inner._wrap(argv))

    def check(self) -> list[str]:
        return self.inner.check()

    def which(self, binary: str) -> str | None:
        return self.inner.which(binary)

    def python(self) -> list[str]:
        return self.inner.python()


def kill_members(directory: Path) -> None:
    """SIGKILL processes left in a group virtbench made (a CgroupTarget started them there)."""
    protected = {os.getpid(), os.getppid()}
    try:
        pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
    except OSError:
        return
    for pid in pids:
        if pid in protected:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
