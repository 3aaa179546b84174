"""The guests' NIC knobs, pure: validation before boot, the interface XML, and the parsers of
what libvirt, QEMU and the guest report (on outputs captured from a real TCG guest: tests/data/
guest-nic)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from virtbench.kvm.guest_domain import direct_boot_domain_xml
from virtbench.kvm.guest_nics import (
    GuestNicView,
    NicCaps,
    NicKnobs,
    interface_xml,
    memfd_shared_memory,
    nic_from_live_xml,
    nic_knobs_from,
    parse_ethtool,
    parse_qemu_nic,
    validate_nic,
    verify_nic,
    vhost_user_qemu_args,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "guest-nic"
TCG = NicCaps(vhost_net=False, virt_type="qemu")
KVM = NicCaps(vhost_net=True, virt_type="kvm", image_models=("virtio", "e1000e"))
MAC = "52:54:00:77:00:02"
MQ = NicKnobs(nic_queues=2, rx_queue_size=512)


def _problems(caps: NicCaps = TCG, vcpus: int = 2, **knobs: object) -> list[str]:
    return validate_nic(nic_knobs_from(knobs), vcpus, caps)


def test_defaults_and_multiqueue_are_valid() -> None:
    assert _problems() == []
    assert _problems(nic_queues=2, rx_queue_size=1024) == []
    assert _problems(KVM, nic_driver="vhost", nic_queues=2) == []
    assert _problems(KVM, nic_model="e1000e") == []


def test_vhost_refused_here_with_both_reasons() -> None:
    problems = _problems(nic_driver="vhost")
    assert len(problems) == 2
    assert all(p.startswith("knob nic_driver") for p in problems)
    assert "/dev/vhost-net" in problems[0] and "KVM" in problems[1]
    assert any("virtio NICs only" in p
               for p in _problems(KVM, nic_driver="vhost", nic_model="e1000e"))


@pytest.mark.parametrize(("knobs", "needle"), [
    ({"nic_queues": 3}, "knob nic_queues: 3 queues for 2 vCPU(s)"),
    ({"nic_queues": 0}, "knob nic_queues: 0 queues"),
    ({"nic_queues": "2"}, "knob nic_queues: '2' is not a whole number"),
    ({"nic_model": "rtl8139"}, "knob nic_model: 'rtl8139'"),
    ({"nic_model": "e1000e"}, "no e1000e module"),
    ({"nic_driver": "kernel"}, "knob nic_driver: 'kernel'"),
    ({"rx_queue_size": 300}, "knob rx_queue_size: 300"),
    ({"tx_queue_size": 1024}, "QEMU keeps 256"),
])
def test_refusals_name_their_knob(knobs: dict[str, object], needle: str) -> None:
    problems = validate_nic(nic_knobs_from(knobs), 2, TCG)
    assert any(needle in p for p in problems), problems


def test_multiqueue_and_rings_need_virtio() -> None:
    problems = _problems(KVM, nic_model="e1000e", nic_queues=2, rx_queue_size=512)
    assert any("multiqueue needs nic_model virtio" in p for p in problems)
    assert any("ring sizes are virtio-net's" in p for p in problems)


def test_interface_xml_realises_the_knobs() -> None:
    el = ET.fromstring(interface_xml(MQ, "vbgabcdcli", MAC))
    assert el.get("type") == "ethernet"
    assert el.find("target").get("dev") == "vbgabcdcli"  # type: ignore[union-attr]
    driver = el.find("driver")
    assert driver is not None and driver.attrib == {
        "name": "qemu", "queues": "2", "rx_queue_size": "512", "tx_queue_size": "256"}
    assert el.find("address").get("slot") == "0x11"  # type: ignore[union-attr]
    e1000e = ET.fromstring(interface_xml(NicKnobs(nic_model="e1000e"), "t", MAC))
    assert e1000e.find("driver") is None  # virtio-only attributes stay out


def test_real_outputs_verify_the_multiqueue_guest() -> None:
    live = nic_from_live_xml((DATA / "live.xml").read_text(), MAC)
    assert live["nic_queues"] == 2 and live["rx_queue_size"] == 512
    assert live["tap"].startswith("vbg")
    qemu = parse_qemu_nic(json.loads((DATA / "qemu-argv.json").read_text()), MAC)
    assert qemu == {"device": "virtio-net-pci", "backend": "tap", "vhost": False, "queues": 2,
                    "mq": True, "rx_queue_size": 512, "tx_queue_size": 256}
    numbers = parse_ethtool((DATA / "ethtool-l.txt").read_text(),
                            (DATA / "ethtool-g.txt").read_text())
    assert numbers == {"combined": 2, "max_combined": 2, "rx_ring": 512, "tx_ring": 256}
    view = GuestNicView("virtio_net", 2, 2, 512, 256, {})
    assert verify_nic(MQ, live, qemu, view) == []
    # each disagreement is reported with its knob and who disagrees
    one = GuestNicView("virtio_net", 1, 2, 256, 256, {})
    wrong = verify_nic(MQ, live, qemu, one)
    assert any(w.startswith("nic_queues: the guest uses 1") for w in wrong)
    assert any(w.startswith("rx_queue_size: the guest's ring is 256") for w in wrong)
    assert any("vhost=False" in w for w in verify_nic(
        NicKnobs(nic_driver="vhost", nic_queues=2, rx_queue_size=512),
        {**live, "nic_driver": "vhost"}, qemu, view))
    assert verify_nic(MQ, live, {}, view)[-1].startswith("QEMU's command line has no device")


def test_key_value_qemu_options() -> None:
    argv = ["qemu", "-netdev", "tap,fds=3:4:5,id=hostnet0,vhost=on",
            "-device", f"virtio-net-pci,mq=on,netdev=hostnet0,mac={MAC},rx_queue_size=1024"]
    assert parse_qemu_nic(argv, MAC.upper()) == {
        "device": "virtio-net-pci", "backend": "tap", "vhost": True, "queues": 3, "mq": True,
        "rx_queue_size": 1024, "tx_queue_size": 256}
    assert parse_qemu_nic(argv, "52:54:00:00:00:00") == {}
    assert nic_from_live_xml("<domain><devices/></domain>", MAC) == {}


def test_vhost_user_nic_on_qemus_command_line() -> None:
    knobs = NicKnobs(rx_queue_size=1024, tx_queue_size=1024)
    assert validate_nic(knobs, 1, TCG, "vhost-user") == []  # vhost-user takes a larger TX ring
    argv = ["qemu", *vhost_user_qemu_args(knobs, "/tmp/vbgsw-x/vhu/vhu-cli.sock", MAC)]
    assert "socket,id=vbvhu0,path=/tmp/vbgsw-x/vhu/vhu-cli.sock,server=on,wait=off" in argv
    qemu = parse_qemu_nic(argv, MAC)
    assert qemu["backend"] == "vhost-user" and qemu["vhost"] is False
    assert (qemu["rx_queue_size"], qemu["tx_queue_size"]) == (1024, 1024)
    view = GuestNicView("virtio_net", 1, 1, 1024, 1024, {})
    assert verify_nic(knobs, {}, qemu, view, "vhost-user") == []  # not in the domain XML
    assert any(w.startswith("backend: QEMU's netdev is vhost-user, not tap")
               for w in verify_nic(knobs, {}, qemu, view))


def test_shared_memory_for_vhost_user() -> None:
    xml = direct_boot_domain_xml("vbgsw-1-cli", kernel=Path("/k"), initrd=Path("/i"),
                                 console_log=Path("/c"))
    backing = ET.fromstring(memfd_shared_memory(xml)).find("memoryBacking")
    assert backing is not None
    assert backing.find("source").get("type") == "memfd"  # type: ignore[union-attr]
    assert backing.find("access").get("mode") == "shared"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="without a <memory>"):
        memfd_shared_memory("<domain/>")
