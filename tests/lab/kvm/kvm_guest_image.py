"""Build (and cache) a tiny test guest from Debian packages: a cloud kernel + busybox initramfs.

The guest prints /proc/cpuinfo between virtbench's console markers on its serial port and then
idles, so a host can read the CPU flags the guest sees without network or agent.
Cached under <repo>/.cache/vbkvm-guest/ (a .gitignore there keeps it out of git).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from virtbench.kvm.probes import CONSOLE_BEGIN, CONSOLE_END
from virtbench.kvm.sandbox_image import download_deb, kernel_package

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".cache" / "vbkvm-guest"

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


def _run(argv: list[str], cwd: Path | None = None) -> str:
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout


def build_guest(cache: Path = CACHE, init: str = INIT, modules: Sequence[str] = ()) -> GuestImage:
    """The kernel and initramfs, downloaded and built once, then reused.

    ``init`` is the guest's /init script; ``modules`` (paths below the kernel package's
    lib/modules/VERSION/kernel) are copied to /lib/modules/vb/ for it to insmod.
    """
    cache.mkdir(parents=True, exist_ok=True)
    (cache.parent / ".gitignore").write_text("*\n")
    kernel, initrd = cache / "vmlinuz", cache / "initrd.cpio"
    if kernel.exists() and initrd.exists():
        return GuestImage(kernel, initrd)
    if shutil.which("cpio") is None:
        raise RuntimeError("cpio is missing (apt-get install cpio); without it the initramfs "
                           "is empty and the guest kernel panics")
    with tempfile.TemporaryDirectory(prefix="vbkvm-build-") as tmp:
        work = Path(tmp)
        for package in (kernel_package(), "busybox-static"):
            deb = download_deb(package, work)
            _run(["dpkg-deb", "-x", str(deb), str(work / "x")])
        vmlinuz = sorted((work / "x" / "boot").glob("vmlinuz-*"))[-1]
        root = work / "root"
        for sub in ("bin", "proc", "sys", "dev", "lib/modules/vb"):
            (root / sub).mkdir(parents=True)
        shutil.copy2(work / "x" / "bin" / "busybox", root / "bin" / "busybox")
        if modules:
            moddir = next((work / "x" / "lib" / "modules").iterdir()) / "kernel"
            for module in modules:
                shutil.copy2(moddir / module, root / "lib" / "modules" / "vb")
        (root / "init").write_text(init)
        os.chmod(root / "init", 0o755)
        names = "\n".join(str(p.relative_to(root)) for p in sorted(root.rglob("*")))
        archive = subprocess.run(["cpio", "-o", "-H", "newc"], cwd=root, input=names.encode(),
                                 check=True, capture_output=True).stdout
        if len(archive) < 1_000_000:
            raise RuntimeError("initramfs is suspiciously small; is cpio working?")
        shutil.copy2(vmlinuz, kernel.with_suffix(".tmp"))
        kernel.with_suffix(".tmp").replace(kernel)
        initrd.with_suffix(".tmp").write_bytes(archive)
        initrd.with_suffix(".tmp").replace(initrd)
    return GuestImage(kernel, initrd)

