"""Storage workloads: bonnie++ and fio on the filesystem the lab provides (its
``FilesystemService``), else in ``params.directory`` or the trial's directory."""

from __future__ import annotations

from virtbench.workloads.storage.bonnie import BonnieWorkload
from virtbench.workloads.storage.fio import FioWorkload

__all__ = ["WORKLOADS", "BonnieWorkload", "FioWorkload"]

WORKLOADS = (BonnieWorkload, FioWorkload)
