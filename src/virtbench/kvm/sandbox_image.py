"""A small Debian guest that runs virtbench's workloads: python3 + crc32c + cryptography + sshd.

Built once from Debian packages with ``mmdebstrap`` (minbase) and packed as an uncompressed
initramfs (a cpio archive); booted with the Debian cloud kernel under QEMU (TCG or KVM). The
kernel's virtio-net and virtio-rng modules are copied from the same kernel package and loaded by
the guest's ``/init``, a busybox shell script that mounts the pseudo file systems, configures
QEMU user-mode networking, prints /proc/cpuinfo between virtbench's console markers and hands
over to busybox ``init``, which keeps ``sshd`` running. No systemd: it takes minutes under TCG.

Per boot, :func:`make_instance` generates a fresh SSH host key and client key and appends them
to the cached archive as a second cpio archive (the kernel unpacks concatenated archives in
order), so no key is ever cached or shared; the host key is pinned in a known_hosts file.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from virtbench.kvm.flag_probes import CONSOLE_BEGIN, CONSOLE_END
from virtbench.model import VirtbenchError
from virtbench.targets.daemon import free_port
from virtbench.targets.host_files import HostFiles
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import CommandFailed

__all__ = ["KERNEL_FLAVOURS", "MODULES", "RECIPE", "DebianGuestImage", "GuestInstance",
           "GuestKeys", "build_debian_guest", "debian_mirror", "download_deb", "kernel_package",
           "make_instance", "make_keys", "make_keys_archive", "pack_cpio", "pack_tree", "recipe",
           "unpack_cloud_kernel"]

# Named although apt would resolve it: python3-cffi-backend provides the
# python3-cffi-backend-api-* that python3-cryptography depends on.
PACKAGES = ("python3", "python3-cryptography", "python3-cffi-backend", "openssh-server",
            "busybox")

# Debian 12's python3-crc32c (2.3) is built without the SSE4.2 code: it reports
# hardware_based=False even on a host with SSE4.2 (its library has no crc32 instruction and
# no cpuid). virtbench needs crc32c>=2.4 (pyproject), so the guest gets the PyPI wheel of the
# version this venv runs, which picks the hardware path at import when the CPU has SSE4.2.
CRC32C_VERSION = importlib.metadata.version("crc32c")

# Load order follows the modules' `depends` (modinfo): the kernel package ships no modules.dep.
MODULES = (
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "net/core/failover.ko",
    "drivers/net/net_failover.ko",
    "drivers/net/virtio_net.ko",
    "drivers/char/hw_random/virtio-rng.ko",
)

INIT = f"""#!/bin/busybox sh
# virtbench test guest: no systemd (minutes under TCG); busybox init keeps sshd alive.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev
$bb mkdir -p /dev/pts /dev/shm
$bb mount -t devpts devpts /dev/pts
$bb mount -t tmpfs tmpfs /run
$bb mount -t tmpfs tmpfs /tmp
$bb mount -t tmpfs tmpfs /dev/shm
$bb mkdir -p /run/sshd
for m in {' '.join(Path(m).name for m in MODULES)}; do
  $bb insmod /lib/modules/vbkvm/$m || echo "vbkvm: insmod $m failed"
