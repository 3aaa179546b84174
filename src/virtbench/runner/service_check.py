"""Before anything runs: every workload's lab provides the services the workload needs."""

from __future__ import annotations

from collections.abc import Iterable

from virtbench.labs.lab_contract import Lab
from virtbench.service_base import kind_names
from virtbench.workloads.workload_contract import Workload

__all__ = ["service_problems"]


def service_problems(lab: Lab, workloads: Iterable[Workload]) -> list[str]:
    """One line per workload whose needed service kind ``lab`` does not provide, naming the
    workload, the kind and what the lab provides instead."""
    provided = lab.provided_services()
    declared = type(lab).provides
    problems: list[str] = []
    for workload in workloads:
        for kind in workload.needed_services():
            if kind in provided:
                continue
            if kind in declared:  # the lab can, but its params turned that part off
                problem = (f"workload {workload.name} needs a {kind.__name__}; lab {lab.name} "
                           f"provides one only with other params (with these it provides "
                           f"{kind_names(provided)})")
            else:
                problem = (f"workload {workload.name} needs a {kind.__name__}; lab {lab.name} "
                           f"provides {kind_names(provided)}")
            if problem not in problems:
                problems.append(problem)
    return problems
