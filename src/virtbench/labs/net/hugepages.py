"""Hugepages for DPDK that the lab reserves itself and gives back: extra 2 MiB pages in the
kernel pool plus a private hugetlbfs mount, both recorded in the manifest first so that
``virtbench lab clean`` can undo them after a crash.

Only the pages the lab added are returned (the pool is read again and lowered by that count),
so a reservation made by someone else meanwhile survives.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from virtbench.labs.lab_contract import Manifest
from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import Target

__all__ = ["PAGE_KIB", "HugepageReservation", "release_recorded", "sysfs_pool", "unmount"]

PAGE_KIB = 2048
SYSFS = Path("/sys/kernel/mm/hugepages")


def sysfs_pool(page_kib: int = PAGE_KIB) -> Path:
    """The kernel's persistent pool size file for one page size."""
    return SYSFS / f"hugepages-{page_kib}kB" / "nr_hugepages"


def _read(path: Path) -> int:
    return int(path.read_text().strip())


def _lower_pool(record: dict[str, Any]) -> str:
    pool = Path(str(record["pool"]))
    pages = int(record["pages"])
    with contextlib.suppress(OSError, ValueError):
        pool.write_text(str(max(0, _read(pool) - pages)))
        return f"{pages} hugepages returned to {pool}"
    return f"could not return {pages} hugepages to {pool}"


def unmount(target: Target, mount: str, *, tries: int = 25) -> bool:
    """Unmount, retrying while it is busy (a just-killed process may still be closing its
    files); True when it is gone or was never mounted."""
    for _ in range(tries):
        result = target.run(["umount", mount], check=False)
        if result.returncode == 0 or "not mounted" in result.stderr \
                or "no mount point" in result.stderr:
            return True
        time.sleep(0.2)
    return False


def release_recorded(manifest: Manifest) -> list[str]:
    """Give back every pool increase the manifest records (after its mounts are gone)."""
    done = []
    for record in manifest.items("hugepages"):
        done.append(_lower_pool(record))
        manifest.remove("hugepages", record)
    return done


@dataclass
class HugepageReservation:
    """``size_mb`` of 2 MiB pages added to the pool and a hugetlbfs mounted at ``mount_dir``
    (mount and umount run on ``target``, this machine)."""

    target: Target
    manifest: Manifest
    mount_dir: Path
    size_mb: int
    page_kib: int = PAGE_KIB
    record: dict[str, Any] | None = None

    @property
    def pages(self) -> int:
        return math.ceil(self.size_mb * 1024 / self.page_kib)

    def acquire(self) -> None:
        pool = sysfs_pool(self.page_kib)
        if not pool.exists():
            raise VirtbenchError(f"hugepages: this kernel has no {self.page_kib} KiB pages "
                                 f"({pool} missing)")
        before = _read(pool)
        self.record = {"pool": str(pool), "pages": self.pages}
        self.manifest.add("hugepages", self.record)
        pool.write_text(str(before + self.pages))
        got = _read(pool) - before
        if got < self.pages:
            self.manifest.remove("hugepages", self.record)
            self.record = {"pool": str(pool), "pages": max(0, got)}
            self.manifest.add("hugepages", self.record)
            self.release()
            raise VirtbenchError(
                f"hugepages: the kernel gave {got} of {self.pages} {self.page_kib} KiB pages "
                f"({self.size_mb} MiB); memory is too fragmented or too small — lower "
                "dpdk_memory_mb, reserve pages at boot (hugepages= on the kernel command line) "
                "and use dpdk_hugepages: system, or dpdk_hugepages: none")
        self.mount_dir.mkdir(parents=True, exist_ok=True)
        self.manifest.add("mount", str(self.mount_dir))
        res = self.target.run(["mount", "-t", "hugetlbfs", "-o", f"pagesize={self.page_kib}K",
                               "nodev", str(self.mount_dir)], check=False)
        if res.returncode != 0:
            self.manifest.remove("mount", str(self.mount_dir))
            self.release()
            raise VirtbenchError(f"hugepages: mount hugetlbfs on {self.mount_dir} failed: "
                                 f"{res.stderr.strip()}")

    def release(self) -> None:
        """Unmount (which frees DPDK's page files), then lower the pool by what we added."""
        mount = str(self.mount_dir)
        if mount in self.manifest.items("mount"):
            if not unmount(self.target, mount):
                return  # still busy: its pages stay in use; both records stay for lab clean
            self.manifest.remove("mount", mount)
        with contextlib.suppress(OSError):
            self.mount_dir.rmdir()
        if self.record is not None:
            _lower_pool(self.record)
            self.manifest.remove("hugepages", self.record)
            self.record = None
