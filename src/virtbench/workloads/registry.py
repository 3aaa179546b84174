"""Workload discovery: built-ins and third-party plugins share one entry-point group.

A plugin package declares, in its pyproject.toml::

    [project.entry-points."virtbench.workloads"]
    mine = "my_package.virtbench_plugin:register"

where ``register()`` returns an iterable of ``Workload`` subclasses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from importlib.metadata import entry_points

from virtbench.model import VirtbenchError
from virtbench.workloads.base import Workload

__all__ = ["ENTRY_POINT_GROUP", "all_workloads", "get_workload"]

ENTRY_POINT_GROUP = "virtbench.workloads"


def _builtin() -> Iterable[type[Workload]]:
    from virtbench.workloads.builtin import register

    return register()


@cache
def all_workloads() -> dict[str, type[Workload]]:
    found: dict[str, type[Workload]] = {}
    loaders: list[Callable[[], Iterable[type[Workload]]]] = [_builtin]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.value == "virtbench.workloads.builtin:register":
            continue
        loaders.append(ep.load())
    for load in loaders:
        for cls in load():
            found[cls.name] = cls
    return dict(sorted(found.items()))


def get_workload(name: str) -> type[Workload]:
    workloads = all_workloads()
    if name not in workloads:
        known = ", ".join(workloads)
        raise VirtbenchError(f"unknown workload '{name}'; known workloads: {known}")
    return workloads[name]
