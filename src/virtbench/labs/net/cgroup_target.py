"""A network namespace whose processes start inside a cgroup (the router VNF's CPU group)."""

from __future__ import annotations

from collections.abc import Sequence

from virtbench.labs.cgroups import Cgroup
from virtbench.targets.local import NetnsTarget

__all__ = ["CgroupNetnsTarget"]


class CgroupNetnsTarget(NetnsTarget):
    """``ip netns exec NS argv``, started inside ``cgroup``.

    The cgroup launcher runs *outside* ``ip netns exec``: that command remounts /sys for the
    namespace, which hides /sys/fs/cgroup from the command it starts.
    """

    def __init__(self, namespace: str, cgroup: Cgroup) -> None:
        super().__init__(namespace)
        self.cgroup = cgroup
        self.name = f"netns:{namespace} cgroup:{cgroup.name}"

    def _wrap(self, argv: Sequence[str]) -> list[str]:
        return self.cgroup.wrap(super()._wrap(argv))