done
$bb hostname vbkvm-debian
$bb ip link set lo up
# QEMU user-mode networking: fixed addresses, no DHCP needed.
$bb ip link set eth0 up
$bb ip addr add 10.0.2.15/24 dev eth0
$bb ip route add default via 10.0.2.2
echo {CONSOLE_BEGIN}
$bb cat /proc/cpuinfo
echo {CONSOLE_END}
exec $bb init
"""

INITTAB = """::respawn:/usr/sbin/sshd -D -e
::ctrlaltdel:/bin/busybox poweroff -f
"""

SSHD_CONFIG = """# virtbench test guest
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
# PAM and DNS look-ups only cost time under TCG.
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
"""

BUILDER = "mmdebstrap minbase merged-usr"
"""How the root tree is made: part of the recipe, so an image of another builder is rebuilt."""

RECIPE = hashlib.sha256("\n".join((BUILDER, *PACKAGES, CRC32C_VERSION, *MODULES, INIT, INITTAB,
                                    SSHD_CONFIG)).encode()
                        ).hexdigest()[:12]
"""Changes whenever the recipe changes, so a stale cached image is rebuilt."""


@dataclass(frozen=True)
class DebianGuestImage:
    kernel: Path
    rootfs: Path
    """Uncompressed cpio archive of the whole root file system (the initramfs)."""


@dataclass(frozen=True)
class GuestInstance:
    """One bootable guest: its initramfs (cached image + this instance's keys) and SSH access."""

    kernel: Path
    initrd: Path
    port: int
    known_hosts: Path
    identity: Path
    workdir: Path

    @property
    def ssh_spec(self) -> str:
        return f"root@127.0.0.1:{self.port}"


_LOCAL = LocalTarget()
MERGED_USR_HOOKS = "/usr/share/mmdebstrap/hooks/merged-usr"


KERNEL_FLAVOURS = ("cloud-amd64", "amd64")
"""Debian's kernel flavours a guest boots: the cloud kernel (small, virtio drivers only), or the
generic one (its drivers for emulated hardware too, e.g. e1000e: the NIC what-if's guest)."""


def kernel_package(flavour: str = "cloud-amd64") -> str:
    """The versioned package behind Debian's ``linux-image-FLAVOUR`` (cloud-amd64, amd64)."""
    meta = f"linux-image-{flavour}"
    out = _LOCAL.run(["apt-cache", "depends", meta]).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Depends:") and "linux-image-" in line:
            return line.split(":", 1)[1].strip()
    raise VirtbenchError(f"apt-cache does not know {meta} (apt-get update?)")


def download_deb(package: str, into: Path) -> Path:
    _LOCAL.run(["apt-get", "download", package], cwd=str(into))
    debs = sorted(into.glob(f"{package}_*.deb"))
    if not debs:
        raise VirtbenchError(f"apt-get download {package} produced no .deb in {into}")
    return debs[-1]


def pack_cpio(root: Path, names: Sequence[str], out: Path) -> None:
    """Pack ``names`` (paths relative to ``root``) as a newc archive owned by root."""
    _LOCAL.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0", "-O", str(out)],
               cwd=str(root), input="\n".join(names) + "\n")


def pack_tree(root: Path, out: Path) -> None:
    """Pack everything below ``root`` as an initramfs (see :func:`pack_cpio`)."""
    # Parents before children, as cpio extraction needs; symlinks are not followed.
    pack_cpio(root, [".", *sorted(str(p.relative_to(root)) for p in root.rglob("*"))], out)


def unpack_cloud_kernel(work: Path, modules: Sequence[str], module_dir: Path,
                        flavour: str = "cloud-amd64") -> Path:
    """Download and unpack Debian's cloud kernel (or another ``flavour``) below ``work``; copy
    ``modules`` (paths below its lib/modules/VERSION/kernel) into ``module_dir``. Returns the
    kernel image."""
    unpacked = work / "kernel-package"
    _LOCAL.run(["dpkg-deb", "-x", str(download_deb(kernel_package(flavour), work)),
                str(unpacked)])
    moddir = next((unpacked / "lib" / "modules").iterdir()) / "kernel"
    module_dir.mkdir(parents=True, exist_ok=True)
    for module in modules:
        shutil.copy2(moddir / module, module_dir)
    return sorted((unpacked / "boot").glob("vmlinuz-*"))[-1]


def debian_mirror() -> tuple[str, str]:
    """(codename, mirror URI) of this machine's own Debian main archive, as apt uses it."""
    codename = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            codename = line.split("=", 1)[1].strip().strip('"')
    rows = _LOCAL.run(["apt-get", "indextargets", "--format",
                       "$(REPO_URI) $(RELEASE) $(COMPONENT) $(IDENTIFIER)"]).stdout.splitlines()
    for row in rows:
        parts = row.split()
        if len(parts) == 4 and parts[1] == codename and parts[2] == "main" \
                and parts[3] == "Packages":
            return codename, parts[0]
    raise VirtbenchError(f"apt knows no '{codename} main' archive; run apt-get update first")


