"""The ``guest`` lab: a libvirt guest built and booted by virtbench, whose variants are VM knobs
(vCPUs, memory, the test disk's bus, cache and I/O mode, IOThreads, queues, image format and
preallocation, vCPU/emulator pinning, huge pages).

``up`` starts a private libvirtd (``connect: private``, the default: TCG, as ``kvm sandbox``)
or uses the given URI, builds (once, cached by content) the sandbox's Debian image with the
storage tools, and writes the session directory and the domain's name into the lab manifest
before anything is created. ``enter`` validates the knobs against the domain capabilities,
(re)defines and boots the guest with a fresh test disk, waits for SSH with the pinned host key,
formats and mounts the disk as ext4 inside the guest, verifies each knob from the live XML,
QEMU's command line, threads and memory map, qemu-img and the guest's own /proc and /sys (a
knob found otherwise than asked: the guest and its disk are removed, the variant refused), and
publishes a FilesystemService on
the guest's target. ``down`` (and ``virtbench lab clean``) remove the domain, the disk images
and the keys. docs/guests.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from virtbench.contract import MAX_SECONDS, Knob, Params, Tool
from virtbench.kvm.access import GuestAccess
from virtbench.kvm.guest_cloud import (
    GUEST_MAC,
    CloudGuest,
    CloudSeed,
    check_user_image,
    cloud_disks,
    make_overlay,
    make_seed_iso,
)
from virtbench.kvm.guest_domain import CONSOLE_CMDLINE, direct_boot_domain_xml
from virtbench.kvm.guest_host import (
    host_placement,
    qemu_hugepage_mib,
    qemu_process,
    qemu_thread_affinity,
)
from virtbench.kvm.guest_image import DISK_MODULES, build_guest_image
from virtbench.kvm.guest_knobs import (
    BUSES,
    CACHES,
    DISK_SERIAL,
    EMULATED,
    EMULATION_MEANING,
    FORMATS,
    IO_MODES,
    GuestKnobs,
    GuestView,
    HostCaps,
    caps_from_domcaps,
    disk_devices,
    emulation_notes,
    knobs_from,
    parse_qemu_disk,
    qemu_summary,
    validate,
    varied_knobs,
    verify_guest,
    verify_live_xml,
    verify_preallocation,
    verify_qemu,
    with_vcpus,
)
from virtbench.kvm.guest_placement import format_cpuset, vcpu_pins, verify_threads
from virtbench.kvm.sandbox import wait_ssh
from virtbench.kvm.sandbox_image import GuestInstance, make_instance, make_keys
from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd, remove_domain
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.model import VirtbenchError
from virtbench.services import FilesystemService, GuestMachine
from virtbench.targets.daemon import free_port
from virtbench.targets.libvirt_connection import libvirt_module, open_connection
from virtbench.targets.target_contract import Target

__all__ = ["LABS", "GuestLab"]

MOUNT = "/mnt/vbguest"
RNG = "<rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>"


def user_network(port: int) -> list[str]:
    """QEMU user-mode networking on loopback only, as the sandbox's guest (the MAC is the one
    a user image's cloud-init network-config matches)."""
    return ["-netdev", f"user,id=vbnet0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
            "-device", f"virtio-net-pci,netdev=vbnet0,addr=0x10,mac={GUEST_MAC}"]


class GuestParams(Params):
    connect: str = Field("private", description="'private' (a private libvirtd, as kvm "
                         "sandbox) or a libvirt URI such as qemu:///system")
    virt_type: Literal["auto", "kvm", "qemu"] = Field(
        "auto", description="accelerator: auto = kvm where the domain capabilities offer it on "
        "a system URI, else qemu (TCG)")
    image_cache: str = Field(".cache/virtbench-guest/image",
                             description="where the guest image is built and cached")
    disk_mib: int = Field(1024, ge=64, le=1 << 20, description="size of the test disk, MiB")
    vcpus: int = Field(1, ge=1, description="default vcpus (a variant's knob overrides)")
    memory_mib: int = Field(768, ge=1, description="default guest memory, MiB")
    boot_timeout_s: float = Field(300.0, ge=1, le=MAX_SECONDS,
                                  description="wait for the guest's sshd")
    image: str | None = Field(None, description="a user's own cloud image (qcow2 or raw, with "
                              "cloud-init) instead of the built one; never written: the guest "
                              "boots an overlay, cloud-init NoCloud gives it keys and address")
    kernel: str | None = Field(None, description="with image: boot this kernel directly (an "
                               "image without a boot loader); default: the image's own")
    initrd: str | None = Field(None, description="with kernel: its initramfs")
    cmdline: str = Field("root=/dev/vda rw", description="with kernel: its command line "
                         "(the serial console is added)")


