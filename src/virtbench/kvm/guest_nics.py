"""A guest's data NIC on a lab switch: the NIC knobs, their checks before boot, the libvirt
``<interface>`` that realises them, and what the live XML, QEMU's command line and the guest
itself say about them (docs/net.md, "Guests on the switch").

The NIC is a tap device that libvirt creates (``<interface type='ethernet'>``) in the host's
namespace; the lab moves it into its switch namespace afterwards (a tap keeps working across
namespaces) and attaches it to the Linux bridge or OVS there. Pure logic: no process here.
"""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["NIC_DRIVERS", "NIC_MODELS", "NIC_PCI_SLOT", "GuestNicView", "NicCaps", "NicKnobs",
           "interface_xml", "memfd_shared_memory", "nic_from_live_xml", "nic_knobs_from",
           "parse_ethtool", "parse_qemu_nic", "validate_nic", "verify_nic",
           "vhost_user_qemu_args"]

NIC_MODELS = ("virtio", "e1000e")
NIC_DRIVERS = ("qemu", "vhost")
QUEUE_SIZES = (256, 512, 1024)
TAP_TX_QUEUE_SIZE = 256
"""QEMU caps a tap backend's virtio-net TX ring at 256 (only vhost-user may go beyond):
a larger ``tx_queue_size`` on a tap would be dropped silently, so it is refused."""
NIC_PCI_SLOT = 0x11
"""After the management NIC (0x10), so the guest enumerates the management NIC first (eth0,
which the image's /init configures) and the data NIC second."""
GUEST_DRIVER = {"virtio": "virtio_net", "e1000e": "e1000e"}
"""The guest driver each model binds (``/sys/class/net/IF/device/driver``)."""


@dataclass(frozen=True)
class NicKnobs:
    nic_model: str = "virtio"
    nic_driver: str = "qemu"
    nic_queues: int = 1
    rx_queue_size: int = 256
    tx_queue_size: int = 256

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def nic_knobs_from(values: Mapping[str, Any], defaults: NicKnobs | None = None) -> NicKnobs:
    """A variant's NIC knobs over ``defaults`` (None and absent keep the default)."""
    names = {f.name for f in fields(NicKnobs)}
    given = {k: v for k, v in values.items() if v is not None and k in names}
    return NicKnobs(**{**(defaults or NicKnobs()).as_dict(), **given})


@dataclass(frozen=True)
class NicCaps:
    """What the host and the guest image can do for a NIC."""

    vhost_net: bool
    """/dev/vhost-net exists."""
    virt_type: str
    """kvm or qemu (TCG)."""
    image_models: tuple[str, ...] = ("virtio",)
    """Models whose driver the guest image's kernel has (Debian's cloud kernel: virtio only)."""


def _int_knob(name: str, value: Any) -> tuple[int | None, str | None]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"knob {name}: {value!r} is not a whole number"
    return value, None


def validate_nic(knobs: NicKnobs, vcpus: int, caps: NicCaps, backend: str = "tap"
                 ) -> list[str]:
    """Every reason the host cannot run ``knobs`` as asked on ``backend`` (tap, vhost-user),
    each naming its knob."""
    if backend == "vhost-user":
        return _vhost_user_problems(knobs)
    problems: list[str] = []
    if knobs.nic_model not in NIC_MODELS:
        problems.append(f"knob nic_model: {knobs.nic_model!r}; use one of {', '.join(NIC_MODELS)}")
    elif knobs.nic_model not in caps.image_models:
        problems.append(f"knob nic_model: {knobs.nic_model} is not driven by the guest image's "
                        "kernel (Debian's cloud kernel has no e1000e module): the guest would "
                        "not see the NIC")
    problems += _driver_problems(knobs, caps)
    problems += _queue_problems(knobs, vcpus)
    return problems