def _trim(root: Path) -> None:
    """Remove what a guest that only runs probes never reads (halves the archive)."""
    # The package manager's own files and perl go too: the guest never installs anything
    # (and the kernel unpacks every byte of the archive at each boot, emulated under TCG).
    for sub in ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
                "usr/share/zoneinfo", "usr/share/i18n", "var/cache/apt", "var/lib/apt/lists",
                "var/cache/debconf", "usr/share/common-licenses", "var/lib/dpkg", "usr/lib/apt",
                "usr/lib/x86_64-linux-gnu/gconv", "usr/lib/x86_64-linux-gnu/perl-base",
                "usr/share/perl5"):
        shutil.rmtree(root / sub, ignore_errors=True)
    for sub in ("pydoc_data", "test"):
        for python in (root / "usr" / "lib").glob("python3.*"):
            shutil.rmtree(python / sub, ignore_errors=True)
    for key in (root / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()  # every instance gets its own host key


def _build(cache: Path, extra_packages: Sequence[str] = (),
           extra_modules: Sequence[str] = (), flavour: str = "cloud-amd64") -> DebianGuestImage:
    """Build in a private mount and PID namespace (``unshare``): the work tree is a tmpfs
    there (dpkg's many fsyncs cost nothing), and mmdebstrap's /proc and /sys mounts, any
    daemon a maintainer script starts in the chroot and the tmpfs itself all end with the
    namespace — also on Ctrl-C or SIGKILL."""
    for binary, package in (("mmdebstrap", "mmdebstrap"), ("cpio", "cpio"),
                            ("unshare", "util-linux"), ("apt-get", "apt"),
                            ("dpkg-deb", "dpkg")):
        if shutil.which(binary) is None and not Path(f"/usr/sbin/{binary}").exists():
            raise VirtbenchError(f"'{binary}' is missing: apt-get install {package}")
    codename, mirror = debian_mirror()
    log = cache / "build.log"
    done = _LOCAL.run(
        ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--propagation", "private",
         "--", sys.executable, "-m", "virtbench.kvm.sandbox_image", "_build-inside", str(cache),
         codename, mirror, ",".join(extra_packages), ",".join(extra_modules), flavour],
        check=False)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise VirtbenchError(f"building the Debian guest failed (log {log}): " + " | ".join(tail))
    return DebianGuestImage(cache / "vmlinuz", cache / "rootfs.cpio")


def _install_crc32c_wheel(root: Path, wheels: Path) -> None:
    """Unpack the crc32c wheel for the guest's Python into its /usr/local dist-packages."""
    pythons = sorted((root / "usr" / "lib").glob("python3.*"))
    if not pythons:
        raise VirtbenchError("mmdebstrap installed no python3")
    version = pythons[-1].name.removeprefix("python")  # e.g. 3.11
    tag = "cp" + version.replace(".", "")
    wheels.mkdir(exist_ok=True)
    pattern = f"crc32c-{CRC32C_VERSION}-{tag}-{tag}-*manylinux*x86_64*.whl"
    if not list(wheels.glob(pattern)):
        _LOCAL.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--implementation", "cp", "--python-version",
                    version, "--abi", tag, "--platform", "manylinux2014_x86_64", "--dest",
                    str(wheels), f"crc32c=={CRC32C_VERSION}"])
    found = sorted(wheels.glob(pattern))
    if not found:
        raise VirtbenchError(f"pip downloaded no wheel matching {pattern} into {wheels}")
    target = root / "usr" / "local" / "lib" / f"python{version}" / "dist-packages"
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as wheel:
        wheel.extractall(target)