def _mem_available_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def _takes_o_direct(directory: Path) -> bool:
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / ".o_direct"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | getattr(os, "O_DIRECT", 0), 0o600)
        os.close(fd)
        return True
    except OSError:
        return False
    finally:
        probe.unlink(missing_ok=True)


class GuestLab(Lab):
    name = "guest"
    description = ("libvirt guests as lab endpoints: VM knobs (vcpus, memory, disk bus, cache, "
                   "I/O mode, IOThreads, image format) realised, verified, workloads inside")
    Params = GuestParams
    switch_cost = "expensive"
    provides = (FilesystemService, GuestMachine)
    tools = (Tool("qemu-img", "qemu-utils", "the test disk"),
             Tool("qemu-system-x86_64", "qemu-system-x86", "the guest"),
             Tool("mmdebstrap", "mmdebstrap", "the guest image"))
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("vcpus", "the guest's vCPU count", int),
        Knob("memory_mib", "the guest's memory, MiB", int),
        Knob("bus", "the test disk's bus", choices=BUSES),
        Knob("cache", "the test disk's cache mode", choices=CACHES),
        Knob("io", "the test disk's I/O mode (QEMU aio)", choices=IO_MODES),
        Knob("iothreads", "IOThreads (0..16); the disk is bound to the first", int),
        Knob("format", "the test disk image's format", choices=FORMATS),
        Knob("preallocation", "qemu-img preallocation (off, metadata, falloc, full)", str),
        Knob("queues", "the test disk's virtio queues (virtio-blk num-queues, virtio-scsi "
             "num_queues); 0 = QEMU's default", int),
        Knob("vcpupin", "host CPUs of the vCPUs: a cpuset for all (0-1) or one per vCPU (0/1)",
             int | str, values="cpuset, e.g. 0-1,^1 or 0/1"),
        Knob("emulatorpin", "host CPUs of QEMU's emulator threads (a cpuset)", int | str,
             values="cpuset, e.g. 1"),
        Knob("hugepages", "guest memory backed by the host's huge pages", bool),
    )

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.manifest: Manifest | None = None
        self.session: Path | None = None
        self.daemon: PrivateLibvirtd | None = None
        self.conn: Any = None
        self.domain = f"vbguest-{os.getpid()}"
        self.instance: GuestInstance | None = None
        self.virt_type = "qemu"
        self.varied: list[str] = []
        self.caps: HostCaps | None = None
        self.current: GuestKnobs | None = None
        self.current_state: LabState | None = None
        self.guest_target: Target | None = None
        self.cloud: CloudGuest | None = None

    @property
    def defaults(self) -> GuestKnobs:
        return GuestKnobs(vcpus=self.params.vcpus, memory_mib=self.params.memory_mib,
                          root_disk=self.params.image is not None)

    def _image_caps(self) -> dict[str, Any]:
        """What a user's image changes in HostCaps: its kernel's drivers are its own (every
        bus is tried), its root is on disk (systemd and cloud-init need less memory)."""
        if self.params.image is None:
            return {}
        return {"image_buses": BUSES, "image_note": "", "min_memory_mib": 384,
                "memory_note": "systemd and cloud-init"}

    # -- before anything starts ------------------------------------------------------------

    def _offline_caps(self) -> HostCaps:
        """HostCaps without a running libvirtd (``run --check``): QEMU's version from its
        binary; ``enter`` validates again against the real domain capabilities."""
        out = self.target.run(["qemu-system-x86_64", "--version"], check=False).stdout.split()
        version = 0
        if len(out) >= 4:
            parts = [*out[3].split("(")[0].split("."), "0", "0"][:3]
            version = int(parts[0]) * 1_000_000 + int(parts[1]) * 1000 + int(parts[2] or 0)
        return HostCaps(max_vcpus=os.cpu_count() or 1, memory_mib=_mem_available_mib(),
                        buses=("virtio", "scsi", "sata"), iothreads=True, qemu_version=version,
                        placement=host_placement(own_hugetlbfs=self.params.connect == "private"),
                        **self._image_caps())

    def check(self) -> list[str]:
        problems = super().check()
        if self.params.connect == "private" and os.geteuid() != 0:
            problems.append(f"lab {self.name}: a private libvirtd needs root")
        if self.params.image is not None:
            problems += self._check_user_image()
        return problems

    def _check_user_image(self) -> list[str]:
        problems = [f"lab {self.name}, param image: '{tool}' is missing: apt-get install {pkg}"
                    for tool, pkg in (("genisoimage", "genisoimage"),)
                    if self.target.which(tool) is None]
        for param in ("kernel", "initrd"):
            value = getattr(self.params, param)
            if value is not None and not Path(value).is_file():
                problems.append(f"lab {self.name}, param {param}: {value} does not exist")
        if self.params.initrd is not None and self.params.kernel is None:
            problems.append(f"lab {self.name}, param initrd: given without kernel")
        try:
            check_user_image(self.target, Path(str(self.params.image)))
        except VirtbenchError as exc:
            problems.append(str(exc))
        return problems

    @classmethod
    def plan_notes(cls, params: BaseModel, variants: Mapping[str, Mapping[str, Any]]
                   ) -> list[str]:
        """`run --check`: whether the guest will be emulated, and what that makes of this
        experiment's comparison."""
        assert isinstance(params, GuestParams)
        if params.virt_type == "kvm":
            return ["the guest runs under KVM (virt_type kvm)"]
        notes = emulation_notes(varied_knobs(variants))
        if params.virt_type == "auto" and params.connect != "private":
            return [f"accelerator chosen at start on {params.connect}: kvm where its domain "
                    f"capabilities offer it, else TCG; under TCG {EMULATION_MEANING}", *notes]
        why = "a private libvirtd" if params.connect == "private" else "virt_type qemu"
        return [f"the guest will be emulated ({why}: TCG, no KVM): {EMULATION_MEANING}",
                *notes]

    def check_variant(self, variant: str, knobs: Mapping[str, Any]) -> list[str]:
        try:
            wanted = knobs_from(knobs, self.defaults)
        except TypeError as exc:
            return [f"variant {variant}: {exc}"]
        return [f"variant {variant}: {p}" for p in validate(wanted, self._offline_caps())]

    # -- up / down -------------------------------------------------------------------------

    def up(self) -> None:
        # Short paths (a unix socket lives below) outside /run and /var, which the private
        # daemon's namespace covers.
        self.session = Path(tempfile.mkdtemp(prefix="vbguest-", dir="/tmp"))
        self.manifest = Manifest(lab_root() / f"vbguest-{os.getpid()}.json", self.name)
        private = self.params.connect == "private"
        self.manifest.add("guest", {"session": str(self.session), "private": private,
                                    "connect": self.params.connect, "domain": self.domain})
        image = None if self.params.image else build_guest_image(
            Path(self.params.image_cache).resolve())
        if private:
            self.daemon = PrivateLibvirtd(self.session / "d", caps_cache=Path(
                self.params.image_cache).resolve().parent / "qemu-caps")
            self.conn = open_connection(self.daemon.start())
        else:
            self.conn = open_connection(self.params.connect)
        self.virt_type = self._choose_virt_type(private)
        self.caps = self._host_caps()
        if image is not None:
            self.instance = make_instance(image, self.session / "guest")
        else:
            self.instance, self.cloud = self._cloud_guest(self.session / "guest")

    def _cloud_guest(self, workdir: Path) -> tuple[GuestInstance, CloudGuest]:
        """The user's image checked, its overlay, fresh keys and the NoCloud seed."""
        image = Path(str(self.params.image)).resolve()
        fmt = check_user_image(self.target, image)
        port = free_port()
        keys = make_keys(workdir, port)
        seed = CloudSeed(instance_id=f"{self.domain}-{os.urandom(4).hex()}",
                         hostname=self.domain,
                         host_key_private=keys.host_key.read_text(),
                         host_key_public=keys.host_key.with_suffix(".pub").read_text().strip(),
                         authorized_key=keys.identity.with_suffix(".pub").read_text().strip())
        iso = make_seed_iso(self.target, seed, workdir / "seed")
        keys.host_key.unlink()  # the seed carries it to the guest; nothing else needs it
        overlay = make_overlay(self.target, image, fmt, workdir / "root-overlay.qcow2")
        kernel = Path(self.params.kernel).resolve() if self.params.kernel else None
        initrd = Path(self.params.initrd).resolve() if self.params.initrd else None
        cloud = CloudGuest(overlay=overlay, seed_iso=iso, kernel=kernel, initrd=initrd,
                           cmdline=f"{self.params.cmdline} {CONSOLE_CMDLINE}")
        instance = GuestInstance(kernel=kernel or image, initrd=initrd or image, port=port,
                                 known_hosts=keys.known_hosts, identity=keys.identity,
                                 workdir=workdir)
        return instance, cloud

    def _choose_virt_type(self, private: bool) -> str:
        if self.params.virt_type != "auto":
            return str(self.params.virt_type)
        if private:  # this machine's /dev/kvm runs no stock guest (LABNOTES); TCG
            return "qemu"
        try:
            self.conn.getDomainCapabilities(None, "x86_64", None, "kvm", 0)
            return "kvm"
        except libvirt_module().libvirtError:
            return "qemu"

    def _host_caps(self) -> HostCaps:
        assert self.session is not None
        xml = self.conn.getDomainCapabilities(None, "x86_64", None, self.virt_type, 0)
        return caps_from_domcaps(xml, memory_mib=_mem_available_mib(),
                                 qemu_version=int(self.conn.getVersion()),
                                 o_direct=_takes_o_direct(self.session),
                                 disk_dir=str(self.session), placement=host_placement(
                                     own_hugetlbfs=self.params.connect == "private"))

    def down(self) -> None:
        self._close_target()
        if self.manifest is not None:
            for item in self.manifest.items("guest"):
                _remove(item, self.conn)
                self.manifest.remove("guest", item)
            self.manifest.delete()
        if self.conn is not None:
            try:
                self.conn.close()
            except libvirt_module().libvirtError:
                pass
            self.conn = None

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        removed = []
        for item in manifest.items("guest"):
            _remove(item, None)
            manifest.remove("guest", item)
            removed.append(f"guest domain {item['domain']} and its files in {item['session']}")
        return removed

    def _close_target(self) -> None:
        close = getattr(self.guest_target, "close", None)
        if callable(close):
            close()
        self.guest_target = None

    # -- variants --------------------------------------------------------------------------

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.caps is None or self.instance is None or self.session is None:
            raise VirtbenchError(f"lab {self.name}: enter() before up()")
        wanted = knobs_from(knobs, self.defaults)
        problems = validate(wanted, self.caps)
        if problems:
            raise VirtbenchError(f"lab {self.name}, variant {variant}: " + "; ".join(problems))
        if wanted == self.current and self.current_state is not None:
            return self.current_state
        self._close_target()
        self.current, self.current_state = None, None
        remove_domain(self.conn, self.domain)
        image = self.session / f"disk.{wanted.format}"
        try:
            state = self._start(variant, wanted, image)
        except BaseException:
            self._roll_back(image)  # no guest runs with knobs other than asked
            raise
        self.current, self.current_state = wanted, state
        return state

    def _roll_back(self, image: Path) -> None:
        """Remove the guest and its test disk after a failed start or verification."""
        self._close_target()
        remove_domain(self.conn, self.domain)
        image.unlink(missing_ok=True)

    def _start(self, variant: str, wanted: GuestKnobs, image: Path) -> LabState:
        assert self.instance is not None and self.session is not None
        notes = {"preallocation_verified": self._create_disk(wanted, image)}
        console = self.session / "console.log"
        console.unlink(missing_ok=True)
        xml = with_vcpus(self._domain_xml(wanted, image, console), wanted)
        started = time.monotonic()
        dom = self.conn.defineXML(xml)
        try:
            dom.create()
        except libvirt_module().libvirtError as exc:
            raise VirtbenchError(f"lab {self.name}, variant {variant}: libvirt refused the "
                                 f"guest: {exc}") from exc
        self._wait_for_ssh(dom, variant, console)
        boot_s = time.monotonic() - started
        access = GuestAccess(ssh=self.instance.ssh_spec, known_hosts=str(
            self.instance.known_hosts), identity_file=str(self.instance.identity))
        self.guest_target = access.target(self.conn, self.domain)
        assert self.guest_target is not None
        notes |= self._verify(dom, wanted, str(image))
        notes["boot_s"] = f"{boot_s:.1f}"
        caveats: tuple[str, ...] = ()
        if self.virt_type == "qemu":
            notes["emulated"] = EMULATED
            caveats = (f"guest {EMULATED}",)
        fs = self._mount(wanted)
        machine = GuestMachine(domain=self.domain, virt_type=self.virt_type)  # for --profile
        return LabState(target=self.guest_target, notes=notes,
                        services=self.publish(fs, machine), caveats=caveats)

    def _wait_for_ssh(self, dom: Any, variant: str, console: Path) -> None:
        """Until the guest's sshd answers with the pinned key; a guest that stops meanwhile
        (an image that does not boot: on_crash and a kernel panic power it off) fails at
        once, one that never answers at ``boot_timeout_s``, both naming the image and the
        console's last lines."""
        assert self.instance is not None
        limit = self.params.boot_timeout_s
        deadline = time.monotonic() + limit
        while True:  # ends: answered, stopped, or past the deadline
            try:
                wait_ssh(self.instance, min(10.0, max(deadline - time.monotonic(), 0.0)))
                return
            except VirtbenchError as exc:
                last = str(exc)
            image = (f"param image {self.params.image}" if self.params.image is not None
                     else f"the built image in {self.params.image_cache}")
            where = f"lab {self.name}, variant {variant} ({image})"
            if not dom.isActive():
                raise VirtbenchError(f"{where}: the guest stopped before its sshd answered "
                                     f"(an image that does not boot?); console: "
                                     f"{_console_tail(console)}")
            if time.monotonic() >= deadline:
                raise VirtbenchError(f"{where}: the guest's sshd did not answer within "
                                     f"{limit:g} s (param boot_timeout_s); console: "
                                     f"{_console_tail(console)}; ssh: {last[-200:]}")

    def _domain_xml(self, wanted: GuestKnobs, image: Path, console: Path) -> str:
        """The built image's direct boot, or the user's image: its root disk (overlay), the
        test disk, then the seed (so the guest names them vda, vdb, vdc)."""
        assert self.instance is not None
        test_disk = disk_devices(wanted, str(image))
        if self.cloud is None:
            return direct_boot_domain_xml(
                self.domain, kernel=self.instance.kernel, initrd=self.instance.initrd,
                console_log=console, cmdline=f"{CONSOLE_CMDLINE} quiet",
                virt_type=self.virt_type, memory_mib=wanted.memory_mib,
                devices=[RNG, *test_disk], qemu_args=user_network(self.instance.port))
        root, seed = cloud_disks(self.cloud)
        return direct_boot_domain_xml(
            self.domain, kernel=self.cloud.kernel, initrd=self.cloud.initrd,
            console_log=console, cmdline=self.cloud.cmdline, virt_type=self.virt_type,
            memory_mib=wanted.memory_mib, devices=[root, RNG, *test_disk, seed],
            qemu_args=user_network(self.instance.port))

    def _create_disk(self, wanted: GuestKnobs, image: Path) -> str:
        """The fresh test disk, its preallocation verified from qemu-img's own view."""
        image.unlink(missing_ok=True)
        self.target.run(["qemu-img", "create", "-q", "-f", wanted.format, "-o",
                         f"preallocation={wanted.preallocation}", str(image),
                         f"{self.params.disk_mib}M"])
        info = json.loads(self.target.run(["qemu-img", "info", "--output=json",
                                           str(image)]).stdout)
        extents = json.loads(self.target.run(["qemu-img", "map", "--output=json", "-f",
                                              wanted.format, str(image)]).stdout)
        summary, wrong = verify_preallocation(info, extents, wanted)
        if wrong:
            raise VirtbenchError(f"lab {self.name}: the test disk is not what was asked "
                                 "(refused): " + "; ".join(wrong))
        return summary

    def _verify(self, dom: Any, wanted: GuestKnobs, image: str) -> dict[str, str]:
        """Each knob from the live XML, QEMU's command line, threads and memory map, and
        inside the guest; a knob found otherwise than asked is refused (``enter`` rolls the
        guest back)."""
        assert self.guest_target is not None
        live = verify_live_xml(dom.XMLDesc(0), wanted)
        wrong = [f"{k}: asked {v}, the live XML has {live.get(k)}"
                 for k, v in _live_expected(wanted).items() if str(live.get(k)) != str(v)]
        found = qemu_process(self.domain)
        qemu: dict[str, Any] = {} if found is None else parse_qemu_disk(found[1], image)
        placement = ""
        if found is None:
            wrong.append("QEMU's process of the domain was not found in /proc")
        else:
            wrong += verify_qemu(qemu, wanted)
            placement, misplaced = self._verify_placement(found[0], wanted)
            wrong += misplaced
        guest = self._guest_view(wanted)
        wrong += verify_guest(guest, wanted)
        if wrong:
            raise VirtbenchError(f"lab {self.name}: the guest does not run what was asked "
                                 "(refused, guest removed): " + "; ".join(wrong))
        return {
            "guest": f"{wanted.vcpus} vCPU, {wanted.memory_mib} MiB, {self.virt_type}",
            "disk": (f"{wanted.bus} {wanted.target_dev}, {wanted.format} "
                     f"(preallocation {wanted.preallocation}), cache={wanted.cache}, "
                     f"io={wanted.io}, iothreads={wanted.iothreads}, "
                     f"queues={wanted.queues or 'default'}"),
            "verified_xml": json.dumps(live, sort_keys=True),
            "verified_qemu": json.dumps(qemu_summary(qemu, wanted), sort_keys=True),
            "verified_placement": placement,
            "verified_guest": (f"nproc={guest.nproc} MemTotal={guest.memtotal_mib}MiB "
                               f"{wanted.target_dev}: driver {guest.driver}, write_cache "
                               f"'{guest.write_cache}', {guest.queues} queue(s)"),
        }

    def _verify_placement(self, pid: int, wanted: GuestKnobs) -> tuple[str, list[str]]:
        """QEMU's threads' CPU affinity and its huge-page-backed memory: (summary, wrong)."""
        assert self.caps is not None
        threads = qemu_thread_affinity(pid)
        pins = vcpu_pins(wanted.vcpupin, wanted.vcpus)
        wrong = verify_threads(threads, pins, wanted.emulatorpin)
        shown = {name: format_cpuset(cpus) for name, cpus in sorted(threads.items())
                 if name == "main" or name.startswith("CPU ")}
        summary = "threads on CPUs: " + ", ".join(f"{n} {c}" for n, c in shown.items())
        page_kib = self.caps.placement.hugepage_kib if self.caps.placement else 0
        if page_kib:
            huge = qemu_hugepage_mib(pid, page_kib)
            summary += f"; {huge} MiB of QEMU's memory on {page_kib} kB pages"
            if wanted.hugepages and huge < wanted.memory_mib:
                wrong.append(f"hugepages: asked, only {huge} MiB of QEMU's memory is on "
                             f"{page_kib} kB pages (/proc/{pid}/smaps), the guest has "
                             f"{wanted.memory_mib} MiB")
        return summary, wrong

    def _guest_view(self, wanted: GuestKnobs) -> GuestView:
        assert self.guest_target is not None
        run = self.guest_target.run
        if self.cloud is not None:  # the image's own kernel: its modules load by name
            run(["sh", "-c", "modprobe -a virtio_blk virtio_scsi sd_mod 2>/dev/null; true"])
        for module in () if self.cloud is not None else DISK_MODULES:
            name = Path(module).name
            run(["sh", "-c", f"grep -q '^{name[:-3]} ' /proc/modules || "
                             f"busybox insmod /lib/modules/vbkvm/{name}"])
        dev = wanted.target_dev
        deadline = time.monotonic() + 30
        while run(["test", "-e", f"/sys/block/{dev}"], check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise VirtbenchError(f"lab {self.name}: the guest has no /sys/block/{dev} "
                                     f"(bus {wanted.bus})")
            time.sleep(0.5)
        if wanted.bus == "virtio":  # never format another disk than the test disk
            serial = run(["cat", f"/sys/block/{dev}/serial"], check=False).stdout.strip()
            if serial != DISK_SERIAL:
                raise VirtbenchError(f"lab {self.name}: the guest's {dev} is not the test disk "
                                     f"(serial {serial[:40]!r}, expected {DISK_SERIAL})")
        out = run(["sh", "-c", f"nproc; grep MemTotal /proc/meminfo; "
                               f"cat /sys/block/{dev}/queue/write_cache; "
                               f"ls /sys/block/{dev}/mq | wc -l; "
                               f"basename $(readlink /sys/block/{dev}/device/driver) || "
                               f"echo virtio_blk"]).stdout.splitlines()
        # virtio-blk: /sys/block/vda/device is the virtio device, whose driver is virtio_blk
        return GuestView(nproc=int(out[0]), memtotal_mib=int(out[1].split()[1]) // 1024,
                         write_cache=out[2].strip(), queues=int(out[3]), driver=out[4].strip())

    def _mount(self, wanted: GuestKnobs) -> FilesystemService:
        assert self.guest_target is not None
        run = self.guest_target.run
        dev = f"/dev/{wanted.target_dev}"
        run(["mkfs.ext4", "-q", "-F", dev])
        run(["mkdir", "-p", MOUNT])
        run(["mount", dev, MOUNT])
        run(["mkdir", "-p", f"{MOUNT}/work"])
        fields = run(["findmnt", "-n", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS", MOUNT]
                     ).stdout.split()
        free = run(["df", "-P", "-m", MOUNT]).stdout.strip().splitlines()[-1].split()[3]
        return FilesystemService(
            path=f"{MOUNT}/work", kind="ext4", spec=f"ext4 on {wanted.bus} {wanted.target_dev}",
            mount=dict(zip(("target", "source", "fstype", "options"), fields, strict=False)),
            size_mib=self.params.disk_mib, free_mib=int(free),
            cache_policy=(f"guest page cache over a {wanted.cache} disk (host page cache "
                          f"{'bypassed' if wanted.cache in ('none', 'directsync') else 'used'})"),
            drop_caches=True)


def _console_tail(console: Path, lines: int = 3) -> str:
    """The serial console's last lines, printable characters only (guest output is not
    trusted), or a word saying there is none."""
    try:
        text = console.read_text(errors="replace")
    except OSError:
        return "no console output"
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    shown = " | ".join("".join(c for c in line if c.isprintable()) for line in kept)
    return shown[-400:] or "no console output"


def _live_expected(wanted: GuestKnobs) -> dict[str, object]:
    """What the live XML must say for each knob it shows (cpusets in their shortest form)."""
    pins = vcpu_pins(wanted.vcpupin, wanted.vcpus)
    return {**{k: getattr(wanted, k) for k in ("vcpus", "memory_mib", "bus", "cache", "io",
                                               "format", "iothreads", "queues", "hugepages")},
            "vcpupin": "/".join(format_cpuset(p) for p in pins),
            "emulatorpin": format_cpuset(vcpu_pins(wanted.emulatorpin, 1)[0])
            if wanted.emulatorpin else ""}


def _remove(item: Mapping[str, Any], conn: Any) -> None:
    """Remove one recorded guest: the private daemon with all its domains (every one is
    ours), or on a shared libvirt only the recorded domain; then the session directory."""
    session = Path(item["session"])
    if item.get("private"):
        PrivateLibvirtd(session / "d").stop()
    else:
        own = conn if conn is not None else open_connection(item["connect"])
        remove_domain(own, item["domain"])
    shutil.rmtree(session, ignore_errors=True)


LABS = (GuestLab,)
