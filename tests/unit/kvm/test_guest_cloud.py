"""A user's image: the NoCloud seed's files and the disks of its domain, pure."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from virtbench.kvm.guest_cloud import GUEST_MAC, CloudGuest, CloudSeed, cloud_disks, nocloud_files
from virtbench.kvm.guest_domain import direct_boot_domain_xml
from virtbench.kvm.guest_knobs import GuestKnobs, disk_devices

SEED = CloudSeed(instance_id="vbguest-1-ab", hostname="vbguest-1",
                 host_key_private="-----BEGIN OPENSSH PRIVATE KEY-----\nAAA\n-----END "
                                  "OPENSSH PRIVATE KEY-----\n",
                 host_key_public="ssh-ed25519 AAAAhost vbkvm",
                 authorized_key="ssh-ed25519 AAAAclient vbkvm")


def test_seed_files_carry_keys_and_address_as_data() -> None:
    files = nocloud_files(SEED)
    assert files["user-data"].startswith("#cloud-config\n")
    user = json.loads(files["user-data"].removeprefix("#cloud-config\n"))
    assert user["ssh_authorized_keys"] == [SEED.authorized_key]
    assert user["ssh_keys"] == {"ed25519_private": SEED.host_key_private,
                                "ed25519_public": SEED.host_key_public}
    assert user["disable_root"] is False and user["ssh_deletekeys"] is True
    meta = json.loads(files["meta-data"])
    assert meta == {"instance-id": "vbguest-1-ab", "local-hostname": "vbguest-1"}
    nic = json.loads(files["network-config"])["ethernets"]["vbnet0"]
    assert nic["match"] == {"macaddress": GUEST_MAC} and nic["addresses"] == ["10.0.2.15/24"]


def test_hostile_text_stays_data() -> None:
    odd = CloudSeed(instance_id="x\n- runcmd: [reboot]", hostname="h: {a", host_key_private="k",
                    host_key_public="p", authorized_key="key\n#cloud-boothook")
    meta = json.loads(nocloud_files(odd)["meta-data"])
    assert meta["instance-id"] == "x\n- runcmd: [reboot]"
    assert "runcmd" not in json.loads(nocloud_files(odd)["user-data"].split("\n", 1)[1])


def test_domain_of_a_user_image() -> None:
    guest = CloudGuest(overlay=Path("/s/root 'o'.qcow2"), seed_iso=Path("/s/seed.iso"),
                       kernel=None, initrd=None, cmdline="")
    root, seed = cloud_disks(guest)
    knobs = GuestKnobs(root_disk=True)
    assert knobs.target_dev == "vdb" and GuestKnobs(root_disk=True, bus="scsi").target_dev == "sda"
    xml = direct_boot_domain_xml("g", kernel=None, initrd=None, console_log=Path("/c"),
                                 devices=[root, *disk_devices(knobs, "/s/disk.raw"), seed])
    dom = ET.fromstring(xml)
    boot = dom.find("./os/boot")
    assert dom.find("./os/kernel") is None and boot is not None and boot.get("dev") == "hd"
    disks = [(d.find("target").get("dev"), d.find("source").get("file"),  # type: ignore[union-attr]
              d.find("readonly") is not None) for d in dom.findall("./devices/disk")]
    assert disks == [("vda", "/s/root 'o'.qcow2", False), ("vdb", "/s/disk.raw", False),
                     ("vdz", "/s/seed.iso", True)]
    direct = ET.fromstring(direct_boot_domain_xml(
        "g", kernel=Path("/k"), initrd=None, console_log=Path("/c"), cmdline="root=/dev/vda"))
    assert direct.findtext("./os/kernel") == "/k" and direct.find("./os/initrd") is None