def _build_inside(cache: Path, codename: str, mirror: str, extra_packages: Sequence[str] = (),
                  extra_modules: Sequence[str] = (), flavour: str = "cloud-amd64") -> None:
    """The build itself; runs inside the namespace made by :func:`_build`."""
    work = Path(tempfile.mkdtemp(prefix="vbkvm-debian-build-", dir=cache))
    try:
        _LOCAL.run(["mount", "-t", "tmpfs", "-o", "size=2g", "vbkvm-build", str(work)])
        root = work / "root"
        debs = cache / "debs"
        debs.mkdir(exist_ok=True)
        # Downloaded .debs are kept: a changed recipe rebuilds without downloading (unless the
        # cache's path has a blank: mmdebstrap's sync-in/sync-out hooks split at blanks).
        # mmdebstrap installs with apt in one pass: half debootstrap's time and CPU.
        keep = [] if any(c.isspace() for c in str(debs)) else [
            "--skip=download/empty", "--skip=essential/unlink",
            "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
            f"--setup-hook=sync-in {debs} /var/cache/apt/archives/",
            f"--customize-hook=sync-out /var/cache/apt/archives {debs}"]
        # merged /usr by symlinks, as debootstrap makes it (else apt picks usrmerge and perl)
        out = _LOCAL.run(["mmdebstrap", "--variant=minbase", "--components=main",
                          f"--hook-dir={MERGED_USR_HOOKS}",
                          f"--include={','.join((*PACKAGES, *extra_packages))}", *keep, codename,
                          str(root),
                          f"deb {mirror} {codename} main"], check=False)
        print(out.stdout[-4000:], out.stderr[-4000:], flush=True)
        if out.returncode != 0:
            raise CommandFailed(out)
        _install_crc32c_wheel(root, cache / "wheels")
        kernel = unpack_cloud_kernel(work, (*MODULES, *extra_modules),
                                     root / "lib" / "modules" / "vbkvm", flavour)
        _trim(root)
        (root / "init").write_text(INIT)
        os.chmod(root / "init", 0o755)
        (root / "etc" / "inittab").write_text(INITTAB)
        (root / "etc" / "ssh" / "sshd_config.d" / "vbkvm.conf").write_text(SSHD_CONFIG)
        (root / "root" / ".ssh").mkdir(mode=0o700, exist_ok=True)
        rootfs = cache / "rootfs.cpio.tmp"
        rootfs.unlink(missing_ok=True)
        pack_tree(root, rootfs)
        if rootfs.stat().st_size < 20_000_000:
            raise VirtbenchError("the guest's root archive is suspiciously small; "
                                 "is cpio working?")
        shutil.copy2(kernel, cache / "vmlinuz.tmp")
        (cache / "vmlinuz.tmp").replace(cache / "vmlinuz")
        rootfs.replace(cache / "rootfs.cpio")
        (cache / "recipe").write_text(recipe(extra_packages, extra_modules, flavour) + "\n")
    finally:
        _LOCAL.run(["umount", "--lazy", str(work)], check=False)
        shutil.rmtree(work, ignore_errors=True)


def recipe(extra_packages: Sequence[str] = (), extra_modules: Sequence[str] = (),
           flavour: str = "cloud-amd64") -> str:
    """:data:`RECIPE`, or with extra packages/modules (the guest lab's tools) or another
    kernel flavour a digest of them (the cloud kernel's recipes are unchanged by the flavour)."""
    if not extra_packages and not extra_modules and flavour == "cloud-amd64":
        return RECIPE
    kernel = () if flavour == "cloud-amd64" else ("--kernel", flavour)
    return hashlib.sha256("\n".join((RECIPE, *extra_packages, "--", *extra_modules, *kernel)
                                    ).encode()).hexdigest()[:12]


