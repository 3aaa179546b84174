"""A target whose commands run inside a cgroup (a host-side "VM size")."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from virtbench.targets.base import ProcResult, Target

if TYPE_CHECKING:
    from virtbench.labs.cgroups import Cgroup

__all__ = ["CgroupTarget"]


class CgroupTarget(Target):
    """Runs every command of ``inner`` (a local or namespace target) inside ``cgroup``.

    The cgroup launcher is placed before the inner target's own prefix is added, so
    ``ip netns exec`` (if any) runs outside and the workload itself inside the group.
    """

    def __init__(self, inner: Target, cgroup: Cgroup) -> None:
        self.inner = inner
        self.cgroup = cgroup
        self.name = f"{inner.name}+cgroup:{cgroup.name}"

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        input: str | None = None,
        check: bool = True,
    ) -> ProcResult:
        return self.inner.run(self.cgroup.wrap(list(argv)), env=env, cwd=cwd, timeout=timeout,
                              input=input, check=check)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[bytes]:
        return self.inner.spawn(self.cgroup.wrap(list(argv)), env=env, cwd=cwd, stdout=stdout,
                                stderr=stderr)

    def check(self) -> list[str]:
        return self.inner.check()

    def which(self, binary: str) -> str | None:
        return self.inner.which(binary)

    def python(self) -> list[str]:
        return self.inner.python()

    def describe(self) -> str:
        return self.name
