"""Does the background generator hold its configured rate within 2 %, measured at the receiver?

For every switch and rate of study 001, the vswitch lab starts its background flow; the
receiver's interface counters are read over a window and the UDP payload rate is computed as
(rx_bytes − rx_packets × 42) × 8 / window (42 = Ethernet + IPv4 + UDP header bytes).
Run as root: `.venv/bin/python benchmarks/net_background_rate.py`.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.net.background import UDP_IP_ETH_OVERHEAD
from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.targets.local import LocalTarget, NetnsTarget

SWITCHES = ("linux-bridge", "ovs", "ovs-dpdk")
RATES = (100.0, 150.0, 200.0)
WINDOW_S = 5.0


def counters(target: NetnsTarget, iface: str) -> tuple[int, int]:
    base = f"/sys/class/net/{iface}/statistics/"
    out = target.run(["cat", base + "rx_bytes", base + "rx_packets"]).stdout.split()
    return int(out[0]), int(out[1])


def main() -> None:
    rows = []
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="vbnet-bench-") as tmp:
        lab = VSwitchLab(VSwitchLab.Params(background_settle_s=1.0), Path(tmp), LocalTarget())
        try:
            lab.up()
            for switch in SWITCHES:
                for rate in RATES:
                    state = lab.enter(f"{switch}-{rate}", {"switch": switch,
                                                           "background_mbps": rate})
                    rx = NetnsTarget(state.services["background_receiver_ns"])
                    iface = state.services["background_receiver_iface"]
                    b0, p0 = counters(rx, iface)
                    t0 = time.monotonic()
                    time.sleep(WINDOW_S)
                    b1, p1 = counters(rx, iface)
                    dt = time.monotonic() - t0
                    payload_mbps = ((b1 - b0) - (p1 - p0) * UDP_IP_ETH_OVERHEAD) * 8 / dt / 1e6
                    err = 100.0 * (payload_mbps - rate) / rate
                    worst = max(worst, abs(err))
                    rows.append(f"| {switch} | {rate:g} | {payload_mbps:.2f} | {err:+.2f} % |")
                    lab.leave(f"{switch}-{rate}")
        finally:
            lab.down()
    verdict = "PASS" if worst <= 2.0 else "FAIL"
    body = (
        f"Receiver-side UDP payload rate over a {WINDOW_S:g} s window (interface counters minus "
        f"{UDP_IP_ETH_OVERHEAD} header bytes per packet), iperf3 -u -l 1400 pacing.\n\n"
        "| switch | configured Mbit/s | measured Mbit/s | error |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nWorst |error|: {worst:.2f} % (floor: ≤ 2 %): **{verdict}**\n"
    )
    print(body)
    record("net: background traffic rate", ".venv/bin/python benchmarks/net_background_rate.py",
           body)


if __name__ == "__main__":
    main()
