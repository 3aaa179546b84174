"""The guest lab's VM knobs: validation against what the host can do, the domain XML that
realises them, and the parsers that verify them (live XML, QEMU's command line, the guest).

Pure: everything here takes text or values and returns values, so it is tested with fakes
(tests/unit/kvm/test_guest_knobs.py); :mod:`virtbench.labs.guest` does the I/O.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from virtbench.kvm.domxml import render_element
from virtbench.kvm.guest_placement import (
    HostPlacement,
    cputune_xml,
    memory_backing_xml,
    placement_problems,
    read_live_placement,
    vcpu_pins,
)

__all__ = [
    "BUSES",
    "CACHES",
    "CACHE_FLAGS",
    "CPU_BOUND_KNOBS",
    "DEVICE_KNOBS",
    "DISK_SERIAL",
    "EMULATED",
    "EMULATION_MEANING",
    "FORMATS",
    "HOST_IO_KNOBS",
    "IO_MODES",
    "PREALLOCATION",
    "GuestKnobs",
    "HostCaps",
    "caps_from_domcaps",
    "disk_devices",
    "emulation_notes",
    "guest_device",
    "knobs_from",
    "parse_qemu_disk",
    "qemu_summary",
    "validate",
    "varied_knobs",
    "verify_guest",
    "verify_live_xml",
    "verify_preallocation",
    "verify_qemu",
    "with_vcpus",
]

BUSES = ("virtio", "scsi", "sata")
CACHES = ("none", "writeback", "writethrough", "directsync", "unsafe")
IO_MODES = ("native", "threads", "io_uring")
FORMATS = ("raw", "qcow2")
PREALLOCATION = {"raw": ("off", "falloc", "full"), "qcow2": ("off", "metadata", "falloc", "full")}
CACHE_FLAGS = {  # cache mode -> (device write cache on, O_DIRECT, flushes ignored), as QEMU
    "none": (True, True, False), "writeback": (True, False, False),
    "writethrough": (False, False, False), "directsync": (False, True, False),
    "unsafe": (True, False, True)}
MIN_MEMORY_MIB = 640
"""The guest's root file system is a ~180 MB initramfs unpacked into its RAM."""
MAX_IOTHREADS = 16
DISK_SERIAL = "vbguest-test"


@dataclass(frozen=True)
class GuestKnobs:
    vcpus: int = 1
    memory_mib: int = 768
    bus: str = "virtio"
    cache: str = "none"
    io: str = "threads"
    iothreads: int = 0
    format: str = "raw"
    preallocation: str = "off"
    queues: int = 0
    """virtio-blk num-queues (virtio-scsi: the controller's); 0: QEMU's default."""
    vcpupin: str = ""
    """Host CPUs of the vCPUs: one cpuset for all, or one per vCPU joined by '/'."""
    emulatorpin: str = ""
    """Host CPUs of QEMU's emulator threads (a cpuset)."""
    hugepages: bool = False
    """Guest memory backed by the host's huge pages."""
    root_disk: bool = False
    """Not a knob: the guest boots a user's image from a virtio disk (vda) of its own, so the
    test disk is vdb on virtio."""

    @property
    def target_dev(self) -> str:
        """The test disk's name in the domain and in the guest."""
        if self.bus != "virtio":
            return "sda"
        return "vdb" if self.root_disk else "vda"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def knobs_from(values: Mapping[str, Any], defaults: GuestKnobs) -> GuestKnobs:
    """A variant's knobs over the lab's defaults (None and absent keep the default)."""
    fields = GuestKnobs.__dataclass_fields__
    given = {k: v for k, v in values.items() if v is not None and k in fields}
    for pin in ("vcpupin", "emulatorpin"):  # YAML reads a single CPU ``0`` as a number
        if isinstance(given.get(pin), int) and not isinstance(given.get(pin), bool):
            given[pin] = str(given[pin])
    return GuestKnobs(**{**defaults.as_dict(), **given})


