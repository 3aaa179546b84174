"""The guest lab with a user's own image: a cloud image we build ourselves
(tests/lab/guest/cloud_test_image.py: Debian, systemd, cloud-init, sshd, an ext4 root without a
boot loader) booted with its own kernel; cloud-init NoCloud gives root the key and the pinned
host key, and the NIC its address. Then bad input: an image that does not boot, one of another
format, a missing one; every domain, disk image and key removed. Needs root, mmdebstrap,
genisoimage, QEMU (TCG); the first run builds the image (~4 min on 2 loaded cores), later runs
reuse it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from cloud_test_image import build_cloud_test_image
from images import cache_dir

from virtbench.labs.guest import GuestLab, GuestParams
from virtbench.model import VirtbenchError
from virtbench.services import FilesystemService
from virtbench.targets.local import LocalTarget

pytestmark = [pytest.mark.timeout(900), pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mmdebstrap") is None
    or shutil.which("qemu-system-x86_64") is None, reason="needs root, mmdebstrap and QEMU")]


def _digest(path: Path) -> str:
    with path.open("rb") as src:
        return hashlib.file_digest(src, "sha256").hexdigest()


def _lab(tmp_path: Path, **params: object) -> GuestLab:
    base = {"image_cache": str(cache_dir("virtbench-guest/image")),
            "disk_mib": 128, "memory_mib": 768}
    return GuestLab(GuestParams(**{**base, **params}), tmp_path, LocalTarget())


def _gone(lab: GuestLab, session: Path | None, tmp_path: Path) -> None:
    assert session is not None and not session.exists()  # disks, overlay, seed, keys
    assert not list((tmp_path / "labs").glob("vbguest-*.json"))
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit()
                and f"guest={lab.domain},".encode() in _cmdline(p)]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_user_cloud_image_boots_with_nocloud_keys_and_address(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    made = build_cloud_test_image(cache_dir("virtbench-guest/cloud-test"))
    before = _digest(made.image)
    lab = _lab(tmp_path, image=str(made.image), kernel=str(made.kernel),
               initrd=str(made.initrd), boot_timeout_s=600)
    assert lab.check() == []
    session = None
    try:
        lab.up()
        session = lab.session
        assert lab.cloud is not None
        seed = json.loads((lab.cloud.seed_iso.parent / "user-data").read_text()
                          .removeprefix("#cloud-config\n"))
        assert seed["disable_root"] is False and seed["ssh_genkeytypes"] == []
        state = lab.enter("virtio", {"cache": "none", "io": "native", "queues": 1})
        assert state.target is not None
        run = state.target.run
        # sshd answered with the host key the seed carried (known_hosts pinned it), as root
        assert run(["id", "-u"]).stdout.strip() == "0"
        assert "10.0.2.15/24" in run(["ip", "-o", "-4", "addr", "show"]).stdout
        assert run(["cloud-init", "query", "v1.instance_id"], check=False
                   ).stdout.strip().startswith(lab.domain)
        assert "driver virtio_blk" in state.notes["verified_guest"]
        fs = state.services.get(FilesystemService)
        assert fs.mount["source"] == "/dev/vdb" and fs.mount["fstype"] == "ext4"
        assert run(["findmnt", "-n", "-o", "SOURCE", "/"]).stdout.strip() == "/dev/vda"
    finally:
        lab.down()
    _gone(lab, session, tmp_path)
    assert _digest(made.image) == before  # the user's image is never written


def test_bad_user_images_refused_and_everything_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    local = LocalTarget()
    missing = _lab(tmp_path, image=str(tmp_path / "nowhere.qcow2"))
    assert any("param image" in p and "does not exist" in p for p in missing.check())
    vmdk = tmp_path / "disk.vmdk"
    local.run(["qemu-img", "create", "-q", "-f", "vmdk", str(vmdk), "64M"])
    assert any("param image" in p and "is vmdk; give a qcow2 or raw image" in p
               for p in _lab(tmp_path, image=str(vmdk)).check())
    assert any("knob memory_mib" in p and "systemd and cloud-init" in p
               for p in _lab(tmp_path, image=str(vmdk)).check_variant("small",
                                                                      {"memory_mib": 128}))
    # An empty disk: the firmware finds nothing to boot, sshd never answers.
    blank = tmp_path / "blank.qcow2"
    local.run(["qemu-img", "create", "-q", "-f", "qcow2", str(blank), "256M"])
    lab = _lab(tmp_path, image=str(blank), boot_timeout_s=15)
    session = None
    try:
        lab.up()
        session = lab.session
        with pytest.raises(VirtbenchError, match=r"param image .*blank\.qcow2.*did not answer "
                                                 r"within 15 s \(param boot_timeout_s\)"):
            lab.enter("never", {})
        assert lab.conn.listAllDomains() == []  # rolled back at once
        assert session is not None and not (session / "disk.raw").exists()
    finally:
        lab.down()
    _gone(lab, session, tmp_path)
