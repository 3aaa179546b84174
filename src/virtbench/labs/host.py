"""The default lab: the machine itself, unchanged. Workloads realise CPU-feature knobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from virtbench.labs.lab_contract import Lab, LabState

__all__ = ["LABS", "HostLab"]


class HostLab(Lab):
    name = "host"
    description = "the local machine as it is; variants are realised by each workload's mechanism"

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        return LabState()


LABS = (HostLab,)
