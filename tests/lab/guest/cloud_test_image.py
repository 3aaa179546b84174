"""A cloud image of our own for the guest lab's user-image path: Debian with systemd,
cloud-init and sshd on an ext4 root (no partition table, no boot loader: the lab boots it with
the image's own kernel and initramfs), as qcow2. Built once with mmdebstrap from this machine's
Debian mirror and cached by its recipe; nothing of it is virtbench's own guest image. Trimmed as
one would trim a one-purpose cloud image (only cloud-init's init stage and the modules for keys
and hostname, no gettys or timers, an initramfs with the virtio drivers only): its boot is the
suite's longest (about 80 CPU-s untrimmed, 65 trimmed under TCG)."""

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
# Only NoCloud: a real cloud image also probes EC2, OpenStack... metadata servers first. Only
# the modules the lab's path needs (the hostname, root's key, the pinned host key); the config
# and final stages are masked below: each is a Python start of cloud-init, seconds under TCG.
CLOUD_CFG = ("datasource_list: [ NoCloud, None ]\n"
             "cloud_init_modules: [seed_random, set_hostname, update_hostname, update_etc_hosts,"
             " users-groups, ssh]\ncloud_config_modules: []\ncloud_final_modules: []\n")
FSTAB = "/dev/vda / ext4 defaults 0 1\n"
# Units a one-purpose guest has no use for, each a process start during boot under TCG (a boot
# of the full image took ~80 CPU-s, the suite's longest single boot).
MASKED = ("cloud-config.service", "cloud-final.service", "cloud-init-hotplugd.socket",
          "getty@tty1.service", "getty-static.service", "e2scrub_reap.service",
          "systemd-pstore.service", "systemd-binfmt.service",
          "proc-sys-fs-binfmt_misc.automount", "sys-kernel-debug.mount",
          "sys-kernel-tracing.mount", "apt-daily-upgrade.timer", "apt-daily.timer",
          "dpkg-db-backup.timer", "e2scrub_all.timer", "fstrim.timer")
# The initramfs holds the virtio drivers the root disk needs, not every driver (15 MB -> 6 MB).
INITRAMFS_HOOK = ('printf "MODULES=list\\n" > "$1/etc/initramfs-tools/conf.d/virtbench.conf"'
                  ' && printf "virtio_pci\\nvirtio_blk\\n" >> "$1/etc/initramfs-tools/modules"'
                  ' && chroot "$1" update-initramfs -u -k all')
RECIPE = hashlib.sha256("\n".join((*PACKAGES, CLOUD_CFG, FSTAB, *MASKED, INITRAMFS_HOOK,
                                   "ext4 3072M")).encode()).hexdigest()[:12]


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
               f"--include={','.join(PACKAGES)}", f"--customize-hook={INITRAMFS_HOOK}",
               codename, str(tar),
               f"deb {mirror} {codename} main"], timeout=1800)
    local.run(["tar", "-C", str(tree), "-xf", str(tar)])
    tar.unlink()
    (tree / "etc" / "cloud" / "cloud.cfg.d" / "90_vbtest.cfg").write_text(CLOUD_CFG)
    (tree / "etc" / "fstab").write_text(FSTAB)
    for unit in MASKED:
        link = tree / "etc" / "systemd" / "system" / unit
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/null")
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