@dataclass(frozen=True)
class HostCaps:
    """What the host's libvirt/QEMU (domain capabilities) and the guest image can do."""

    max_vcpus: int
    memory_mib: int
    """Memory the host can give a guest now (MemAvailable), MiB."""
    buses: tuple[str, ...]
    iothreads: bool
    qemu_version: int
    """QEMU's version as libvirt reports it (7002000 = 7.2.0)."""
    image_buses: tuple[str, ...] = ("virtio", "scsi")
    """Buses the guest image's kernel has a driver for."""
    image_note: str = "Debian's cloud kernel has no AHCI (SATA) driver"
    min_memory_mib: int = MIN_MEMORY_MIB
    memory_note: str = "its root is in RAM"
    o_direct: bool = True
    """Whether the disk images' directory takes O_DIRECT (cache none/directsync)."""
    disk_dir: str = ""
    placement: HostPlacement | None = None
    """The host's CPUs and huge pages (None: unknown, so pinning and hugepages are refused)."""
    memory_sources: tuple[str, ...] = ()
    """Domain capabilities' memoryBacking sourceType values (empty: not listed)."""

    @property
    def io_modes(self) -> tuple[str, ...]:
        # io_uring: QEMU 5.0 added aio=io_uring (libvirt 6.3 maps io='io_uring').
        return IO_MODES if self.qemu_version >= 5_000_000 else ("native", "threads")


def caps_from_domcaps(xml: str, *, memory_mib: int, qemu_version: int, o_direct: bool = True,
                      disk_dir: str = "", placement: HostPlacement | None = None) -> HostCaps:
    """HostCaps from ``virConnectGetDomainCapabilities`` XML."""
    root = ET.fromstring(xml)
    vcpu = root.find("vcpu")
    buses = tuple(v.text or "" for v in root.findall(
        "./devices/disk/enum[@name='bus']/value"))
    iothreads = root.find("iothreads")
    sources = tuple(v.text or "" for v in root.findall(
        "./memoryBacking/enum[@name='sourceType']/value"))
    return HostCaps(max_vcpus=int(vcpu.get("max", "1")) if vcpu is not None else 1,
                    memory_mib=memory_mib, buses=buses,
                    iothreads=iothreads is not None and iothreads.get("supported") == "yes",
                    qemu_version=qemu_version, o_direct=o_direct, disk_dir=disk_dir,
                    placement=placement, memory_sources=sources)


CPU_BOUND_KNOBS = ("vcpus", "vcpupin", "emulatorpin", "hugepages")
"""Knobs whose effect is on the guest's CPU (and its memory translation): emulated under TCG."""
HOST_IO_KNOBS = ("cache", "io", "format", "preallocation")
"""Knobs whose effect is on the host's I/O path: real under TCG too."""
DEVICE_KNOBS = ("bus", "iothreads", "queues")
"""Knobs whose cost is split between the guest's (emulated) driver and QEMU on the host."""

EMULATION_MEANING = (
    "CPU-bound figures (CPU time, compute throughput, and absolute IOPS, bandwidth and "
    "latency, which the emulated CPU sets) are meaningless; differences made on the host's I/O "
    "path (cache mode, I/O mode, image format, preallocation) remain meaningful")
EMULATED = f"emulated (TCG, no KVM): {EMULATION_MEANING}"


