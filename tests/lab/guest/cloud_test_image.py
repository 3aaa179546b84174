"""A cloud image of our own for the guest lab's user-image path: Debian with systemd,
cloud-init and sshd on an ext4 root (no partition table, no boot loader: the lab boots it with
the image's own kernel and initramfs), as qcow2. Built once with mmdebstrap from this machine's
Debian mirror and cached by its recipe; nothing of it is virtbench's own guest image."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from virtbench.kvm.sandbox_image import debian_mirror
from virtbench.targets.local import LocalTarget

PACKAGES = ("systemd-sysv", "udev", "kmod", "cloud-init", "openssh-server", "ifupdown",
            "iproute2", "linux-image-cloud-amd64", "initramfs-tools", "fio", "e2fsprogs",
            "util-linux", "procps")
# Only NoCloud: a real cloud image also probes EC2, OpenStack... metadata servers first.
DATASOURCES = "datasource_list: [ NoCloud, None ]\n"
FSTAB = "/dev/vda / ext4 defaults 0 1\n"
RECIPE = hashlib.sha256("\n".join((*PACKAGES, DATASOURCES, FSTAB, "ext4 3072M")).encode()
                        ).hexdigest()[:12]


@dataclass(frozen=True)
class CloudTestImage:
    image: Path
    kernel: Path
    initrd: Path


def build_cloud_test_image(cache: Path) -> CloudTestImage:
    """The image (built on first use, ~minutes; then the cached one)."""
    cache.mkdir(parents=True, exist_ok=True)
    made = CloudTestImage(cache / "root.qcow2", cache / "vmlinuz", cache / "initrd.img")
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = cache / "recipe"
        if stamp.exists() and stamp.read_text().strip() == RECIPE and made.image.exists():
            return made
        _build(cache, made)
        stamp.write_text(RECIPE + "\n")
    return made


def _build(cache: Path, made: CloudTestImage) -> None:
    local = LocalTarget()
    codename, mirror = debian_mirror()
    work = cache / "work"
    shutil.rmtree(work, ignore_errors=True)
    tree = work / "tree"
    tree.mkdir(parents=True)
    tar = work / "root.tar"
    # In a PID and mount namespace of its own: whatever a maintainer script starts ends with it.
    local.run(["unshare", "--mount", "--pid", "--fork", "--kill-child", "--propagation",
               "private", "--", "mmdebstrap", "--variant=minbase", "--components=main",
               f"--include={','.join(PACKAGES)}", codename, str(tar),
               f"deb {mirror} {codename} main"], timeout=1800)
    local.run(["tar", "-C", str(tree), "-xf", str(tar)])
    tar.unlink()
    (tree / "etc" / "cloud" / "cloud.cfg.d" / "90_vbtest.cfg").write_text(DATASOURCES)
    (tree / "etc" / "fstab").write_text(FSTAB)
    for key in (tree / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()  # cloud-init writes the host key the lab pins
    shutil.copy2(sorted((tree / "boot").glob("vmlinuz-*"))[-1], made.kernel)
    shutil.copy2(sorted((tree / "boot").glob("initrd.img-*"))[-1], made.initrd)
    raw = work / "root.raw"
    local.run(["mkfs.ext4", "-q", "-F", "-L", "vbroot", "-d", str(tree), str(raw), "3072M"],
              timeout=600)
    local.run(["qemu-img", "convert", "-O", "qcow2", str(raw), str(made.image)], timeout=600)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(build_cloud_test_image(Path(sys.argv[1]).resolve()))
