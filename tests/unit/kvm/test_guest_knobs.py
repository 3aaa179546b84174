"""The guest lab's knob logic, pure: validation, the XML it writes, the verification parsers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from virtbench.kvm.guest_domain import direct_boot_domain_xml
from virtbench.kvm.guest_knobs import (
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
from virtbench.kvm.guest_placement import HostPlacement

CAPS = HostCaps(max_vcpus=8, memory_mib=4096, buses=("ide", "scsi", "virtio", "sata"),
                iothreads=True, qemu_version=7_002_000)

DOMCAPS = """<domainCapabilities><vcpu max='255'/><iothreads supported='yes'/>
<devices><disk supported='yes'><enum name='bus'><value>ide</value><value>scsi</value>
<value>virtio</value><value>usb</value><value>sata</value></enum></disk></devices>
</domainCapabilities>"""


def _problems(**knobs: object) -> list[str]:
    return validate(knobs_from(knobs, GuestKnobs()), CAPS)


def test_defaults_are_valid() -> None:
    assert _problems() == []
    assert _problems(cache="none", io="native", iothreads=2, format="qcow2",
                     preallocation="metadata", bus="scsi", vcpus=2) == []


@pytest.mark.parametrize(("knobs", "knob", "why"), [
    ({"bus": "sata", "iothreads": 1}, "iothreads", "sata"),
    ({"bus": "sata"}, "bus", "AHCI"),
    ({"bus": "floppy"}, "bus", "not one of"),
    ({"cache": "sometimes"}, "cache", "not one of"),
    ({"io": "posix"}, "io", "not one of"),
    ({"cache": "writeback", "io": "native"}, "io", "O_DIRECT"),
    ({"memory_mib": 100_000}, "memory_mib", "available"),
    ({"memory_mib": 128}, "memory_mib", "too little"),
    ({"vcpus": 9}, "vcpus", "1..8"),
    ({"iothreads": 17}, "iothreads", "0..16"),
    ({"format": "vmdk"}, "format", "not one of"),
    ({"format": "raw", "preallocation": "metadata"}, "preallocation", "not one of"),
])
def test_refusals_name_the_knob(knobs: dict[str, object], knob: str, why: str) -> None:
    problems = _problems(**knobs)
    assert any(p.startswith(f"knob {knob}:") and why in p for p in problems), problems


def test_io_uring_needs_qemu_5_and_o_direct_needs_the_directory() -> None:
    old = HostCaps(**{**CAPS.__dict__, "qemu_version": 4_002_000})
    assert any("QEMU >= 5.0" in p for p in validate(GuestKnobs(io="io_uring"), old))
    tmpfs = HostCaps(**{**CAPS.__dict__, "o_direct": False, "disk_dir": "/dev/shm/x"})
    assert any(p.startswith("knob cache:") for p in validate(GuestKnobs(cache="none"), tmpfs))
    assert validate(GuestKnobs(cache="writeback"), tmpfs) == []


def test_caps_from_domcaps() -> None:
    caps = caps_from_domcaps(DOMCAPS, memory_mib=1000, qemu_version=7_002_000)
    assert caps.max_vcpus == 255 and caps.iothreads and "sata" in caps.buses
    assert caps.io_modes == ("native", "threads", "io_uring")


def _domain(knobs: GuestKnobs) -> str:
    base = direct_boot_domain_xml("g", kernel=Path("/k"), initrd=Path("/i"),
                                  console_log=Path("/c"), memory_mib=knobs.memory_mib,
                                  devices=disk_devices(knobs, "/d/disk.raw"))
    return with_vcpus(base, knobs)


def test_xml_realises_and_live_xml_reads_back() -> None:
    knobs = GuestKnobs(vcpus=2, memory_mib=1024, cache="directsync", io="native", iothreads=2)
    found = verify_live_xml(_domain(knobs), knobs)
    assert found == {"vcpus": "2", "iothreads": "2", "memory_mib": "1024", "bus": "virtio",
                     "cache": "directsync", "io": "native", "format": "raw",
                     "disk_iothread": "1", "queues": "0", "vcpupin": "", "emulatorpin": "",
                     "hugepages": "False"}
    scsi = GuestKnobs(bus="scsi", iothreads=1)
    xml = _domain(scsi)
    assert "model='virtio-scsi'" in xml
    assert verify_live_xml(xml, scsi)["disk_iothread"] == "1"
    assert verify_live_xml(xml, scsi)["bus"] == "scsi"


def _argv(cache: dict[str, bool], aio: str, fmt: str = "raw") -> list[str]:
    return ["qemu-system-x86_64", "-name", "guest=g,debug-threads=on", "-m",
            json.dumps({"size": 768 << 20}), "-smp", "2,sockets=2,cores=1,threads=1",
            "-blockdev", json.dumps({"driver": "file", "filename": "/d/disk.raw",
                                     "node-name": "libvirt-1-storage", "cache": cache,
                                     "aio": aio}),
            "-blockdev", json.dumps({"node-name": "libvirt-1-format", "driver": fmt,
                                     "file": "libvirt-1-storage", "cache": cache}),
            "-device", '{"driver":"virtio-blk-pci","drive":"libvirt-1-format",'
                       '"id":"virtio-disk0","write-cache":"on"}']


def test_qemu_view_parsed_and_compared() -> None:
    seen = parse_qemu_disk(_argv({"direct": True, "no-flush": False}, "native"), "/d/disk.raw")
    assert seen["aio"] == "native" and seen["direct"] is True and seen["smp"] == 2
    assert seen["memory_mib"] == 768 and seen["format"] == "raw"
    assert verify_qemu(seen, GuestKnobs(vcpus=2, cache="none", io="native")) == []
    wrong = verify_qemu(seen, GuestKnobs(vcpus=2, cache="writeback", io="threads"))
    assert any(w.startswith("aio:") for w in wrong) and any(w.startswith("direct:") for w in wrong)
    assert any("write cache" in w for w in verify_qemu(seen, GuestKnobs(
        vcpus=2, cache="directsync", io="native")))


def test_guest_view_compared() -> None:
    good = GuestView(nproc=2, memtotal_mib=700, write_cache="write back", driver="virtio_blk")
    assert verify_guest(good, GuestKnobs(vcpus=2)) == []
    wrong = verify_guest(good, GuestKnobs(vcpus=1, cache="writethrough", bus="scsi"))
    assert [w.split(":")[0] for w in wrong] == ["vcpus", "cache", "bus"]


PLACED = HostCaps(**{**CAPS.__dict__, "placement": HostPlacement(
    cpus=frozenset({0, 1}), hugepage_kib=2048, hugepages_total=512, hugepages_free=512,
    hugepage_sizes=(2048,))})


@pytest.mark.parametrize(("knobs", "knob", "why"), [
    ({"queues": 4, "vcpus": 2}, "queues", "at most one queue per CPU"),
    ({"queues": 1, "bus": "sata"}, "queues", "sata"),
    ({"queues": -1}, "queues", "negative"),
])
def test_queue_refusals(knobs: dict[str, object], knob: str, why: str) -> None:
    problems = validate(knobs_from(knobs, GuestKnobs()), PLACED)
    assert any(p.startswith(f"knob {knob}:") and why in p for p in problems), problems


def test_placement_needs_known_host_and_file_backing() -> None:
    assert any(p.startswith("knob vcpupin:") and "unknown" in p
               for p in validate(GuestKnobs(vcpupin="0"), CAPS))
    anon = HostCaps(**{**PLACED.__dict__, "memory_sources": ("anonymous",)})
    assert any(p.startswith("knob hugepages:") and "sourceType: anonymous" in p
               for p in validate(GuestKnobs(hugepages=True), anon))
    assert validate(knobs_from({"vcpus": 2, "queues": 2, "vcpupin": 0, "emulatorpin": "1",
                                "hugepages": True}, GuestKnobs()), PLACED) == []
    assert knobs_from({"vcpupin": 0}, GuestKnobs()).vcpupin == "0"


def test_queues_pins_and_hugepages_in_the_xml() -> None:
    knobs = GuestKnobs(vcpus=2, queues=2, vcpupin="0/1", emulatorpin="1", hugepages=True)
    found = verify_live_xml(_domain(knobs), knobs)
    assert (found["queues"], found["vcpupin"], found["emulatorpin"], found["hugepages"]) == (
        "2", "0/1", "1", "True")
    scsi = GuestKnobs(bus="scsi", vcpus=2, queues=2)
    xml = _domain(scsi)
    assert "<driver queues=\"2\"" in xml or "<driver queues='2'" in xml
    assert verify_live_xml(xml, scsi)["queues"] == "2"
    assert verify_live_xml(_domain(GuestKnobs()), GuestKnobs())["queues"] == "0"


def test_qemu_queues_scsi_iothread_and_memory_backend() -> None:
    argv = [*_argv({"direct": True, "no-flush": False}, "native")]
    argv[-1] = ('{"driver":"virtio-blk-pci","num-queues":2,"drive":"libvirt-1-format",'
                '"id":"virtio-disk0","write-cache":"on","iothread":"iothread1"}')
    argv += ["-object", json.dumps({"qom-type": "memory-backend-file", "id": "pc.ram",
                                    "mem-path": "/run/vbhugepages/libvirt/qemu/1-g"})]
    seen = parse_qemu_disk(argv, "/d/disk.raw")
    knobs = GuestKnobs(vcpus=2, io="native", queues=2, iothreads=1, hugepages=True)
    assert verify_qemu(seen, knobs) == []
    summary = qemu_summary(seen, knobs)
    assert summary["queues"] == 2 and summary["iothread"] == "iothread1"
    assert [w.split(":")[0] for w in verify_qemu(
        seen, GuestKnobs(vcpus=2, io="native", queues=1))] == ["queues"]
    scsi = GuestKnobs(vcpus=2, io="native", bus="scsi", iothreads=1)
    assert any(w.startswith("iothread:") for w in verify_qemu(seen, scsi))
    argv += ["-device", '{"driver":"virtio-scsi-pci","id":"scsi0","iothread":"iothread1",'
                        '"num_queues":2}']
    assert verify_qemu(parse_qemu_disk(argv, "/d/disk.raw"),
                       GuestKnobs(vcpus=2, io="native", bus="scsi", iothreads=1,
                                  queues=2)) == []
    plain = parse_qemu_disk(_argv({"direct": True, "no-flush": False}, "native"), "/d/disk.raw")
    assert any(w.startswith("hugepages:") for w in verify_qemu(
        plain, GuestKnobs(vcpus=2, io="native", hugepages=True)))


GIB = 1 << 30


@pytest.mark.parametrize(("fmt", "prealloc", "actual", "mapped", "ok"), [
    ("raw", "off", 4096, 4096, True), ("raw", "off", GIB, GIB, False),
    ("raw", "falloc", GIB, 4096, True), ("raw", "falloc", 4096, 4096, False),
    ("raw", "full", GIB, GIB, True), ("raw", "full", GIB, 4096, False),
    ("qcow2", "off", 200_000, 0, True), ("qcow2", "metadata", 266_240, GIB, True),
    ("qcow2", "metadata", 200_000, 0, False), ("qcow2", "falloc", GIB + 1, GIB, True),
    ("qcow2", "full", GIB + 1, GIB, True), ("qcow2", "full", 200_000, 0, False)])
def test_preallocation_verified(fmt: str, prealloc: str, actual: int, mapped: int,
                                ok: bool) -> None:
    info = {"format": fmt, "virtual-size": GIB, "actual-size": actual}
    extents = [{"start": 0, "length": mapped, "data": True},
               {"start": mapped, "length": GIB - mapped, "data": False}]
    summary, wrong = verify_preallocation(info, extents, GuestKnobs(format=fmt,
                                                                    preallocation=prealloc))
    assert "MiB allocated of 1024 MiB" in summary
    assert (wrong == []) is ok, wrong
    assert all(w.startswith("preallocation:") for w in wrong)


def test_guest_queues_compared() -> None:
    view = GuestView(nproc=2, memtotal_mib=700, write_cache="write back", driver="virtio_blk",
                     queues=1)
    assert verify_guest(view, GuestKnobs(vcpus=2)) == []
    assert [w.split(":")[0] for w in verify_guest(view, GuestKnobs(vcpus=2, queues=2))] == [
        "queues"]


def test_emulation_notes_sort_the_varied_knobs() -> None:
    variants: dict[str, dict[str, object]] = {"a": {"vcpus": 1, "cache": "none", "queues": 1},
                "b": {"vcpus": 2, "cache": "writeback", "queues": 1}, "c": {"vcpus": 2}}
    assert varied_knobs(variants) == ["cache", "queues", "vcpus"]
    notes = emulation_notes(["cache", "queues", "vcpus", "memory_mib"])
    assert [n.split(":")[0] for n in notes] == ["the variants differ in vcpus",
                                                "the variants differ in queues",
                                                "the variants differ in cache"]
    assert "meaningless" in notes[0] and "partly" in notes[1] and "meaningful" in notes[2]
    assert emulation_notes([]) == []
