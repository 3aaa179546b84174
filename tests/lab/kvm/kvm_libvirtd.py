"""A private libvirtd for tests: the product's (virtbench.kvm.sandbox_libvirtd) in a temp dir.

Never uses or touches the system's libvirt service. Every domain on it belongs to the test,
so ``stop()`` destroys and undefines them all before ending the daemon (by its PID).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from images import cache_dir

from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd as _ProductLibvirtd
from virtbench.kvm.sandbox_libvirtd import remove_domain

__all__ = ["PrivateLibvirtd", "remove_domain"]

CAPS_CACHE = cache_dir("vbkvm-libvirt-qemu-cache")


class PrivateLibvirtd(_ProductLibvirtd):
    def __init__(self) -> None:
        CAPS_CACHE.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(Path(tempfile.mkdtemp(prefix="vbkvm-libvirtd-")), caps_cache=CAPS_CACHE)

    def stop(self) -> bool:
        try:
            return super().stop()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)
