"""The default lab: the machine itself, unchanged. Workloads realise CPU-feature knobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from virtbench.labs.base import Lab, LabState

__all__ = ["LABS", "HostLab"]


class HostLab(Lab):
    name = "host"
    description = "the local machine as it is; variants are realised by each workload's mechanism"
    knobs: ClassVar[Mapping[str, str]] = {
        "cpu_features": "CPU features (beyond x86-64 baseline SSE2/SSE3) the workloads may use; "
        "'host' = no masking",
    }

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        return LabState()


LABS = (HostLab,)
