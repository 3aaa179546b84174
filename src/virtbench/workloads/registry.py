"""Workloads by name, from the one plugin registry (``virtbench.registry``)."""

from __future__ import annotations

from virtbench import registry
from virtbench.model import VirtbenchError
from virtbench.workloads.base import Workload

__all__ = ["all_workloads", "get_workload"]


def all_workloads() -> dict[str, type[Workload]]:
    return registry.classes(Workload, "WORKLOADS", lambda cls: cls.name)  # type: ignore[type-abstract]


def get_workload(name: str) -> type[Workload]:
    workloads = all_workloads()
    if name not in workloads:
        known = ", ".join(workloads)
        raise VirtbenchError(f"unknown workload '{name}'; known workloads: {known}")
    return workloads[name]