def varied_knobs(variants: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The knobs whose value is not the same in every variant (absent counts as a value)."""
    names = sorted({k for knobs in variants.values() for k in knobs})
    return [k for k in names if len({repr(knobs.get(k)) for knobs in variants.values()}) > 1]


def emulation_notes(varied: Sequence[str]) -> list[str]:
    """What an emulated guest means for a comparison of variants that differ in ``varied``
    (beyond :data:`EMULATION_MEANING`)."""
    notes = []
    cpu = [k for k in varied if k in CPU_BOUND_KNOBS]
    io = [k for k in varied if k in HOST_IO_KNOBS]
    device = [k for k in varied if k in DEVICE_KNOBS]
    if cpu:
        notes.append(f"the variants differ in {', '.join(cpu)}: meaningless under emulation "
                     "(the emulated vCPUs, not the knob, set the figures)")
    if device:
        notes.append(f"the variants differ in {', '.join(device)}: partly meaningful (QEMU's "
                     "host-side work is real, the guest driver's is emulated)")
    if io:
        notes.append(f"the variants differ in {', '.join(io)}: meaningful (a host-side "
                     "I/O-path difference)")
    return notes


def _choice(problems: list[str], knob: str, value: object, allowed: Sequence[str]) -> bool:
    if value in allowed:
        return True
    problems.append(f"knob {knob}: {value!r} is not one of {', '.join(allowed)}")
    return False


def validate(knobs: GuestKnobs, caps: HostCaps) -> list[str]:
    """Every reason the host cannot run ``knobs``, each naming the knob; [] when it can."""
    problems: list[str] = []
    _check_size(problems, knobs, caps)
    _check_bus(problems, knobs, caps)
    _check_cache_and_io(problems, knobs, caps)
    _check_iothreads(problems, knobs, caps)
    _check_queues(problems, knobs)
    _check_placement(problems, knobs, caps)
    if _choice(problems, "format", knobs.format, FORMATS):
        _choice(problems, "preallocation", knobs.preallocation, PREALLOCATION[knobs.format])
    return problems


def _check_size(problems: list[str], knobs: GuestKnobs, caps: HostCaps) -> None:
    if not 1 <= knobs.vcpus <= caps.max_vcpus:
        problems.append(f"knob vcpus: {knobs.vcpus} is outside 1..{caps.max_vcpus} "
                        "(the domain capabilities' vcpu max)")
    if knobs.memory_mib < caps.min_memory_mib:
        problems.append(f"knob memory_mib: {knobs.memory_mib} MiB is too little; the guest "
                        f"image needs at least {caps.min_memory_mib} MiB ({caps.memory_note})")
    elif knobs.memory_mib > caps.memory_mib:
        problems.append(f"knob memory_mib: {knobs.memory_mib} MiB is more than the host has "
                        f"available ({caps.memory_mib} MiB MemAvailable)")


def _check_bus(problems: list[str], knobs: GuestKnobs, caps: HostCaps) -> None:
    if not _choice(problems, "bus", knobs.bus, BUSES):
        return
    if knobs.bus not in caps.buses:
        problems.append(f"knob bus: {knobs.bus} is not offered by this host's QEMU/libvirt "
                        f"(domain capabilities: {', '.join(caps.buses)})")
    elif knobs.bus not in caps.image_buses:
        problems.append(f"knob bus: {knobs.bus}: the guest image cannot see such a disk "
                        f"({caps.image_note})")


def _check_cache_and_io(problems: list[str], knobs: GuestKnobs, caps: HostCaps) -> None:
    cache_ok = _choice(problems, "cache", knobs.cache, CACHES)
    if _choice(problems, "io", knobs.io, IO_MODES) and knobs.io not in caps.io_modes:
        problems.append(f"knob io: {knobs.io} needs QEMU >= 5.0 (this host: "
                        f"{caps.qemu_version // 1_000_000}.{caps.qemu_version // 1000 % 1000})")
    if not cache_ok:
        return
    direct = CACHE_FLAGS[knobs.cache][1]
    if knobs.io == "native" and not direct:
        problems.append(f"knob io: native needs O_DIRECT, i.e. cache none or directsync (QEMU: "
                        f"'aio=native ... requires cache.direct=on'); cache is {knobs.cache}")
    if direct and not caps.o_direct:
        problems.append(f"knob cache: {knobs.cache} opens the image with O_DIRECT, which the "
                        f"disk directory {caps.disk_dir} does not support (tmpfs?)")


def _check_iothreads(problems: list[str], knobs: GuestKnobs, caps: HostCaps) -> None:
    if not 0 <= knobs.iothreads <= MAX_IOTHREADS:
        problems.append(f"knob iothreads: {knobs.iothreads} is outside 0..{MAX_IOTHREADS}")
        return
    if not knobs.iothreads:
        return
    if knobs.bus == "sata":
        problems.append("knob iothreads: a sata disk cannot be bound to an IOThread "
                        "(only virtio-blk disks and virtio-scsi controllers can)")
    if not caps.iothreads:
        problems.append("knob iothreads: this host's libvirt/QEMU has no IOThread support")


def _check_queues(problems: list[str], knobs: GuestKnobs) -> None:
    if not knobs.queues:
        return
    if knobs.queues < 0:
        problems.append(f"knob queues: {knobs.queues} is negative (0: QEMU's default)")
    elif knobs.bus == "sata":
        problems.append("knob queues: a sata disk has one queue (num-queues is for virtio-blk "
                        "disks and virtio-scsi controllers)")
    elif knobs.queues > knobs.vcpus:
        problems.append(f"knob queues: {knobs.queues} is more than the {knobs.vcpus} vCPU(s); "
                        "the guest's virtio_blk/virtio_scsi driver uses at most one queue per "
                        "CPU, so the extra queues would never be used")


def _check_placement(problems: list[str], knobs: GuestKnobs, caps: HostCaps) -> None:
    asked = [k for k in ("vcpupin", "emulatorpin", "hugepages") if getattr(knobs, k)]
    if not asked:
        return
    if caps.placement is None:
        problems += [f"knob {k}: the host's CPUs and huge pages are unknown" for k in asked]
        return
    problems += placement_problems(vcpus=knobs.vcpus, memory_mib=knobs.memory_mib,
                                   vcpupin=knobs.vcpupin, emulatorpin=knobs.emulatorpin,
                                   hugepages=knobs.hugepages, host=caps.placement)
    if knobs.hugepages and caps.memory_sources and "file" not in caps.memory_sources:
        problems.append("knob hugepages: this host's libvirt/QEMU cannot back memory with a "
                        "file (domain capabilities memoryBacking sourceType: "
                        f"{', '.join(caps.memory_sources)})")


def disk_devices(knobs: GuestKnobs, image: str) -> list[str]:
    """The ``<devices>`` children of the test disk (and its virtio-scsi controller) as XML
    text, for ``direct_boot_domain_xml(devices=...)``."""
    disk = ET.Element("disk", {"type": "file", "device": "disk"})
    driver = {"name": "qemu", "type": knobs.format, "cache": knobs.cache, "io": knobs.io}
    if knobs.iothreads and knobs.bus == "virtio":
        driver["iothread"] = "1"
    if knobs.queues and knobs.bus == "virtio":
        driver["queues"] = str(knobs.queues)
    ET.SubElement(disk, "driver", driver)
    ET.SubElement(disk, "source", {"file": image})
    ET.SubElement(disk, "target", {"dev": knobs.target_dev, "bus": knobs.bus})
    ET.SubElement(disk, "serial").text = DISK_SERIAL
    out = [render_element(disk, "")]
    if knobs.bus == "scsi":
        controller = ET.Element("controller", {"type": "scsi", "index": "0",
                                               "model": "virtio-scsi"})
        ctl_driver = {"iothread": "1"} if knobs.iothreads else {}
        if knobs.queues:
            ctl_driver["queues"] = str(knobs.queues)
        if ctl_driver:
            ET.SubElement(controller, "driver", ctl_driver)
        out.append(render_element(controller, ""))
    return out


_VCPU = "<vcpu placement='static'>1</vcpu>"


def with_vcpus(domain_xml: str, knobs: GuestKnobs) -> str:
    """``domain_xml`` (of ``direct_boot_domain_xml``: one vCPU) with the vCPUs, IOThreads,
    pinning (``<cputune>``) and memory backing of ``knobs``."""
    if _VCPU not in domain_xml:
        raise ValueError("domain XML without the one-vCPU element of direct_boot_domain_xml")
    vcpu = f"<vcpu placement='static'>{knobs.vcpus}</vcpu>"
    if knobs.iothreads:
        vcpu += f"\n  <iothreads>{knobs.iothreads}</iothreads>"
    for extra in (cputune_xml(vcpu_pins(knobs.vcpupin, knobs.vcpus), knobs.emulatorpin),
                  memory_backing_xml(knobs.hugepages)):
        if extra:
            vcpu += f"\n  {extra}"
    return domain_xml.replace(_VCPU, vcpu, 1)


def verify_live_xml(xml: str, knobs: GuestKnobs) -> dict[str, str]:
    """What the running domain's XML says about each knob (``knob -> value found``)."""
    root = ET.fromstring(xml)
    found: dict[str, str] = {"vcpus": (root.findtext("vcpu") or "").strip(),
                             "iothreads": (root.findtext("iothreads") or "0").strip(),
                             **read_live_placement(root)}
    memory = root.find("memory")
    if memory is not None:
        unit = memory.get("unit", "KiB")
        scale = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}.get(unit, 1 / 1024)
        found["memory_mib"] = str(int(int(memory.text or 0) * scale))
    for disk in root.findall("./devices/disk"):
        target = disk.find("target")
        if target is None or target.get("dev") != knobs.target_dev:
            continue
        driver = disk.find("driver")
        attrs = driver.attrib if driver is not None else {}
        found.update(bus=target.get("bus", ""), cache=attrs.get("cache", ""),
                     io=attrs.get("io", ""), format=attrs.get("type", ""))
        iothread, queues = attrs.get("iothread"), attrs.get("queues")
        if knobs.bus == "scsi":
            ctl = root.find("./devices/controller[@model='virtio-scsi']/driver")
            iothread = ctl.get("iothread") if ctl is not None else None
            queues = ctl.get("queues") if ctl is not None else None
        found["disk_iothread"] = iothread or "none"
        found["queues"] = queues or "0"
    return found


