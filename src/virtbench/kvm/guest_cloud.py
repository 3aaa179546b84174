"""A user's own cloud image as the guest lab's guest: checked, never written (the guest boots a
qcow2 overlay backed by it), given its SSH keys and address by cloud-init NoCloud.

The NoCloud seed is an ISO 9660 volume labelled ``cidata`` (genisoimage) holding ``meta-data``
(a fresh instance id), ``user-data`` (root's authorized key and the SSH host key virtbench
made, so the known_hosts entry is pinned before the guest ever answers) and
``network-config`` (version 2: QEMU user-mode networking's fixed address on the NIC with the
lab's MAC). The files are JSON, which YAML reads as it is: nothing is spliced into YAML text.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import Target

__all__ = ["GUEST_MAC", "IMAGE_FORMATS", "CloudGuest", "CloudSeed", "check_user_image",
           "cloud_disks", "make_overlay", "make_seed_iso", "nocloud_files"]

GUEST_MAC = "52:54:00:76:62:01"
"""The guest NIC's MAC, which network-config matches."""
ADDRESS, GATEWAY, DNS = "10.0.2.15/24", "10.0.2.2", "10.0.2.3"
"""QEMU user-mode networking's defaults: the guest, the host (gateway), the DNS forwarder."""
IMAGE_FORMATS = ("qcow2", "raw")


@dataclass(frozen=True)
class CloudSeed:
    """What the seed says, for one lab session."""

    instance_id: str
    hostname: str
    host_key_private: str
    host_key_public: str
    authorized_key: str
    mac: str = GUEST_MAC


def nocloud_files(seed: CloudSeed) -> dict[str, str]:
    """``meta-data``, ``user-data`` and ``network-config`` of the NoCloud seed, as text."""
    user_data: dict[str, Any] = {
        # root gets the key too (cloud-init: disable_root false), as the built image's guest
        "disable_root": False, "ssh_pwauth": False,
        "ssh_authorized_keys": [seed.authorized_key],
        # the image's own host keys are replaced by the one pinned in known_hosts
        "ssh_deletekeys": True, "ssh_genkeytypes": [],
        "ssh_keys": {"ed25519_private": seed.host_key_private,
                     "ed25519_public": seed.host_key_public},
    }
    network = {"version": 2, "ethernets": {"vbnet0": {
        "match": {"macaddress": seed.mac}, "addresses": [ADDRESS], "gateway4": GATEWAY,
        "nameservers": {"addresses": [DNS]}}}}
    return {
        "meta-data": json.dumps({"instance-id": seed.instance_id,
                                 "local-hostname": seed.hostname}, indent=1) + "\n",
        "user-data": "#cloud-config\n" + json.dumps(user_data, indent=1) + "\n",
        "network-config": json.dumps(network, indent=1) + "\n",
    }


def make_seed_iso(target: Target, seed: CloudSeed, directory: Path) -> Path:
    """Write the seed's files into ``directory`` and pack them as ``seed.iso``."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for name, text in nocloud_files(seed).items():
        (directory / name).write_text(text)
        names.append(str(directory / name))
    iso = directory / "seed.iso"
    target.run(["genisoimage", "-quiet", "-output", str(iso), "-volid", "cidata", "-joliet",
                "-rock", *names])
    return iso


def check_user_image(target: Target, image: Path) -> str:
    """The format of the user's image (qcow2 or raw); a clear error naming the param and the
    file when it is missing, unreadable or of another format."""
    if not image.is_file():
        raise VirtbenchError(f"lab guest, param image: {image} does not exist (or is not a "
                             "file)")
    done = target.run(["qemu-img", "info", "--output=json", str(image)], check=False)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise VirtbenchError(f"lab guest, param image: qemu-img cannot read {image}: {why}")
    try:
        fmt = str(json.loads(done.stdout).get("format", ""))
    except (ValueError, AttributeError):
        fmt = ""
    if fmt not in IMAGE_FORMATS:
        raise VirtbenchError(f"lab guest, param image: {image} is {fmt or 'of no known format'}"
                             f"; give a {' or '.join(IMAGE_FORMATS)} image")
    return fmt


def make_overlay(target: Target, image: Path, fmt: str, overlay: Path) -> Path:
    """A qcow2 overlay backed by ``image``: the guest writes there, the image stays as it is."""
    target.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image.resolve()), "-F",
                fmt, str(overlay)])
    return overlay


@dataclass(frozen=True)
class CloudGuest:
    """One lab session's guest from a user's image: its overlay, its seed, how it boots."""

    overlay: Path
    seed_iso: Path
    kernel: Path | None
    """Direct boot with the image's own kernel (an image without a boot loader); None: the
    firmware boots the image's first disk."""
    initrd: Path | None
    cmdline: str


def cloud_disks(guest: CloudGuest) -> tuple[str, str]:
    """The root disk (vda, the overlay) and the seed (read-only, virtio) as ``<disk>`` XML;
    the lab puts the test disk between them, so the guest names it vdb."""
    root = ("<disk type='file' device='disk'><driver name='qemu' type='qcow2'/>"
            "<source file=''/><target dev='vda' bus='virtio'/></disk>")
    seed = ("<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
            "<source file=''/><target dev='vdz' bus='virtio'/><readonly/></disk>")
    return _with_source(root, guest.overlay), _with_source(seed, guest.seed_iso)


def _with_source(xml: str, path: Path) -> str:
    disk = ET.fromstring(xml)
    source = disk.find("source")
    assert source is not None
    source.set("file", str(path))  # set as an attribute: escaped, whatever the path holds
    return ET.tostring(disk, encoding="unicode")
