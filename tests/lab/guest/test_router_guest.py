"""The vnf-guests lab end to end: ONE boot of the TCG router guest and at most one neighbour
guest. net.router-throughput through the router with 0 and 1 neighbours (stress-ng in the
neighbour guest), the neighbour paused for a variant with fewer and resumed, not rebooted; a
net.packet-rate trial (a capacity search's trial) through the router; a router that stops
forwarding (an image without it) and one that lost its address refused by name; `virtbench
lab clean` after a crash removes guests, taps and namespaces. Needs root, mmdebstrap, QEMU,
iperf3, trafgen."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from images import cache_dir

from virtbench.labs.cleanup import clean_leftovers
from virtbench.labs.lab_contract import LabState
from virtbench.labs.net.router_guest import SIDES, VnfGuestsLab, VnfGuestsParams
from virtbench.model import VirtbenchError
from virtbench.plugins import all_labs
from virtbench.services import PacketPath, RouterPath
from virtbench.targets.libvirt_connection import libvirt_module
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.packet_rate import PacketRate
from virtbench.workloads.net.router import RouterThroughput
from virtbench.workloads.workload_contract import TrialContext

CACHE = str(cache_dir("virtbench-guest/net-image"))
RATE = 200  # frames/s

pytestmark = [pytest.mark.lab, pytest.mark.timeout(900)]


def _sh(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout


def _ours(lab: VnfGuestsLab) -> dict[str, list[str]]:
    """What of this lab exists on the host: namespaces, taps anywhere, QEMU processes."""
    namespaces = [ns for ns in _sh("ip", "netns", "list").split()
                  if ns.startswith(lab.prefix)]
    links = _sh("ip", "-o", "link") + "".join(_sh("ip", "-n", ns, "-o", "link")
                                              for ns in namespaces)
    taps = [tap for tap in lab.taps.values() if tap in links]
    qemu = [p.name for p in Path("/proc").iterdir() if p.name.isdigit()
            and lab.domain("").encode() in _cmdline(p)]
    return {"namespaces": namespaces, "taps": taps, "qemu": qemu}


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def _ctx(state: LabState, workdir: Path, variant: str) -> TrialContext:
    assert state.target is not None
    return TrialContext(target=state.target, variant=variant, knobs={}, workdir=workdir,
                        repetition=0, seed=1, services=state.services)


def _throughput(state: LabState, workdir: Path) -> dict[str, Any]:
    result = RouterThroughput(RouterThroughput.Params(duration_s=2)).run(
        _ctx(state, workdir, "v"))
    return {m.metric: m.value for m in result.measurements}


def _frames(state: LabState, workdir: Path) -> dict[str, float]:
    """One net.packet-rate trial through the router guest (the capacity search's trial):
    64 B frames at a rate the emulated router forwards even on a loaded machine (a few
    hundred frames/s here under TCG: docs/net.md)."""
    workload = PacketRate(PacketRate.Params(rate_pps=RATE, duration_s=1, frame_size=64,
                                            attempts=3))
    result = workload.run(_ctx(state, workdir, "frames"))
    return {m.metric: m.value or 0.0 for m in result.measurements if m.t is None}


def test_router_guest_with_a_neighbour_guest(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    lab = VnfGuestsLab(VnfGuestsParams(image_cache=CACHE, max_neighbours=1), tmp_path,
                       LocalTarget())
    # Refused before anything starts, naming the knob and the bound.
    assert any("knob neighbours = 2 exceeds the lab param max_neighbours = 1" in p
               for p in lab.check_variant("big", {"neighbours": 2}))
    assert lab.check_variant("ok", {"neighbours": 1}) == []
    paused = libvirt_module().VIR_DOMAIN_PAUSED
    try:
        n0 = lab.enter("n0", {"neighbours": 0})
        [manifest] = (tmp_path / "labs").glob("vbnet-*.json")
        recorded = json.loads(manifest.read_text())["objects"]["guest"][0]
        assert recorded["taps"] == list(lab.taps.values())
        assert "net.ipv4.ip_forward=1 read back (set)" in n0.notes["router"]
        assert lab.router is not None and lab.router.target is not None
        assert lab.router.target.run(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip() \
            == "1"
        # Each tap is its endpoint's interface, with the router's MAC pinned.
        for side in SIDES:
            ns, tap = lab.ns[side.end], lab.taps[side.nic]
            assert side.end_ip in _sh("ip", "-n", ns, "-4", "-o", "addr", "show", "dev", tap)
            assert "PERMANENT" in _sh("ip", "-n", ns, "neigh", "show", side.router_ip)
        path = n0.services.get(PacketPath)
        assert (path.next_hop_mac, path.sender_iface) == (SIDES[0].mac, lab.taps["left"])
        assert n0.services.get(RouterPath).neighbours == 0
        alone = _throughput(n0, tmp_path)
        assert alone["throughput_gbps"] > 0.001 and 0 < alone["cpu_busy_pct"] <= 100
        # One neighbour guest: booted, stress-ng running in it, throughput still measured.
        n1 = lab.enter("n1", {"neighbours": 1})
        [neighbour] = lab.neighbours
        assert neighbour.target is not None
        assert "stress-ng" in neighbour.target.run(["ps", "-eo", "comm"]).stdout
        assert n1.services.get(RouterPath).neighbours == 1
        beside = _throughput(n1, tmp_path)
        assert beside["throughput_gbps"] > 0.001
        # Fewer again: the neighbour is paused (a TCG guest paused uses no CPU), not removed.
        n0 = lab.enter("n0", {"neighbours": 0})
        assert lab.conn.lookupByName(neighbour.domain).state()[0] == paused
        assert neighbour.domain in n0.notes["neighbours"]
        frames = _frames(n0, tmp_path)
        print(f"router guest: {alone['throughput_gbps']:.3f} Gbit/s alone, "
              f"{beside['throughput_gbps']:.3f} beside a neighbour; 64 B frames {frames}")
        # Frames offered on the sender's tap cross the guest to the receiver's tap, and the
        # loss is the two counters' difference (how much is lost is the machine's load).
        assert frames["offered_pps"] > RATE / 2
        assert frames["received_pps"] > frames["offered_pps"] / 10
        assert frames["loss_ratio"] == pytest.approx(
            1 - frames["received_pps"] / frames["offered_pps"], abs=1e-9)
        # Back to one: resumed, the same guest (no second boot).
        lab.enter("n1", {"neighbours": 1})
        assert lab.neighbours == [neighbour]
        assert lab.conn.lookupByName(neighbour.domain).state()[0] != paused
        # A router that stops forwarding (an image without it) and one that lost an address.
        router = lab.router.target
        router.run(["sysctl", "-qw", "net.ipv4.ip_forward=0"])
        with pytest.raises(VirtbenchError, match=r"router guest does not forward IPv4: "
                                                 r"net\.ipv4\.ip_forward .* reads back 0"):
            lab.enter("n1", {"neighbours": 1})
        router.run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        router.run(["ip", "addr", "flush", "dev", "right"])
        with pytest.raises(VirtbenchError, match=r"router guest lost its address "
                                                 r"10\.78\.2\.1/24 on right"):
            lab.enter("n1", {"neighbours": 1})
        assert len(_ours(lab)["qemu"]) == 2
        # The crash: nothing of down() runs; lab clean removes guests, taps, namespaces.
        lab.conn.close()
        summary = clean_leftovers(all_labs(), tmp_path / "labs")
        lab.manifest = None  # removed by the clean: down() has nothing left to do
        assert summary.complete, summary.events
        assert _ours(lab) == {"namespaces": [], "taps": [], "qemu": []}
        assert not Path(recorded["session"]).exists()
        assert not list((tmp_path / "labs").glob("*.json"))
    finally:
        lab.down()