def _json_options(argv: Sequence[str], option: str) -> list[dict[str, Any]]:
    """The JSON values of every ``option`` (``-blockdev``, ``-device``, ``-object``)."""
    out = []
    for i, arg in enumerate(argv[:-1]):
        if arg == option and argv[i + 1].startswith("{"):
            try:
                value = json.loads(argv[i + 1])
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def parse_qemu_disk(argv: Sequence[str], image: str) -> dict[str, Any]:
    """QEMU's own view of the test disk from its command line: the ``-blockdev`` JSON of the
    file node that opens ``image`` (aio, cache.direct, cache.no-flush), the format node above
    it, the device bound to that node (iothread, write-cache, num-queues), the virtio-scsi
    controller, the guest RAM's memory backend, ``-smp`` and ``-m``."""
    blockdevs = _json_options(argv, "-blockdev")
    devices = _json_options(argv, "-device")
    found: dict[str, Any] = {}
    file_node = next((b for b in blockdevs if b.get("filename") == image), None)
    if file_node is not None:
        cache = file_node.get("cache", {})
        found.update(aio=file_node.get("aio", "threads"), direct=bool(cache.get("direct")),
                     no_flush=bool(cache.get("no-flush")))
        fmt = next((b for b in blockdevs if b.get("file") == file_node.get("node-name")), None)
        if fmt is not None:
            found["format"] = fmt.get("driver")
            device = next((d for d in devices if d.get("drive") == fmt.get("node-name")), None)
            if device is not None:
                found["device"] = device
    controller = next((d for d in devices if d.get("driver") == "virtio-scsi-pci"), None)
    if controller is not None:
        found["controller"] = controller
    backend = next((o for o in _json_options(argv, "-object")
                    if str(o.get("qom-type", "")).startswith("memory-backend")), None)
    if backend is not None:
        found["memory_backend"] = {k: backend[k] for k in ("qom-type", "mem-path", "hugetlb")
                                   if k in backend}
    for i, arg in enumerate(argv[:-1]):
        if arg == "-smp":
            found["smp"] = int(argv[i + 1].split(",")[0])
        elif arg == "-m":
            value = argv[i + 1]
            if value.startswith("{"):  # QEMU >= 7.1 with libvirt: -m '{"size": bytes}'
                found["memory_mib"] = int(json.loads(value)["size"]) >> 20
            else:
                found["memory_mib"] = int(value.split(",")[0].removeprefix("size=").rstrip("M"))
    return found


