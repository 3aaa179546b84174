"""The direct-boot guest domain XML: what a guest asks for is in it, escaped, and libvirt's
test driver defines it and gives back the same kernel, disks and console."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from virtbench.kvm.domxml import read_cpu
from virtbench.kvm.flag_probes import serial_log_path
from virtbench.kvm.guest_domain import QEMU_NAMESPACE, Disk, direct_boot_domain_xml
from virtbench.model import VirtbenchError

RNG = "<rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>"


def attribute(root: ET.Element, path: str, name: str) -> str | None:
    element = root.find(path)
    assert element is not None, f"no {path}"
    return element.get(name)


def test_a_minimal_guest_is_tcg_qemu64_with_its_console_in_a_file(tmp_path: Path) -> None:
    xml = direct_boot_domain_xml("tiny", kernel=tmp_path / "vmlinuz",
                                 initrd=tmp_path / "initrd", console_log=tmp_path / "c.log")
    root = ET.fromstring(xml)
    assert root.get("type") == "qemu"
    assert root.findtext("os/kernel") == str(tmp_path / "vmlinuz")
    assert root.findtext("os/cmdline") == "console=ttyS0 panic=-1"
    assert (read_cpu(xml).mode, read_cpu(xml).model) == ("custom", "qemu64")
    assert serial_log_path(xml) == tmp_path / "c.log"
    assert root.find("devices/disk") is None and root.find("devices/emulator") is None
    assert "xmlns:qemu" not in xml  # no namespace without QEMU arguments


def test_disks_devices_emulator_and_qemu_args_are_placed(tmp_path: Path) -> None:
    odd = tmp_path / "a b&c'd"
    xml = direct_boot_domain_xml(
        "full", kernel=odd / "k", initrd=odd / "i", console_log=odd / "log",
        cmdline="console=ttyS0 quiet", virt_type="kvm", emulator=Path("/usr/bin/qemu-kvm"),
        memory_mib=512, disks=[Disk(odd / "data.img", target="vdb", readonly=True)],
        devices=[RNG], qemu_args=["-netdev", "user,id=n0,restrict=on"])
    root = ET.fromstring(xml)  # parses although the paths hold &, ' and a space
    assert root.get("type") == "kvm"
    assert root.findtext("memory") == "512"
    assert root.findtext("os/initrd") == str(odd / "i")
    assert root.findtext("devices/emulator") == "/usr/bin/qemu-kvm"
    assert root.find("devices/disk/readonly") is not None
    assert attribute(root, "devices/disk/source", "file") == str(odd / "data.img")
    assert attribute(root, "devices/disk/target", "dev") == "vdb"
    assert root.find("devices/rng/backend") is not None
    args = root.findall(f"{{{QEMU_NAMESPACE}}}commandline/{{{QEMU_NAMESPACE}}}arg")
    assert [a.get("value") for a in args] == ["-netdev", "user,id=n0,restrict=on"]


def test_a_device_that_is_not_xml_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VirtbenchError, match="extra guest device"):
        direct_boot_domain_xml("bad", kernel=tmp_path / "k", initrd=tmp_path / "i",
                               console_log=tmp_path / "c", devices=["<rng model='virtio'>"])


def test_libvirt_defines_it_as_built(tmp_path: Path) -> None:
    libvirt = pytest.importorskip("libvirt")
    from virtbench.targets.libvirt_connection import libvirt_module

    libvirt_module()  # silences libvirt's stderr error printing
    xml = direct_boot_domain_xml("vb-guest-domain", kernel=tmp_path / "k",
                                 initrd=tmp_path / "i", console_log=tmp_path / "c.log",
                                 disks=[Disk(tmp_path / "d.img")], devices=[RNG])
    conn = libvirt.open("test:///default")
    try:
        dom = conn.defineXML(xml)
        defined = dom.XMLDesc(0)
        dom.undefine()
    finally:
        conn.close()
    root = ET.fromstring(defined)
    assert root.findtext("os/kernel") == str(tmp_path / "k")
    assert attribute(root, "devices/disk/source", "file") == str(tmp_path / "d.img")
    assert serial_log_path(defined) == tmp_path / "c.log"
    assert root.find("devices/rng") is not None
