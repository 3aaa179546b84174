"""A tiny TCG guest whose only NIC is a vhost-user virtio-net port of the lab's OVS-DPDK.

Kernel and busybox from Debian packages (the kvm tests' image builder), plus the virtio-net
modules; /init gives eth0 the address passed as ``vbnet_ip=`` on the kernel command line. The
guest kernel answers ARP and ICMP by itself, so no user space beyond busybox is needed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kvm"))  # the shared image builder

from kvm_debian_guest import MODULES
from kvm_guest_image import CACHE, GuestImage, build_guest

READY = "vbnet-guest-ready"
INIT = f"""#!/bin/busybox sh
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
for m in {' '.join(Path(m).name for m in MODULES)}; do
  $bb insmod /lib/modules/vb/$m || echo "insmod $m failed"
done
ip=$($bb sed -n 's/.*vbnet_ip=\\([^ ]*\\).*/\\1/p' /proc/cmdline)
$bb ip link set lo up
$bb ip link set eth0 up
$bb ip addr add $ip dev eth0
echo {READY}
while true; do $bb sleep 3600; done
"""


def vhost_guest_image() -> GuestImage:
    return build_guest(CACHE.parent / "vbnet-vhost-guest", INIT, MODULES)


def start_guest(image: GuestImage, socket: Path, address_cidr: str, console: Path,
                memory_mib: int = 128) -> subprocess.Popen[bytes]:
    """QEMU (TCG) as vhost-user server on ``socket``; guest memory shared, as vhost-user needs."""
    return subprocess.Popen([
        "qemu-system-x86_64", "-machine", "pc,accel=tcg", "-cpu", "qemu64", "-nodefaults",
        "-m", str(memory_mib), "-display", "none", "-no-reboot",
        "-object", f"memory-backend-memfd,id=mem,size={memory_mib}M,share=on",
        "-numa", "node,memdev=mem",
        "-kernel", str(image.kernel), "-initrd", str(image.initrd),
        "-append", f"console=ttyS0 panic=-1 vbnet_ip={address_cidr}",
        "-serial", f"file:{console}",
        "-chardev", f"socket,id=vhu0,path={socket},server=on,wait=off",
        "-netdev", "vhost-user,id=net0,chardev=vhu0",
        # vectors=0 (INTx, no MSI-X): QEMU 7.2 under TCG crashes in msix_set_vector_notifiers
        # when vhost starts (it takes the KVM irqfd path); a KVM host needs no such setting.
        "-device", "virtio-net-pci,netdev=net0,mac=52:54:00:77:00:09,vectors=0",
    ], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(guest: subprocess.Popen[bytes], console: Path, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if guest.poll() is not None:
            err = guest.stderr.read().decode(errors="replace") if guest.stderr else ""
            raise RuntimeError(f"QEMU exited {guest.returncode}: {err.strip()[-400:]}")
        if console.exists() and READY in console.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise TimeoutError(f"guest not ready after {timeout_s:.0f} s; console: {console}")
