"""The guest lab's image: the sandbox's Debian guest plus the storage workloads' tools and the
guest kernel's disk drivers (virtio-blk, virtio-scsi + sd), cached by content like the sandbox
image (:func:`virtbench.kvm.sandbox_image.recipe`)."""

from __future__ import annotations

from pathlib import Path

from virtbench.kvm.sandbox_image import DebianGuestImage, build_debian_guest

__all__ = ["DISK_MODULES", "GUEST_PACKAGES", "build_guest_image"]

GUEST_PACKAGES = ("fio", "bonnie++", "e2fsprogs", "procps", "util-linux")
"""What storage.fio and storage.bonnie run inside the guest (mkfs, df, sysctl drop_caches)."""

DISK_MODULES = (
    "drivers/block/virtio_blk.ko",
    "drivers/scsi/scsi_common.ko",
    "drivers/scsi/scsi_mod.ko",
    "drivers/scsi/sd_mod.ko",
    "drivers/scsi/virtio_scsi.ko",
)
"""Loaded in this order over SSH (their modinfo ``depends``); Debian's cloud kernel has ext4
built in and no AHCI driver, so a SATA disk is invisible to this guest (``bus: sata`` is refused
for the built image)."""


def build_guest_image(cache: Path) -> DebianGuestImage:
    return build_debian_guest(cache, GUEST_PACKAGES, DISK_MODULES)