def verify_qemu(seen: Mapping[str, Any], knobs: GuestKnobs) -> list[str]:
    """Mismatches between QEMU's view (:func:`parse_qemu_disk`) and ``knobs``."""
    wce, direct, no_flush = CACHE_FLAGS[knobs.cache]
    expect = {"aio": knobs.io, "direct": direct, "no_flush": no_flush, "format": knobs.format,
              "smp": knobs.vcpus}
    wrong = [f"{key}: asked {want!r}, QEMU has {seen.get(key)!r}"
             for key, want in expect.items() if seen.get(key) != want]
    device: Mapping[str, Any] = seen.get("device") or {}
    controller: Mapping[str, Any] = seen.get("controller") or {}
    # virtio-blk: the disk's device takes the IOThread and queues; virtio-scsi: its controller
    owner, queues_key = (controller, "num_queues") if knobs.bus == "scsi" else \
        (device, "num-queues")
    if knobs.iothreads and knobs.bus in ("virtio", "scsi") and not owner.get("iothread"):
        wrong.append(f"iothread: asked 1 of {knobs.iothreads}, QEMU's "
                     f"{owner.get('driver', knobs.bus + ' device')} has none")
    if knobs.queues and owner.get(queues_key) != knobs.queues:
        wrong.append(f"queues: asked {knobs.queues}, QEMU's {owner.get('driver', 'device')} "
                     f"has {queues_key} {owner.get(queues_key, 'unset')}")
    # writethrough/directsync: libvirt turns the device's write cache off.
    if not wce and device.get("write-cache") == "on":
        wrong.append("cache: the device's write cache is on, asked off")
    backend: Mapping[str, Any] = seen.get("memory_backend") or {}
    huge = bool(backend.get("mem-path")) or bool(backend.get("hugetlb"))
    if knobs.hugepages and not huge:
        wrong.append(f"hugepages: asked, QEMU's guest RAM backend is "
                     f"{backend.get('qom-type', 'anonymous memory')} without a hugetlbfs path")
    return wrong


