"""The libvirt domain XML of a small direct-boot guest: kernel and initrd given to QEMU (no
firmware, no boot loader), one vCPU with custom qemu64, the serial console written to a file.

One builder for every such guest: the sandbox's Debian guest (:mod:`virtbench.kvm.sandbox`) and
the lab tests' busybox guest. Built with xml.etree and rendered the way libvirt writes XML, so
paths and names are escaped and the document always parses.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from virtbench.kvm.domxml import DEFAULT_MODEL, render_element
from virtbench.model import VirtbenchError

__all__ = ["CONSOLE_CMDLINE", "QEMU_NAMESPACE", "Disk", "direct_boot_domain_xml"]

QEMU_NAMESPACE = "http://libvirt.org/schemas/domain/qemu/1.0"
CONSOLE_CMDLINE = "console=ttyS0 panic=-1"
"""Kernel messages on the serial port (the console log); a panic powers the guest off."""


@dataclass(frozen=True)
class Disk:
    """A file-backed disk: ``target`` is the guest's device name (vda, sdb...)."""

    source: Path
    target: str = "vda"
    bus: str = "virtio"
    format: str = "raw"
    readonly: bool = False


def _disk_element(disk: Disk) -> ET.Element:
    el = ET.Element("disk", {"type": "file", "device": "disk"})
    ET.SubElement(el, "driver", {"name": "qemu", "type": disk.format})
    ET.SubElement(el, "source", {"file": str(disk.source)})
    ET.SubElement(el, "target", {"dev": disk.target, "bus": disk.bus})
    if disk.readonly:
        ET.SubElement(el, "readonly")
    return el


def _device_element(xml: str) -> ET.Element:
    try:
        return ET.fromstring(xml)
    except ET.ParseError as exc:
        raise VirtbenchError(f"extra guest device is not one XML element ({exc}): {xml}") from exc


def direct_boot_domain_xml(name: str, *, kernel: Path | None, initrd: Path | None,
                           console_log: Path,
                           cmdline: str = CONSOLE_CMDLINE, virt_type: str = "qemu",
                           emulator: Path | None = None, memory_mib: int = 256,
                           disks: Sequence[Disk] = (), devices: Sequence[str] = (),
                           qemu_args: Sequence[str] = ()) -> str:
    """The domain XML.

    ``kernel`` None: no direct boot, the firmware boots the first disk (a cloud image with its
    own boot loader); ``initrd`` is then ignored too. ``virt_type`` is the accelerator:
    ``kvm``, or ``qemu`` for TCG (this machine's /dev/kvm runs no stock guest); ``emulator`` a
    QEMU binary other than libvirt's default. ``devices`` are extra ``<devices>`` children as
    XML text; ``qemu_args`` go straight to QEMU's command line (``<qemu:commandline>``, e.g.
    user-mode networking, which libvirt 9.0 only offers through passt).
    """
    root = ET.Element("domain", {"type": virt_type})
    if qemu_args:
        root.set("xmlns:qemu", QEMU_NAMESPACE)
    ET.SubElement(root, "name").text = name
    ET.SubElement(root, "memory", {"unit": "MiB"}).text = str(memory_mib)
    ET.SubElement(root, "vcpu", {"placement": "static"}).text = "1"
    os_el = ET.SubElement(root, "os")
    ET.SubElement(os_el, "type", {"arch": "x86_64", "machine": "pc"}).text = "hvm"
    if kernel is None:
        ET.SubElement(os_el, "boot", {"dev": "hd"})
    else:
        ET.SubElement(os_el, "kernel").text = str(kernel)
        if initrd is not None:
            ET.SubElement(os_el, "initrd").text = str(initrd)
        ET.SubElement(os_el, "cmdline").text = cmdline
    # Without ACPI a poweroff only halts the guest.
    ET.SubElement(ET.SubElement(root, "features"), "acpi")
    # check='full' refuses what TCG adjusts (it adds the hypervisor flag, drops lahf_lm).
    cpu = ET.SubElement(root, "cpu", {"mode": "custom", "match": "exact", "check": "none"})
    ET.SubElement(cpu, "model", {"fallback": "allow"}).text = DEFAULT_MODEL
    for event, action in (("on_poweroff", "destroy"), ("on_reboot", "restart"),
                          ("on_crash", "destroy")):
        ET.SubElement(root, event).text = action
    dev = ET.SubElement(root, "devices")
    if emulator is not None:
        ET.SubElement(dev, "emulator").text = str(emulator)
    dev.extend([_disk_element(disk) for disk in disks])
    serial = ET.SubElement(dev, "serial", {"type": "file"})
    ET.SubElement(serial, "source", {"path": str(console_log)})
    ET.SubElement(serial, "target", {"port": "0"})
    dev.extend([_device_element(device) for device in devices])
    ET.SubElement(dev, "memballoon", {"model": "none"})
    if qemu_args:
        commandline = ET.SubElement(root, "qemu:commandline")
        for arg in qemu_args:
            ET.SubElement(commandline, "qemu:arg", {"value": arg})
    return render_element(root, "") + "\n"