def build_debian_guest(cache: Path, extra_packages: Sequence[str] = (),
                       extra_modules: Sequence[str] = (), flavour: str = "cloud-amd64"
                       ) -> DebianGuestImage:
    """The kernel and root archive, built once (about 80 s with downloads) and reused while
    the recipe is unchanged. A lock keeps two concurrent builds from colliding.
    ``extra_packages`` are installed too; ``extra_modules`` (paths below the kernel's
    lib/modules/VERSION/kernel) are copied to /lib/modules/vbkvm but not loaded by /init;
    ``flavour``: Debian's kernel flavour (:data:`KERNEL_FLAVOURS`)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = cache / "recipe"
        image = DebianGuestImage(cache / "vmlinuz", cache / "rootfs.cpio")
        if (image.kernel.exists() and image.rootfs.exists() and stamp.exists()
                and stamp.read_text().strip() == recipe(extra_packages, extra_modules, flavour)):
            return image
        for stale in cache.glob("vbkvm-debian-build-*"):
            shutil.rmtree(stale, ignore_errors=True)  # left by a build that was killed
        return _build(cache, extra_packages, extra_modules, flavour)


@dataclass(frozen=True)
class GuestKeys:
    """Fresh SSH keys for one guest: its host key (pinned in ``known_hosts``) and the client
    key it authorises."""

    host_key: Path
    identity: Path
    known_hosts: Path


def make_keys(directory: Path, port: int) -> GuestKeys:
    """New host and client keys (ed25519) in ``directory``; the host key pinned for
    127.0.0.1:``port``."""
    directory.mkdir(parents=True, exist_ok=True)
    keys = GuestKeys(directory / "ssh_host_ed25519_key", directory / "id_ed25519",
                     directory / "known_hosts")
    for key in (keys.host_key, keys.identity):
        _LOCAL.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vbkvm", "-f",
                    str(key)])
    kind, blob = keys.host_key.with_suffix(".pub").read_text().split()[:2]
    keys.known_hosts.write_text(f"[127.0.0.1]:{port} {kind} {blob}\n")
    return keys


def make_instance(image: DebianGuestImage, workdir: Path, port: int | None = None
                  ) -> GuestInstance:
    """Fresh host and client keys for one guest, its initramfs, and a pinned known_hosts."""
    port = port or free_port()
    archive, keys = make_keys_archive(workdir, port)
    initrd = workdir / "initrd.cpio"
    HostFiles(_LOCAL).concatenate([image.rootfs, archive], initrd)
    archive.unlink()
    return GuestInstance(image.kernel, initrd, port, keys.known_hosts, keys.identity, workdir)


def make_keys_archive(workdir: Path, port: int) -> tuple[Path, GuestKeys]:
    """Fresh host and client keys for one guest and the cpio archive that carries them into
    it (``workdir/keys.cpio``, appended to the image's); the private host key is then only in
    the archive."""
    workdir.mkdir(parents=True, exist_ok=True)
    overlay = workdir / "overlay"
    (overlay / "etc" / "ssh").mkdir(parents=True)
    (overlay / "root" / ".ssh").mkdir(parents=True, mode=0o700)
    keys = make_keys(workdir, port)
    host_key = overlay / "etc" / "ssh" / "ssh_host_ed25519_key"
    shutil.copy2(keys.host_key, host_key)
    shutil.copy2(keys.host_key.with_suffix(".pub"), host_key.with_suffix(".pub"))
    authorized = overlay / "root" / ".ssh" / "authorized_keys"
    shutil.copy(keys.identity.with_suffix(".pub"), authorized)
    authorized.chmod(0o600)
    names = ["etc", "etc/ssh", "etc/ssh/ssh_host_ed25519_key", "etc/ssh/ssh_host_ed25519_key.pub",
             "root", "root/.ssh", "root/.ssh/authorized_keys"]
    pack_cpio(overlay, names, workdir / "keys.cpio")
    shutil.rmtree(overlay)
    keys.host_key.unlink()  # only the guest keeps its private host key
    return workdir / "keys.cpio", keys


if __name__ == "__main__":
    if sys.argv[1:2] == ["_build-inside"]:
        packages, modules = (tuple(filter(None, arg.split(","))) for arg in sys.argv[5:7])
        _build_inside(Path(sys.argv[2]), sys.argv[3], sys.argv[4], packages, modules,
                      *sys.argv[7:8])