def qemu_summary(seen: Mapping[str, Any], knobs: GuestKnobs) -> dict[str, Any]:
    """The verified part of QEMU's view, for the trial's realisation (``verified_qemu``)."""
    device: Mapping[str, Any] = seen.get("device") or {}
    controller: Mapping[str, Any] = seen.get("controller") or {}
    owner = controller if knobs.bus == "scsi" else device
    out = {k: v for k, v in seen.items() if k not in ("device", "controller")}
    out.update(write_cache=device.get("write-cache", "unset"),
               iothread=owner.get("iothread", "none"),
               queues=owner.get("num_queues" if knobs.bus == "scsi" else "num-queues",
                                "default"))
    return out


def verify_preallocation(info: Mapping[str, Any], extents: Sequence[Mapping[str, Any]],
                         knobs: GuestKnobs) -> tuple[str, list[str]]:
    """What ``qemu-img info`` and ``qemu-img map`` (both ``--output=json``) show of the fresh
    image's preallocation: (a summary, mismatches with ``knobs.preallocation``).

    off: sparse (actual size well below the virtual size); falloc and full: every byte of the
    virtual size allocated on the host; full on raw also written (map: data, not zero);
    metadata (qcow2): every cluster mapped while the file stays sparse."""
    virtual, actual = int(info.get("virtual-size", 0)), int(info.get("actual-size", 0))
    mapped = sum(int(e.get("length", 0)) for e in extents if e.get("data"))
    summary = (f"{info.get('format')}: {actual >> 20} MiB allocated of {virtual >> 20} MiB, "
               f"{mapped >> 20} MiB mapped as data")
    want, sparse, whole = knobs.preallocation, actual < virtual // 2, actual >= virtual
    ok = {"off": sparse and (knobs.format == "raw" or mapped == 0),
          "metadata": sparse and mapped >= virtual,
          "falloc": whole,
          "full": whole and (knobs.format == "qcow2" or mapped >= virtual)}.get(want, False)
    return summary, [] if ok else [f"preallocation: asked {want}, qemu-img shows {summary}"]


def guest_device(knobs: GuestKnobs) -> str:
    return knobs.target_dev


@dataclass
class GuestView:
    nproc: int
    memtotal_mib: int
    write_cache: str
    """/sys/block/DEV/queue/write_cache: 'write back' or 'write through'."""
    driver: str
    queues: int = 0
    """Hardware queues of the disk (/sys/block/DEV/mq/* count)."""
    extra: dict[str, str] = field(default_factory=dict)


def verify_guest(view: GuestView, knobs: GuestKnobs) -> list[str]:
    """Mismatches between what the guest sees and ``knobs``."""
    wrong = []
    if view.nproc != knobs.vcpus:
        wrong.append(f"vcpus: asked {knobs.vcpus}, the guest's nproc says {view.nproc}")
    # MemTotal excludes what the kernel reserves for itself: allow 15 %.
    if not knobs.memory_mib * 0.85 <= view.memtotal_mib <= knobs.memory_mib:
        wrong.append(f"memory_mib: asked {knobs.memory_mib}, the guest's MemTotal is "
                     f"{view.memtotal_mib} MiB")
    want_cache = "write back" if CACHE_FLAGS[knobs.cache][0] else "write through"
    if view.write_cache != want_cache:
        wrong.append(f"cache: {knobs.cache} should show the guest a '{want_cache}' disk, it "
                     f"shows '{view.write_cache}'")
    want_driver = {"virtio": "virtio_blk", "scsi": "sd"}.get(knobs.bus, "")
    if want_driver and view.driver != want_driver:
        wrong.append(f"bus: {knobs.bus} should be driven by {want_driver} in the guest, "
                     f"found {view.driver or 'no driver'}")
    if knobs.queues and view.queues != knobs.queues:
        wrong.append(f"queues: asked {knobs.queues}, the guest's /sys/block/"
                     f"{knobs.target_dev}/mq has {view.queues}")
    return wrong