def _vhost_user_problems(knobs: NicKnobs) -> list[str]:
    """vhost-user (OVS-DPDK): a virtio NIC whose rings the switch serves itself."""
    problems = []
    if knobs.nic_model != "virtio":
        problems.append(f"knob nic_model: vhost-user serves virtio NICs only, not "
                        f"{knobs.nic_model}")
    if knobs.nic_driver != "qemu":
        problems.append("knob nic_driver: vhost-user is its own backend (OVS-DPDK serves the "
                        "rings); nic_driver applies to tap NICs")
    if knobs.nic_queues != 1:
        problems.append("knob nic_queues: multiqueue vhost-user guests are not done yet "
                        "(use 1 on ovs-dpdk)")
    for name in ("rx_queue_size", "tx_queue_size"):
        if getattr(knobs, name) not in QUEUE_SIZES:
            problems.append(f"knob {name}: {getattr(knobs, name)!r}; use one of "
                            f"{', '.join(map(str, QUEUE_SIZES))}")
    return problems


def vhost_user_qemu_args(knobs: NicKnobs, socket: str, mac: str) -> list[str]:
    """The data NIC on an OVS-DPDK vhost-user port, as QEMU arguments: QEMU is the server on
    ``socket`` (OVS the client, so either may restart). ``vectors=0`` (INTx, no MSI-X): QEMU
    7.2 under TCG crashes in msix_set_vector_notifiers when vhost starts (docs/net.md); the
    guest's memory must be shared (``memfd_shared_memory``)."""
    return ["-chardev", f"socket,id=vbvhu0,path={socket},server=on,wait=off",
            "-netdev", "vhost-user,id=vbvhunet0,chardev=vbvhu0",
            "-device", f"virtio-net-pci,netdev=vbvhunet0,mac={mac},vectors=0,"
                       f"rx_queue_size={knobs.rx_queue_size},"
                       f"tx_queue_size={knobs.tx_queue_size},addr={NIC_PCI_SLOT:#04x}"]


MEMFD_SHARED = ("<memoryBacking><source type='memfd'/><access mode='shared'/>"
                "</memoryBacking>")


def memfd_shared_memory(domain_xml: str) -> str:
    """``domain_xml`` with the guest's memory in a shared memfd, as vhost-user needs (the
    switch maps the guest's memory to reach the rings)."""
    if "</memory>" not in domain_xml:
        raise ValueError("domain XML without a <memory> element")
    return domain_xml.replace("</memory>", "</memory>\n  " + MEMFD_SHARED, 1)


def _driver_problems(knobs: NicKnobs, caps: NicCaps) -> list[str]:
    if knobs.nic_driver not in NIC_DRIVERS:
        return [f"knob nic_driver: {knobs.nic_driver!r}; use one of {', '.join(NIC_DRIVERS)}"]
    if knobs.nic_driver != "vhost":
        return []
    problems = []
    if knobs.nic_model != "virtio":
        problems.append("knob nic_driver: vhost (vhost-net) serves virtio NICs only, not "
                        f"{knobs.nic_model}")
    if not caps.vhost_net:
        problems.append("knob nic_driver: vhost needs /dev/vhost-net, which this host lacks "
                        "(kernel without vhost_net); QEMU would fail or fall back to its own "
                        "virtio-net in userspace, so it is refused")
    if caps.virt_type != "kvm":
        problems.append("knob nic_driver: vhost needs KVM (vhost-net signals the guest "
                        "through KVM's irqfd/ioeventfd); under TCG QEMU falls back to "
                        "userspace virtio-net without vhostforce, so it is refused")
    return problems


def _queue_problems(knobs: NicKnobs, vcpus: int) -> list[str]:
    problems = []
    queues, error = _int_knob("nic_queues", knobs.nic_queues)
    if error:
        problems.append(error)
    elif queues is not None and not 1 <= queues <= vcpus:
        problems.append(f"knob nic_queues: {queues} queues for {vcpus} vCPU(s); use 1..{vcpus} "
                        "(a queue pair per vCPU at most: the guest cannot use more)")
    elif queues is not None and queues > 1 and knobs.nic_model != "virtio":
        problems.append(f"knob nic_queues: multiqueue needs nic_model virtio, not "
                        f"{knobs.nic_model}")
    for name in ("rx_queue_size", "tx_queue_size"):
        size, error = _int_knob(name, getattr(knobs, name))
        if error:
            problems.append(error)
        elif size not in QUEUE_SIZES:
            problems.append(f"knob {name}: {size}; use one of "
                            f"{', '.join(map(str, QUEUE_SIZES))}")
        elif size != 256 and knobs.nic_model != "virtio":
            problems.append(f"knob {name}: ring sizes are virtio-net's, not {knobs.nic_model}'s")
    if knobs.tx_queue_size != TAP_TX_QUEUE_SIZE and knobs.tx_queue_size in QUEUE_SIZES:
        problems.append(f"knob tx_queue_size: {knobs.tx_queue_size} on a tap backend; QEMU "
                        f"keeps {TAP_TX_QUEUE_SIZE} (only vhost-user takes more), so it is "
                        "refused rather than silently dropped")
    return problems


