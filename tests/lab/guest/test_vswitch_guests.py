"""The vswitch-guests lab end to end: ONE boot of two TCG guests (2 vCPUs, 2 NIC queues, a 512
RX ring), verified, reused on a Linux bridge and on OVS (netdev) for the unchanged QoS
workload, then a second boot on OVS-DPDK vhost-user ports; refusals before boot; a guest that
lost its address; a tap name already taken; and `virtbench lab clean` after a crash removing
guests, taps, switch and namespaces. Needs root, mmdebstrap, QEMU, OVS, DPDK."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from dpdk import PMD_SLEEP_US
from images import cache_dir

from virtbench.labs.cleanup import clean_leftovers
from virtbench.labs.net.guest_switch import VSwitchGuestsLab, VSwitchGuestsParams
from virtbench.model import VirtbenchError
from virtbench.plugins import all_labs
from virtbench.services import ClientServerPath, VirtualSwitch
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.qos_transfer import QosTransfer
from virtbench.workloads.workload_contract import TrialContext

CACHE = str(cache_dir("virtbench-guest/net-image"))
MQ = {"vcpus": 2, "nic_queues": 2, "rx_queue_size": 512}

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]


def _sh(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout


def _ours(lab: VSwitchGuestsLab) -> dict[str, object]:
    """What of this lab exists on the host: namespaces, taps anywhere, QEMU processes."""
    namespaces = [ns for ns in _sh("ip", "netns", "list").split()
                  if ns.startswith(f"vbnet-{lab.lab_id}-")]
    taps = [g.tap for g in lab.guests.values()
            if g.tap in _sh("ip", "-o", "link") or any(
                g.tap in _sh("ip", "-n", ns, "-o", "link") for ns in namespaces)]
    qemu = [p.name for p in Path("/proc").iterdir() if p.name.isdigit()
            and any(g.domain.encode() in _cmdline(p) for g in lab.guests.values())]
    return {"namespaces": namespaces, "taps": taps, "qemu": qemu}


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _transfer(state: object, workdir: Path) -> dict[str, float]:
    ctx = TrialContext(target=state.target, variant="v", knobs={}, workdir=workdir,  # type: ignore[attr-defined]
                       repetition=0, seed=1, services=state.services)  # type: ignore[attr-defined]
    result = QosTransfer(QosTransfer.Params(duration_s=2)).run(ctx)
    return {m.metric: m.value for m in result.measurements if m.value is not None}


def test_two_guests_on_both_switches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    lab = VSwitchGuestsLab(VSwitchGuestsParams(image_cache=CACHE, background_settle_s=0.2,
                                               dpdk_pmd_max_sleep_us=PMD_SLEEP_US),
                           tmp_path, LocalTarget())
    # Refused before anything starts, each naming its knob.
    assert any("knob nic_queues: 3 queues for 2 vCPU(s)" in p
               for p in lab.check_variant("bad", {**MQ, "nic_queues": 3}))
    assert any("knob nic_driver" in p and "/dev/vhost-net" in p
               for p in lab.check_variant("bad", {"nic_driver": "vhost"}))
    assert any("knob tx_queue_size" in p for p in lab.check_variant("bad", {"tx_queue_size": 512}))
    assert any("knob switch" in p for p in lab.check_variant("bad", {"switch": "vpp"}))
    assert lab.check_variant("ok", MQ) == []
    crashed = False
    try:
        lab.up()
        [manifest] = (tmp_path / "labs").glob("vbnet-*.json")
        recorded = json.loads(manifest.read_text())["objects"]["guest"][0]
        assert recorded["taps"] == [g.tap for g in lab.guests.values()]
        bridge = lab.enter("bridge", {**MQ, "switch": "linux-bridge", "background_mbps": 20})
        for role in ("srv", "cli"):
            seen = json.loads(bridge.notes[f"verified_{role}"])
            assert seen["qemu"]["queues"] == 2 and seen["qemu"]["mq"] is True
            assert seen["guest"]["combined"] == 2 and seen["guest"]["rx_ring"] == 512
            assert seen["guest"]["driver"] == "virtio_net"
            # offloads on but GRO off: the client's capture counts what its NIC received
            assert seen["guest"]["offloads"]["generic-receive-offload"] == "off"
            assert seen["guest"]["offloads"]["tcp-segmentation-offload"] == "on"
        path = bridge.services.get(ClientServerPath)
        assert (path.server_ip, path.client_ip, path.client_iface) == ("10.77.0.1", "10.77.0.2",
                                                                       "cli")
        ports = _sh("ip", "-n", lab.sw_ns, "-o", "link", "show", "master", "vbbr0")
        assert all(g.tap in ports for g in lab.guests.values())
        values = _transfer(bridge, tmp_path)
        assert values["throughput_mbps"] > 1 and values["capture_packets"] > 100
        assert "study_loss_pct" in values  # sent counted on the server guest's interface
        booted = bridge.notes["guests"]
        ovs = lab.enter("ovs", {**MQ, "switch": "ovs"})
        assert ovs.notes["guests"] == booted  # the same boot: only the taps moved
        assert ovs.services.get(VirtualSwitch).switch == "ovs"
        assert _transfer(ovs, tmp_path)["throughput_mbps"] > 1
        # OVS-DPDK: the second (and last) boot, the data NICs on vhost-user ports.
        dpdk = lab.enter("dpdk", {"switch": "ovs-dpdk"})
        assert "data NIC on vhost-user" in dpdk.notes["guests"]
        seen = json.loads(dpdk.notes["verified_cli"])
        assert seen["qemu"]["backend"] == "vhost-user" and seen["guest"]["driver"] == "virtio_net"
        assert seen["guest"]["offloads"]["generic-receive-offload"] == "off"
        assert "vhu-cli" in dpdk.notes["vhost-user"]
        assert _transfer(dpdk, tmp_path)["throughput_mbps"] > 1
        # A guest that lost its address: refused, naming the guest and its address.
        srv = lab.guests["srv"].target
        assert srv is not None
        srv.run(["ip", "addr", "flush", "dev", "srv"])
        with pytest.raises(VirtbenchError, match=r"guest srv lost its address 10\.77\.0\.1/24"):
            lab.enter("dpdk", {"switch": "ovs-dpdk"})
        assert _ours(lab)["qemu"]
        # The crash: nothing of down() runs; lab clean removes guests, taps, OVS, namespaces.
        lab.conn.close()
        summary = clean_leftovers(all_labs(), tmp_path / "labs")
        crashed = True  # from here lab clean has removed everything: down() has nothing left
        assert summary.complete, summary.events
        assert _ours(lab) == {"namespaces": [], "taps": [], "qemu": []}
        assert not Path(recorded["session"]).exists()
        assert not list((tmp_path / "labs").glob("*.json"))
    finally:
        if crashed:
            lab.manifest = None
        # A failure before the crash (a transfer under load, an assertion): down() removes the
        # guests, their libvirtd, the switch and namespaces, as a run's down() does.
        lab.down()


def test_a_taken_tap_name_is_refused_and_all_removed(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    lab = VSwitchGuestsLab(VSwitchGuestsParams(image_cache=CACHE), tmp_path, LocalTarget())
    taken = None
    try:
        lab.up()
        taken = lab.guests["srv"].tap
        subprocess.run(["ip", "tuntap", "add", "dev", taken, "mode", "tap"], check=True,
                       timeout=60)
        with pytest.raises(VirtbenchError, match=f"a network device {taken} already exists"):
            lab.enter("v", {})
    finally:
        lab.down()
        if taken is not None:
            subprocess.run(["ip", "link", "del", taken], check=False, timeout=60)
    assert _ours(lab) == {"namespaces": [], "taps": [], "qemu": []}
    assert not list((tmp_path / "labs").glob("*.json"))
