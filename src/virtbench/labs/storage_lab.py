"""The storage lab: a filesystem to test and a host-side "VM size" to test it from.

Knobs per variant:

- ``vm_size``: ``{vcpus: N, memory_mib: M}`` (or ``"NxM"``, or ``host`` for no limits). On a
  host it is realised with a cgroup (cpuset of N CPUs + a CFS quota of N cores + a memory limit
  of M MiB that also bounds the page cache). Inside a libvirt guest the kvm lab sets the same
  two numbers on the domain.
- ``filesystem``: ``dir:PATH`` (a scratch directory inside PATH), ``ext4`` / ``xfs`` (a fresh
  image file, fully allocated, on a loop device with direct I/O, formatted and mounted; size
  from ``image_size_mib`` or ``ext4:SIZE_MIB``), or ``tmpfs`` (memory, a no-disk reference).

Filesystems are made on first use and kept until ``down`` (variants that share a filesystem
share its image, as the study's guests shared their disk); cgroups are made on ``enter`` and
removed on ``leave``. Every object is in the manifest before it exists.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from virtbench.contract import Knob, Params, Tool, parsed_by
from virtbench.inputs.ascii_numbers import DIGITS, is_digits
from virtbench.labs.cgroups import Cgroup, CgroupLimits, remove_cgroup_dir
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.model import VirtbenchError
from virtbench.services import FilesystemService, ResourceLimits
from virtbench.targets.cgroup import CgroupTarget
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["LABS", "MountedFs", "StorageLab", "StorageParams", "VmSize", "parse_filesystem",
           "parse_vm_size"]

PREFIX = "vbfs"
FS_KINDS = ("dir", "ext4", "xfs", "tmpfs")


class StorageParams(Params):
    image_dir: str | None = Field(
        None, description="directory for ext4/xfs image files (default: the lab's work dir)")
    image_size_mib: int = Field(1024, ge=64, description="size of ext4/xfs images, MiB")
    tmpfs_size_mib: int = Field(1024, ge=16, description="size limit of the tmpfs, MiB")
    loop_direct_io: bool = Field(
        True, description="loop device reads/writes the image with O_DIRECT, so the host's "
        "page cache does not hide the disk")
    first_cpu: int = Field(0, ge=0, description="vm_size CPUs are first_cpu .. first_cpu+vcpus-1")
    cpu_quota: bool = Field(True, description="also cap CPU time at vcpus cores (CFS quota)")
    default_filesystem: str = Field("ext4", description="filesystem when a variant names none")


class VmSize(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    vcpus: int | None = Field(None, ge=1, description="number of CPUs")
    memory_mib: int | None = Field(None, ge=16, description="memory, MiB (page cache included)")

    def label(self) -> str:
        if self.vcpus is None and self.memory_mib is None:
            return "host"
        return f"{self.vcpus or 'all'} vCPU, {self.memory_mib or 'unlimited'} MiB"


def parse_vm_size(value: Any) -> VmSize:
    """``{vcpus, memory_mib}``, ``"2x1024"`` or ``host``/None; errors name the knob."""
    if value is None or value == "host":
        return VmSize()
    if isinstance(value, str):
        match = re.fullmatch(rf"\s*({DIGITS})\s*x\s*({DIGITS})\s*", value)
        if not match:
            raise VirtbenchError(f"knob vm_size={value!r}: expected {{vcpus: N, memory_mib: M}}, "
                                 "'NxM' (e.g. '2x1024') or 'host'")
        return VmSize(vcpus=int(match.group(1)), memory_mib=int(match.group(2)))
    if isinstance(value, Mapping):
        try:
            return VmSize(**dict(value))
        except ValueError as exc:
            raise VirtbenchError(f"knob vm_size={dict(value)!r}: {exc}") from exc
    raise VirtbenchError(f"knob vm_size={value!r}: expected a mapping {{vcpus, memory_mib}}")


def parse_filesystem(value: Any, default_size_mib: int) -> tuple[str, str | None, int]:
    """(kind, dir path, size MiB) from ``dir:PATH``, ``ext4[:MiB]``, ``xfs[:MiB]``, ``tmpfs``."""
    if not isinstance(value, str) or not value:
        raise VirtbenchError(f"knob filesystem={value!r}: expected dir:PATH, ext4, xfs or tmpfs")
    kind, _, rest = value.partition(":")
    if kind == "dir":
        if not rest:
            raise VirtbenchError("knob filesystem='dir:': give a directory, e.g. dir:/var/tmp")
        return "dir", rest, 0
    if kind not in FS_KINDS:
        raise VirtbenchError(f"knob filesystem={value!r}: unknown kind {kind!r}; "
                             f"use one of dir:PATH, ext4, xfs, tmpfs")
    size = default_size_mib
    if rest:
        if not is_digits(rest) or int(rest) < 16:
            raise VirtbenchError(f"knob filesystem={value!r}: size after ':' must be MiB >= 16")
        size = int(rest)
    return kind, None, size


@dataclass
class MountedFs:
    spec: str
    kind: str
    path: Path
    """Where workloads write (a scratch directory on the filesystem)."""
    mount_point: Path | None = None
    device: str | None = None
    image: Path | None = None
    size_mib: int = 0
    mount: dict[str, str] = field(default_factory=dict)
    direct_io_loop: bool = False


def _free_mib(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize // (1024 * 1024)


def _pinning_pids(mount_point: Path) -> list[int]:
    """Processes in other mount namespaces that still hold a copy of our mount."""
    pids = []
    own = os.readlink("/proc/self/ns/mnt")
    needle = f" {mount_point} "
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "mnt") == own:
                continue
            if needle in (entry / "mountinfo").read_text():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _unmount(target: Target, mount_point: Path) -> list[str]:
    """Unmount ours, also from mount namespaces cloned while it was mounted (e.g. a daemon
    started meanwhile), which would otherwise keep the loop device busy. Only our mount point
    (a unique vbfs- path) is touched there."""
    done = []
    if os.path.ismount(mount_point):
        target.run(["umount", str(mount_point)])
        done.append(f"mount {mount_point}")
    seen_ns: set[str] = set()
    for pid in _pinning_pids(mount_point):
        try:
            ns = os.readlink(f"/proc/{pid}/ns/mnt")
        except OSError:
            continue
        if ns in seen_ns:
            continue
        seen_ns.add(ns)
        result = target.run(["nsenter", "-t", str(pid), "-m", "umount", str(mount_point)],
                            check=False)
        if result.returncode == 0:
            done.append(f"copy of mount {mount_point} in the mount namespace of pid {pid}")
    return done


def _detach_loops(target: Target, image: Path) -> list[str]:
    done = []
    result = target.run(["losetup", "-j", str(image)], check=False)
    for line in result.stdout.splitlines():
        device = line.split(":", 1)[0].strip()
        if device.startswith("/dev/loop"):
            target.run(["losetup", "-d", device], check=False)
            done.append(f"loop device {device}")
    return done


class StorageLab(Lab):
    name = "storage"
    description = ("a filesystem (directory, fresh ext4/xfs image on a loop device, tmpfs) seen "
                   "from a host-side VM size (cgroup: CPUs, CPU quota, memory)")
    Params = StorageParams
    tools = (
        Tool("losetup", "mount", "loop devices for image files"),
        Tool("mount", "mount", "mounting images and tmpfs"),
        Tool("mkfs.ext4", "e2fsprogs", "formatting ext4 images"),
        Tool("mkfs.xfs", "xfsprogs", "formatting xfs images"),
        Tool("findmnt", "util-linux", "recording mount options"),
        Tool("nsenter", "util-linux", "unmounting copies pinned by other mount namespaces"),
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("vm_size", "on the host a cgroup with a cpuset of N CPUs, a quota of N cores and an "
             "M MiB memory limit (page cache included); in a libvirt guest the domain's vCPUs "
             "and memory", parsed_by(parse_vm_size),
             values="{vcpus: N, memory_mib: M} | 'NxM' | host"),
        Knob("filesystem", "where the workload's files go",
             parsed_by(lambda value: parse_filesystem(value, 1024)),
             values="dir:PATH | ext4[:MiB] | xfs[:MiB] | tmpfs"),
    )
    # Filesystems persist across variants and a cgroup is a few mkdirs: switching is cheap, so
    # interleaved order (which the study lacked) costs nothing.
    switch_cost = "cheap"
    provides = (FilesystemService, ResourceLimits)

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.token = secrets.token_hex(3)
        self.manifest: Manifest | None = None
        self.filesystems: dict[str, MountedFs] = {}
        self.cgroup: Cgroup | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def up(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest(lab_root() / f"{PREFIX}-{os.getpid()}-{self.token}.json",
                                 self.name)

    def _manifest(self) -> Manifest:
        if self.manifest is None:
            self.up()
        assert self.manifest is not None
        return self.manifest

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        spec = knobs.get("filesystem", self.params.default_filesystem)
        fs = self.filesystem(str(spec) if spec is not None else "")
        vm = parse_vm_size(knobs.get("vm_size"))
        target: Target = self.target
        limits = self._limits(vm)
        if limits.controllers():
            if not isinstance(self.target, LocalTarget):
                raise VirtbenchError(
                    f"lab storage: variant {variant!r}: a vm_size is a cgroup on this machine, "
                    f"but the target is {self.target.describe()}; use vm_size: host there (in "
                    "a libvirt guest the kvm lab sizes the domain)")
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", variant)[:40]
            self.cgroup = Cgroup(f"{PREFIX}-{self.token}-{safe}", limits, self._manifest())
            try:
                self.cgroup.create()
            except Exception:
                self.cgroup.remove()
                self.cgroup = None
                raise
            target = CgroupTarget(self.target, self.cgroup)
        policy = self.cache_policy(fs, vm)
        services = self.publish(
            FilesystemService(path=str(fs.path), kind=fs.kind, spec=fs.spec,
                              mount=dict(fs.mount), size_mib=fs.size_mib,
                              free_mib=_free_mib(fs.path), cache_policy=policy,
                              drop_caches=fs.kind != "tmpfs"),
            ResourceLimits(vcpus=vm.vcpus, memory_mib=vm.memory_mib,
                           cgroup=self.cgroup.name if self.cgroup else None))
        notes = {
            "vm_size": vm.label() + (f" (cgroup {Cgroup.detect()}: {limits.model_dump()})"
                                     if self.cgroup else " (no cgroup limits)"),
            "filesystem": f"{fs.spec}: {fs.mount.get('fstype', '?')} on "
                          f"{fs.mount.get('source', '?')} ({fs.mount.get('options', '')})",
            "cache_policy": policy,
        }
        return LabState(target=target, services=services, notes=notes)

    def leave(self, variant: str) -> None:
        if self.cgroup is not None:
            cgroup, self.cgroup = self.cgroup, None
            cgroup.remove()

    def down(self) -> None:
        errors: list[str] = []
        with contextlib.suppress(Exception):
            self.leave("")
        for spec in list(self.filesystems):
            try:
                self._remove_fs(self.filesystems.pop(spec))
            except Exception as exc:
                errors.append(f"{spec}: {exc}")
        if self.manifest is not None:
            leftovers = self.clean(self.manifest)  # anything a partial step left behind
            if not any(self.manifest.data["objects"].values()):
                self.manifest.delete()
            elif leftovers or errors:
                errors.append(f"left in manifest {self.manifest.path}")
        if errors:
            raise VirtbenchError("lab storage: cleanup incomplete: " + "; ".join(errors))

    # -- variants -------------------------------------------------------------------------

    def _limits(self, vm: VmSize) -> CgroupLimits:
        cpus = None
        if vm.vcpus is not None:
            first = self.params.first_cpu
            cpus = list(range(first, first + vm.vcpus))
            available = os.cpu_count() or 1
            if cpus[-1] >= available:
                raise VirtbenchError(f"knob vm_size.vcpus={vm.vcpus}: only CPUs 0-{available - 1} "
                                     f"exist (lab param first_cpu={first})")
        return CgroupLimits(
            cpus=cpus,
            cpu_quota_cores=float(vm.vcpus) if vm.vcpus and self.params.cpu_quota else None,
            memory_bytes=vm.memory_mib * 1024 * 1024 if vm.memory_mib else None,
        )

    @staticmethod
    def cache_policy(fs: MountedFs, vm: VmSize) -> str:
        parts = []
        if fs.kind == "tmpfs":
            parts.append("tmpfs: all data lives in memory; no disk is measured and dropping "
                         "caches is pointless")
        elif fs.kind in ("ext4", "xfs"):
            dio = ("on (host page cache bypassed)" if fs.direct_io_loop
                   else "OFF (the host page cache may serve reads)")
            parts.append(f"{fs.kind} image on a loop device with direct I/O {dio}")
        else:
            parts.append("existing directory; its filesystem and caching are the host's")
        if vm.memory_mib:
            parts.append(f"the page cache of the workload is bounded by the {vm.memory_mib} MiB "
                         "memory cgroup")
        else:
            parts.append("no memory limit: the whole host page cache is available")
        if fs.kind != "tmpfs":
            parts.append("storage.bonnie drops caches (sync; vm.drop_caches=3) before each "
                         "trial; storage.fio uses O_DIRECT (direct=1) by default")
        return "; ".join(parts)

    # -- filesystems ----------------------------------------------------------------------

    def filesystem(self, spec: str) -> MountedFs:
        """The mounted filesystem for a spec, created on first use."""
        if spec in self.filesystems:
            return self.filesystems[spec]
        kind, path, size = parse_filesystem(spec, self.params.image_size_mib)
        if kind == "tmpfs":
            size = self.params.tmpfs_size_mib
        fs = MountedFs(spec=spec, kind=kind, path=Path(), size_mib=size)
        self.filesystems[spec] = fs
        try:
            if kind == "dir":
                self._make_dir_fs(fs, Path(path or ""))
            elif kind == "tmpfs":
                self._make_tmpfs(fs)
            else:
                self._make_image_fs(fs)
            fs.mount = self._mount_info(fs.path)
        except BaseException:
            self.filesystems.pop(spec, None)
            with contextlib.suppress(Exception):
                self._remove_fs(fs)
            raise
        return fs

    def _scratch(self, fs: MountedFs, parent: Path) -> None:
        fs.path = parent / f"{PREFIX}-{self.token}-work"
        self._manifest().add("scratch", str(fs.path))
        fs.path.mkdir()

    def _make_dir_fs(self, fs: MountedFs, base: Path) -> None:
        if not base.is_dir():
            raise VirtbenchError(f"knob filesystem=dir:{base}: not an existing directory")
        if not os.access(base, os.W_OK):
            raise VirtbenchError(f"knob filesystem=dir:{base}: not writable")
        self._scratch(fs, base)

    def _mount_point(self, fs: MountedFs) -> Path:
        mp = self.workdir / f"{PREFIX}-{self.token}-{fs.kind}-mnt"
        self._manifest().add("dir", str(mp))
        mp.mkdir(exist_ok=True)
        fs.mount_point = mp
        return mp

    def _make_tmpfs(self, fs: MountedFs) -> None:
        mp = self._mount_point(fs)
        self._manifest().add("mount", str(mp))
        self.target.run(["mount", "-t", "tmpfs", "-o", f"size={fs.size_mib}m,mode=0755",
                         f"{PREFIX}-tmpfs", str(mp)])
        self._scratch(fs, mp)

    def _make_image_fs(self, fs: MountedFs) -> None:
        image_dir = Path(self.params.image_dir) if self.params.image_dir else self.workdir
        if not image_dir.is_dir():
            raise VirtbenchError(f"lab storage: params.image_dir={image_dir} is not a directory")
        free = _free_mib(image_dir)
        if free < fs.size_mib + 64:
            raise VirtbenchError(
                f"lab storage: a {fs.size_mib} MiB {fs.kind} image does not fit in {image_dir} "
                f"({free} MiB free); lower params.image_size_mib or set params.image_dir")
        image = image_dir / f"{PREFIX}-{self.token}-{fs.kind}.img"
        self._manifest().add("image", str(image))
        fs.image = image
        fd = os.open(image, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            # Allocate every block now: a full disk fails here with a clear message instead
            # of as I/O errors in the middle of a benchmark.
            os.posix_fallocate(fd, 0, fs.size_mib * 1024 * 1024)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise VirtbenchError(f"lab storage: disk full while allocating {fs.size_mib} MiB "
                                     f"for {image}") from exc
            raise
        finally:
            os.close(fd)
        argv = ["losetup", "--find", "--show"]
        if self.params.loop_direct_io:
            argv.append("--direct-io=on")
        device = self.target.run([*argv, str(image)]).stdout.strip()
        fs.device = device
        dio = self.target.run(["losetup", "--list", "--noheadings", "--output", "DIO", device],
                              check=False).stdout.strip()
        fs.direct_io_loop = dio == "1"
        mkfs = (["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]
                if fs.kind == "ext4" else ["mkfs.xfs", "-q", "-f"])
        try:
            # Lazy init would zero inode tables in the background during the first trials.
            self.target.run([*mkfs, device])
        except CommandFailed as exc:
            raise VirtbenchError(f"lab storage: formatting a {fs.size_mib} MiB image as {fs.kind} "
                                 f"failed (too small? xfs needs >= 300 MiB): {exc}") from exc
        mp = self._mount_point(fs)
        self._manifest().add("mount", str(mp))
        self.target.run(["mount", device, str(mp)])
        self._scratch(fs, mp)

    def _mount_info(self, path: Path) -> dict[str, str]:
        result = self.target.run(["findmnt", "-J", "-T", str(path)], check=False)
        try:
            info = json.loads(result.stdout)["filesystems"][0]
        except (ValueError, KeyError, IndexError):
            return {}
        return {k: str(info.get(k, "")) for k in ("target", "source", "fstype", "options")}

    def _remove_fs(self, fs: MountedFs) -> None:
        manifest = self._manifest()
        if fs.path != Path() and fs.path.exists():
            shutil.rmtree(fs.path, ignore_errors=True)
        manifest.remove("scratch", str(fs.path))
        if fs.mount_point is not None:
            _unmount(self.target, fs.mount_point)
            if os.path.ismount(fs.mount_point):
                raise VirtbenchError(f"cannot unmount {fs.mount_point} (busy?)")
            manifest.remove("mount", str(fs.mount_point))
        if fs.image is not None:
            _detach_loops(self.target, fs.image)
            fs.image.unlink(missing_ok=True)
            manifest.remove("image", str(fs.image))
        if fs.mount_point is not None:
            with contextlib.suppress(FileNotFoundError):
                fs.mount_point.rmdir()
            manifest.remove("dir", str(fs.mount_point))

    # -- crash recovery -------------------------------------------------------------------

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        """Remove what a crashed run listed: cgroups, scratch dirs, mounts, loops, images.

        Returns one noun phrase per removed object (the CLI prints "removed <item>").
        """
        target = LocalTarget()
        done: list[str] = []
        for path in manifest.items("cgroup"):
            if remove_cgroup_dir(Path(path)):
                manifest.remove("cgroup", path)
                done.append(f"cgroup {path}")
                with contextlib.suppress(OSError):
                    Path(path).parent.rmdir()  # the shared virtbench/ dir, only when empty
        for path in manifest.items("scratch"):
            shutil.rmtree(path, ignore_errors=True)
            if not Path(path).exists():
                manifest.remove("scratch", path)
                done.append(f"directory {path}")
        for path in manifest.items("mount"):
            done += _unmount(target, Path(path))
            if not os.path.ismount(path):
                manifest.remove("mount", path)
        for path in manifest.items("image"):
            done += _detach_loops(target, Path(path))
            if Path(path).exists():
                Path(path).unlink()
                done.append(f"image {path}")
            manifest.remove("image", path)
        for path in manifest.items("dir"):
            with contextlib.suppress(FileNotFoundError):
                Path(path).rmdir()
                done.append(f"directory {path}")
            if not Path(path).exists():
                manifest.remove("dir", path)
        return done


LABS = (StorageLab,)