def interface_xml(knobs: NicKnobs, tap: str, mac: str, slot: int = NIC_PCI_SLOT) -> str:
    """The ``<interface>`` of the data NIC: a tap named ``tap`` that libvirt creates, at PCI
    ``slot`` (a guest with several data NICs gives each its own)."""
    el = ET.Element("interface", {"type": "ethernet"})
    ET.SubElement(el, "mac", {"address": mac})
    ET.SubElement(el, "target", {"dev": tap, "managed": "yes"})
    ET.SubElement(el, "model", {"type": knobs.nic_model})
    if knobs.nic_model == "virtio":
        driver = {"name": knobs.nic_driver, "rx_queue_size": str(knobs.rx_queue_size),
                  "tx_queue_size": str(knobs.tx_queue_size)}
        if knobs.nic_queues > 1:
            driver["queues"] = str(knobs.nic_queues)
        ET.SubElement(el, "driver", driver)
    ET.SubElement(el, "address", {"type": "pci", "domain": "0x0000", "bus": "0x00",
                                  "slot": f"{slot:#04x}", "function": "0x0"})
    return ET.tostring(el, encoding="unicode")


def nic_from_live_xml(xml: str, mac: str) -> dict[str, Any]:
    """The running domain's view of the interface with ``mac``: model, driver, queues, ring
    sizes and the tap's name (empty when the interface is missing)."""
    root = ET.fromstring(xml)
    for iface in root.iter("interface"):
        found = iface.find("mac")
        if found is None or found.get("address", "").lower() != mac.lower():
            continue
        model, driver, target = iface.find("model"), iface.find("driver"), iface.find("target")
        attrs = driver.attrib if driver is not None else {}
        return {"nic_model": model.get("type") if model is not None else None,
                "nic_driver": attrs.get("name", "qemu"),
                "nic_queues": int(attrs.get("queues", "1")),
                "rx_queue_size": int(attrs.get("rx_queue_size", "256")),
                "tx_queue_size": int(attrs.get("tx_queue_size", "256")),
                "tap": target.get("dev") if target is not None else None}
    return {}


def _options(arg: str) -> dict[str, Any]:
    """A QEMU ``-device``/``-netdev`` value: JSON (libvirt with QEMU >= 6.0) or key=value."""
    if arg.startswith("{"):
        try:
            value = json.loads(arg)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    words = arg.split(",")
    out: dict[str, Any] = {"driver": words[0]} if "=" not in words[0] else {}
    for word in words:
        if "=" in word:
            key, _, val = word.partition("=")
            out[key] = val
    return out


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("on", "true", "yes")


def parse_qemu_nic(argv: Sequence[str], mac: str) -> dict[str, Any]:
    """The device with ``mac`` on QEMU's command line and the netdev behind it: ``device``
    (virtio-net-pci, e1000e), ``vhost`` (bool), ``queues``, ``mq``, ring sizes."""
    pairs = list(itertools.pairwise(argv))
    devices = [_options(v) for k, v in pairs if k == "-device"]
    netdevs = {str(n.get("id")): n for n in (_options(v) for k, v in pairs if k == "-netdev")}
    for device in devices:
        if str(device.get("mac", "")).lower() != mac.lower():
            continue
        netdev = netdevs.get(str(device.get("netdev")), {})
        fds = str(netdev.get("fds", netdev.get("fd", "")))
        return {"device": device.get("driver"),
                "backend": netdev.get("type", netdev.get("driver", "tap")),
                "vhost": _truthy(netdev.get("vhost", False)),
                "queues": len(fds.split(":")) if fds else 1,
                "mq": _truthy(device.get("mq", False)),
                "rx_queue_size": int(device.get("rx_queue_size", 256)),
                "tx_queue_size": int(device.get("tx_queue_size", 256))}
    return {}


