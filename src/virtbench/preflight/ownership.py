"""Which processes belong to this run, so that the rest of the host counts as foreign load."""

from __future__ import annotations

import os
import secrets

from virtbench.preflight.procfs import HostReader, ProcInfo

__all__ = ["MARKER_VARIABLE", "RunProcesses", "foreign_ticks", "user_space"]

# Set in our environment while a run is on: children inherit it, and so do the daemons a lab
# starts that detach from us (nginx, varnishd, ovs-vswitchd), which the process tree loses.
MARKER_VARIABLE = "VIRTBENCH_RUN_MARK"

_KTHREADD = 2


class RunProcesses:
    """This process, its descendants, and processes carrying the run's marker (with theirs)."""

    def __init__(self, reader: HostReader, root_pid: int | None = None,
                 marker: str | None = None) -> None:
        self.reader = reader
        self.root_pid = os.getpid() if root_pid is None else root_pid
        self.marker = marker
        self._marked: dict[tuple[int, int], bool] = {}  # (pid, starttime) -> carries marker

    @classmethod
    def with_new_marker(cls, reader: HostReader) -> RunProcesses:
        """Mark this process's environment so every process it starts from now on is ours."""
        marker = os.environ.get(MARKER_VARIABLE) or secrets.token_hex(8)
        os.environ[MARKER_VARIABLE] = marker
        return cls(reader, marker=marker)

    def _carries_marker(self, info: ProcInfo) -> bool:
        if self.marker is None:
            return False
        key = (info.pid, info.starttime)
        if key not in self._marked:  # environ is fixed at exec: read each process once
            self._marked[key] = self.reader.environ_has(info.pid,
                                                        f"{MARKER_VARIABLE}={self.marker}")
        return self._marked[key]

    def ours(self, procs: dict[int, ProcInfo]) -> set[int]:
        children: dict[int, list[int]] = {}
        for info in procs.values():
            children.setdefault(info.ppid, []).append(info.pid)
        roots = [self.root_pid] + [p for p, i in procs.items() if self._carries_marker(i)]
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            stack.extend(children.get(pid, []))
        return seen


def user_space(info: ProcInfo) -> bool:
    # Kernel threads (children of kthreadd) work for everyone, e.g. softirq for our own traffic.
    return info.pid != _KTHREADD and info.ppid != _KTHREADD


def foreign_ticks(before: dict[int, ProcInfo], after: dict[int, ProcInfo],
                  ours: set[int]) -> list[tuple[ProcInfo, int]]:
    """CPU ticks each foreign user-space process used between two snapshots, largest first.

    A process that started in between counts from zero; one that ended in between is lost (its
    time went to a parent we cannot attribute).
    """
    used = []
    for pid, info in after.items():
        if pid in ours or not user_space(info):
            continue
        prev = before.get(pid)
        start = prev.ticks if prev is not None and prev.starttime == info.starttime else 0
        if info.ticks > start:
            used.append((info, info.ticks - start))
    return sorted(used, key=lambda item: -item[1])
