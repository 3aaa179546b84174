"""Build (and cache) a tiny test guest from Debian packages: a cloud kernel + busybox initramfs.

The guest prints /proc/cpuinfo between virtbench's console markers on its serial port and then
idles, so a host can read the CPU flags the guest sees without network or agent.
Cached in tests/images.py's cache_dir("vbkvm-guest").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from images import cache_dir

from virtbench.kvm.flag_probes import CONSOLE_BEGIN, CONSOLE_END
from virtbench.kvm.sandbox_image import download_deb, pack_tree, unpack_cloud_kernel

CACHE = cache_dir("vbkvm-guest")

INIT = f"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox echo {CONSOLE_BEGIN}
/bin/busybox cat /proc/cpuinfo
/bin/busybox echo {CONSOLE_END}
while true; do /bin/busybox sleep 3600; done
"""


@dataclass(frozen=True)
class GuestImage:
    kernel: Path
    initrd: Path


def build_guest(cache: Path = CACHE, init: str = INIT, modules: Sequence[str] = ()) -> GuestImage:
    """The kernel and initramfs, downloaded and built once, then reused.

    ``init`` is the guest's /init script; ``modules`` (paths below the kernel package's
    lib/modules/VERSION/kernel) are copied to /lib/modules/vb/ for it to insmod.
    """
    cache.mkdir(parents=True, exist_ok=True)
    kernel, initrd = cache / "vmlinuz", cache / "initrd.cpio"
    # The cache outlives a checkout (tests/images.py): an image of another /init is rebuilt.
    stamp = cache / "recipe"
    recipe = hashlib.sha256("\n".join((init, *modules)).encode()).hexdigest()
    if kernel.exists() and initrd.exists() and stamp.exists() and stamp.read_text() == recipe:
        return GuestImage(kernel, initrd)
    if shutil.which("cpio") is None:
        raise RuntimeError("cpio is missing (apt-get install cpio); without it the initramfs "
                           "is empty and the guest kernel panics")
    with tempfile.TemporaryDirectory(prefix="vbkvm-build-") as tmp:
        work = Path(tmp)
        root = work / "root"
        for sub in ("bin", "proc", "sys", "dev"):
            (root / sub).mkdir(parents=True)
        vmlinuz = unpack_cloud_kernel(work, modules, root / "lib" / "modules" / "vb")
        subprocess.run(["dpkg-deb", "-x", str(download_deb("busybox-static", work)),
                        str(work / "busybox")], check=True, capture_output=True, timeout=300)
        shutil.copy2(work / "busybox" / "bin" / "busybox", root / "bin" / "busybox")
        (root / "init").write_text(init)
        os.chmod(root / "init", 0o755)
        pack_tree(root, initrd.with_suffix(".tmp"))
        if initrd.with_suffix(".tmp").stat().st_size < 1_000_000:
            raise RuntimeError("initramfs is suspiciously small; is cpio working?")
        shutil.copy2(vmlinuz, kernel.with_suffix(".tmp"))
        kernel.with_suffix(".tmp").replace(kernel)
        initrd.with_suffix(".tmp").replace(initrd)
    stamp.write_text(recipe)
    return GuestImage(kernel, initrd)

