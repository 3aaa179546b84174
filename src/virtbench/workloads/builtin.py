"""The workloads that ship with virtbench, registered through the same hook as plugins.

Every module under ``virtbench.workloads`` that defines ``WORKLOADS`` (a tuple of Workload
subclasses) is a built-in; adding a family needs no edit here.
"""

from __future__ import annotations

from collections.abc import Iterable

from virtbench.discovery import discover
from virtbench.workloads.base import Workload

__all__ = ["register"]


def register() -> Iterable[type[Workload]]:
    import virtbench.workloads as package

    yield from discover(package, "WORKLOADS")
