"""What does an emulated guest cost on the switch? Guest-to-guest TCP (the vswitch-guests lab's
client and server guests, TCG here) as a ratio to namespace-to-namespace TCP (the lab's
background pair) through the same switch, in the same run, alternating. Floor (issue 38):
measured and recorded; on a KVM host the same command gives study 001's VM table.
Run: `.venv/bin/python benchmarks/net_guest_tcp.py [ROUNDS]` (root; mmdebstrap, QEMU, OVS).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import GUEST_SWITCHES, guest_switch_lab
from benchmarks.record import record
from virtbench.labs.net.background import BACKGROUND_PORT
from virtbench.labs.net.vswitch import FOREGROUND_PORT
from virtbench.targets.local import NetnsTarget
from virtbench.targets.target_contract import Target

DURATION_S = 3


def _mbps(target: Target, server: str, port: int) -> float:
    out = target.run(["iperf3", "-c", server, "-p", str(port), "-R", "-t", str(DURATION_S),
                      "-J"], timeout=DURATION_S + 60).stdout
    return float(json.loads(out)["end"]["sum_received"]["bits_per_second"]) / 1e6


def _spread(values: list[float], digits: int = 1) -> str:
    return (f"{statistics.median(values):.{digits}f} (min {min(values):.{digits}f}, "
            f"max {max(values):.{digits}f})")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows = []
    with guest_switch_lab() as (lab, _):
        for switch in GUEST_SWITCHES:
            state = lab.enter(switch, {"switch": switch, "background_mbps": 0})
            assert state.target is not None
            bgs = NetnsTarget(lab.hosts["bgs"].namespace)
            guest, netns = [], []
            for _ in range(rounds):  # alternating, the background off
                guest.append(_mbps(state.target, lab.guests["srv"].address, FOREGROUND_PORT))
                netns.append(_mbps(bgs, lab.hosts["bgr"].address, BACKGROUND_PORT))
            ratios = [g / n for g, n in zip(guest, netns, strict=True)]
            rows.append(f"| {switch} | {_spread(guest)} | {_spread(netns)} | "
                        f"{_spread(ratios, 4)} |")
    load = os.getloadavg()[0]
    body = "\n".join([
        f"iperf3 TCP, {DURATION_S} s per transfer (server sends, `-R`), {rounds} rounds per "
        "switch alternating guest pair and namespace pair through the same switch, no "
        "background traffic. Guests: the vswitch-guests lab's two Debian guests under TCG "
        "(1 vCPU, 640 MiB, virtio-net, one queue: tap ports with QEMU's userspace backend on "
        "the bridge and OVS, vhost-user ports with GRO off on OVS-DPDK, which has its PMD on "
        "one of the 2 CPUs, pmd-maxsleep 500 us); namespaces: the lab's background pair (veth "
        "on the bridge, internal ports on OVS, af_packet ports with offloads off on "
        "OVS-DPDK). The OVS-DPDK guests are a second boot. "
        "Ratio = guest Mbit/s / namespace Mbit/s of the same round (lower: the emulation's "
        f"cost). Load average at the end: {load:.1f} (a machine shared with other jobs).", "",
        "| switch | guest → guest, Mbit/s | namespace → namespace, Mbit/s | ratio |",
        "|---|---|---|---|", *rows])
    print(body)
    record("net: guest-to-guest TCP under TCG vs namespaces",
           ".venv/bin/python benchmarks/net_guest_tcp.py", body)


if __name__ == "__main__":
    main()
