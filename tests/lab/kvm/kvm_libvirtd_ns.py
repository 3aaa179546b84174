"""Run inside ``unshare --mount``: give libvirtd private state dirs, then exec it.

Usage: python kvm_libvirtd_ns.py BASE_DIR

libvirtd running as root always uses the system paths (/etc/libvirt, /run/libvirt,
/var/lib/libvirt...). In a private mount namespace we cover them with a tmpfs (/run), an overlay
whose writes land under BASE_DIR (/var) and a bind mount (/etc/libvirt), so the system's own
libvirt (if any) is never touched and nothing is left behind on the host.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def main() -> None:
    base = Path(sys.argv[1])
    etc = base / "etc"
    (base / "var-upper").mkdir(exist_ok=True)
    (base / "var-work").mkdir(exist_ok=True)
    mount("--make-rprivate", "/")
    mount("-t", "tmpfs", "vbkvm-run", "/run")
    mount("-t", "overlay", "vbkvm-var", "-o",
          f"lowerdir=/var,upperdir={base / 'var-upper'},workdir={base / 'var-work'}", "/var")
    mount("--bind", str(etc), "/etc/libvirt")
    # Debian's libvirtd resolves its built-in default user 'libvirt-qemu' (created by the
    # libvirt-daemon-system package) before reading qemu.conf: give it private passwd/group files.
    for name, line in (("passwd", "libvirt-qemu:x:64055:64055::/var/lib/libvirt:/usr/sbin/nologin"),
                       ("group", "libvirt-qemu:x:64055:")):
        text = Path(f"/etc/{name}").read_text()
        if not any(row.startswith("libvirt-qemu:") for row in text.splitlines()):
            text = text.rstrip("\n") + "\n" + line + "\n"
        (base / name).write_text(text)
        mount("--bind", str(base / name), f"/etc/{name}")
    for sub in ("/var/lib/libvirt/qemu", "/var/cache/libvirt/qemu", "/var/log/libvirt/qemu",
                "/run/libvirt"):
        Path(sub).mkdir(parents=True, exist_ok=True)
    cache = os.environ.get("VBKVM_CAPS_CACHE")
    if cache:
        # QEMU capability probing takes seconds; a persistent cache keeps reruns fast.
        Path(cache).mkdir(parents=True, exist_ok=True)
        mount("--bind", cache, "/var/cache/libvirt/qemu")
    os.execv("/usr/sbin/libvirtd",
             ["libvirtd", "--config", str(etc / "libvirtd.conf"),
              "--pid-file", str(base / "libvirtd.pid")])


if __name__ == "__main__":
    main()
