"""OVS-DPDK vhost-user ports: a real QEMU guest (TCG) attached to the lab's switch by its
vhost-user socket answers a namespace host's pings through OVS-DPDK."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from dpdk import PMD_SLEEP_US
from vhost_guest import start_guest, vhost_guest_image, wait_ready
from waits import kill

from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.model import VirtbenchError
from virtbench.services import VirtualSwitch
from virtbench.targets.local import LocalTarget

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]


def test_vhost_user_port_carries_a_guest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for binary in ("qemu-system-x86_64", "apt-get", "dpkg-deb", "cpio"):
        if shutil.which(binary) is None:
            pytest.skip(f"'{binary}' missing")
    image = vhost_guest_image()
    # A unix socket path holds 107 bytes: pytest's tmp_path is too deep for the lab's run dir.
    root = Path(tempfile.mkdtemp(prefix="vbl-", dir="/tmp"))
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(root))
    params = VSwitchLab.Params(vhost_user_ports=["vm1"], dpdk_pmd_max_sleep_us=PMD_SLEEP_US)
    lab = VSwitchLab(params, tmp_path, LocalTarget())
    guest: subprocess.Popen[bytes] | None = None
    try:
        lab.up()
        with pytest.raises(VirtbenchError, match="needs switch ovs-dpdk"):
            lab.enter("bridge", {"switch": "linux-bridge"})
        # A DPDK start-up failure fails here with ovs-vswitchd.log's last lines (OvsStartError).
        state = lab.enter("dpdk", {"switch": "ovs-dpdk", "background_mbps": 0})
        socket = Path(state.services.get(VirtualSwitch).vhost_user_sockets["vm1"])
        assert "vhost-user" in state.notes
        assert socket.parent.stat().st_mode & 0o7777 == 0o1777  # QEMU as libvirt-qemu writes it
        console = tmp_path / "console.log"
        guest = start_guest(image, socket, "10.77.0.9/24", console)
        wait_ready(guest, console)
        client = state.target
        assert client is not None
        deadline = time.monotonic() + 60  # OVS reconnects to the socket; ARP; slow TCG guest
        while True:  # ends: done, or past the deadline below
            res = client.run(["ping", "-c", "3", "-W", "3", "10.77.0.9"], check=False,
                             timeout=30)
            if res.returncode == 0 or time.monotonic() > deadline:
                break
        assert res.returncode == 0, res.stdout + res.stderr
        assert " 0% packet loss" in res.stdout or "3 received" in res.stdout
    finally:
        if guest is not None:
            kill(guest)
        lab.down()
        shutil.rmtree(root, ignore_errors=True)
