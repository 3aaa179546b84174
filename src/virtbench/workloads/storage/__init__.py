"""Storage workloads: bonnie++ and fio on the filesystem the lab provides (``services["fs"]``)."""

from __future__ import annotations

from virtbench.workloads.storage.bonnie import BonnieWorkload
from virtbench.workloads.storage.fio import FioWorkload

__all__ = ["WORKLOADS", "BonnieWorkload", "FioWorkload"]

WORKLOADS = (BonnieWorkload, FioWorkload)