@dataclass(frozen=True)
class GuestNicView:
    """The data NIC as the guest sees it."""

    driver: str
    """/sys/class/net/IF/device/driver's name."""
    combined: int
    """``ethtool -l``: current combined channels (1 for a NIC without channels)."""
    max_combined: int
    rx_ring: int | None
    tx_ring: int | None
    """``ethtool -g`` current ring sizes (None where the driver reports none)."""
    offloads: Mapping[str, str]
    """``ethtool -k``: tcp-segmentation-offload, generic-segmentation-offload, ... -> on|off."""


_SECTION = re.compile(r"^(Pre-set maximums|Current hardware settings)", re.IGNORECASE)


def parse_ethtool(channels: str, rings: str) -> dict[str, int | None]:
    """``combined``/``max_combined`` from ``ethtool -l``, ``rx_ring``/``tx_ring`` (current)
    from ``ethtool -g``."""
    def section_values(text: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        current = ""
        for line in text.splitlines():
            match = _SECTION.match(line.strip())
            if match:
                current = "max" if match.group(1).lower().startswith("pre") else "cur"
                continue
            key, _, value = line.partition(":")
            if current and value.strip().isdigit():
                out.setdefault(current, {})[key.strip().lower()] = int(value.strip())
        return out

    ch, rg = section_values(channels), section_values(rings)
    return {"combined": ch.get("cur", {}).get("combined"),
            "max_combined": ch.get("max", {}).get("combined"),
            "rx_ring": rg.get("cur", {}).get("rx"), "tx_ring": rg.get("cur", {}).get("tx")}


def verify_nic(knobs: NicKnobs, live: Mapping[str, Any], qemu: Mapping[str, Any],
               guest: GuestNicView, backend: str = "tap") -> list[str]:
    """Every knob found otherwise than asked, naming the knob and who disagrees. A vhost-user
    NIC is on QEMU's command line, not in the domain XML: its live XML is not consulted."""
    wrong = [] if backend == "vhost-user" else [
        f"{name}: asked {getattr(knobs, name)}, the live XML has {live.get(name)}"
        for name in ("nic_model", "nic_driver", "nic_queues", "rx_queue_size",
                     "tx_queue_size") if live.get(name) != getattr(knobs, name)]
    if qemu and qemu.get("backend") != backend:
        wrong.append(f"backend: QEMU's netdev is {qemu.get('backend')}, not {backend}")
    device = {"virtio": "virtio-net-pci", "e1000e": "e1000e"}[knobs.nic_model]
    if not qemu:
        return [*wrong, "QEMU's command line has no device with the NIC's MAC"]
    if qemu.get("device") != device:
        wrong.append(f"nic_model: QEMU runs {qemu.get('device')}, not {device}")
    if qemu.get("vhost") != (knobs.nic_driver == "vhost"):
        wrong.append(f"nic_driver: QEMU's netdev has vhost={qemu.get('vhost')}")
    if qemu.get("queues") != knobs.nic_queues or (knobs.nic_queues > 1 and not qemu.get("mq")):
        wrong.append(f"nic_queues: QEMU has {qemu.get('queues')} tap queue(s), mq "
                     f"{qemu.get('mq')}")
    if knobs.nic_model == "virtio":
        if qemu.get("rx_queue_size") != knobs.rx_queue_size:
            wrong.append(f"rx_queue_size: QEMU has {qemu.get('rx_queue_size')}")
        if guest.rx_ring is not None and guest.rx_ring != knobs.rx_queue_size:
            wrong.append(f"rx_queue_size: the guest's ring is {guest.rx_ring}")
    if guest.driver != GUEST_DRIVER[knobs.nic_model]:
        wrong.append(f"nic_model: the guest's driver is {guest.driver or 'none'}, not "
                     f"{GUEST_DRIVER[knobs.nic_model]}")
    if guest.combined != knobs.nic_queues:
        wrong.append(f"nic_queues: the guest uses {guest.combined} combined channel(s) "
                     f"(ethtool -l)")
    return wrong
