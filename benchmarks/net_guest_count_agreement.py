"""Do the guests' and the switch's counters count the same foreground packets? (issue 38)

The vswitch-guests lab: per switch, TRIALS runs of net.qos-transfer (server guest → client
guest, sent_count=counters as the lab's studies run it, irtt off so only the flow is on the
data NICs, receiver capture kept), with counters read just before and after each: the server
guest's tx counter, the switch's count of the flow (the host side of the guests' taps: a tap's
rx is what its guest sent, its tx what the client's QEMU read; on OVS and OVS-DPDK also
ovs-vswitchd's live port statistics and drop coverage counters), the client guest's rx counter
and the receiver capture's packets. One boot for the bridge and OVS with the lab's default
offloads, one for OVS-DPDK, one for the bridge and OVS with offloads off (MTU-sized frames,
no GRO in the client guest).
Run as root: `.venv/bin/python benchmarks/net_guest_count_agreement.py [TRIALS]`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import GUEST_SWITCHES, guest_switch_lab
from benchmarks.net_sent_count_agreement import DURATION_S, counted_transfer
from benchmarks.record import record
from virtbench.labs.net.guest_switch import VSwitchGuestsLab
from virtbench.labs.net.switches import OvsDpdk, OvsNetdev
from virtbench.model import VirtbenchError
from virtbench.targets.local import NetnsTarget
from virtbench.workloads.net.counters import link_counter

COLUMNS = ("srv tx", "srv port rx", "OVS srv rx", "OVS srv rx socket drops", "OVS cli tx", "OVS cli tx dropped",
           "cli port tx", "cli port tx dropped", "cli rx", "receiver capture")
"""Counters along the path, in its order: the server guest's tx counter, its tap's host side
(rx), OVS's live datapath statistics of the server's and the client's ports (with, on OVS
netdev, what the kernel dropped at ovs-vswitchd's receive socket of the server's tap), the client's tap
(tx, tx dropped), the client guest's rx counter, the receiver capture."""
_DPCTL_PORT = re.compile(r"port \d+: (\S+)")
"""Searched, not matched: a port whose stats OVS cannot read (an internal port moved into a
host's namespace) leaves ", could not retrieve stats (No such device)" before the next port."""
_DPCTL_STATS = re.compile(r"^\s*(RX|TX) packets:(\d+) errors:\S+ dropped:(\d+)")


def parse_dpctl_show(out: str) -> dict[str, dict[str, int]]:
    """Each port's rx/tx packets and drops from ``ovs-appctl dpctl/show -s``."""
    ports: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in out.splitlines():
        if port := _DPCTL_PORT.search(line):
            current = ports.setdefault(port[1], {})
        elif (stats := _DPCTL_STATS.match(line)) and current is not None:
            direction = stats[1].lower()
            current[direction] = int(stats[2])
            current[f"{direction} dropped"] = int(stats[3])
    return ports


def _ovs_port(lab: VSwitchGuestsLab, port: str) -> dict[str, int]:
    """Port ``port``'s packet counters, live from ovs-vswitchd (``dpctl/show -s``; the
    database's ``statistics`` column lags: ovs-vswitchd refreshes it every 5 s)."""
    assert isinstance(lab.switch, OvsNetdev | OvsDpdk)
    ctl = lab.switch.ovs.rundir / "ovs-vswitchd.ctl"
    out = lab.target.run(["ovs-appctl", f"--target={ctl}", "dpctl/show", "-s"]).stdout
    ports = parse_dpctl_show(out)
    if not ports.get(port):
        raise VirtbenchError(f"OVS datapath: no statistics of port {port} (ports: "
                             f"{', '.join(ports)})")
    return ports[port]


_COVERAGE = re.compile(r"^(\S+)\s.*total: (\d+)\s*$", re.M)


def _ovs_drop_events(lab: VSwitchGuestsLab) -> dict[str, int]:
    """ovs-vswitchd's coverage counters whose name says drop (totals so far; none: no OVS)."""
    if not isinstance(lab.switch, OvsNetdev | OvsDpdk):
        return {}
    ctl = lab.switch.ovs.rundir / "ovs-vswitchd.ctl"
    out = lab.target.run(["ovs-appctl", f"--target={ctl}", "coverage/show"]).stdout
    return {m[1]: int(m[2]) for m in _COVERAGE.finditer(out) if "drop" in m[1]}


def _counters(lab: VSwitchGuestsLab, switch: str) -> dict[str, Callable[[], int]]:
    srv, cli = lab.guests["srv"], lab.guests["cli"]
    srv_target, cli_target = srv.target, cli.target
    assert srv_target is not None and cli_target is not None
    sw = NetnsTarget(lab.sw_ns)
    out: dict[str, Callable[[], int]] = {
        "srv tx": lambda: link_counter(srv_target, srv.role, "tx"),
        "cli rx": lambda: link_counter(cli_target, cli.role, "rx"),
    }
    if switch != "ovs-dpdk":  # tap ports (vhost-user ports have no kernel device)
        out["srv port rx"] = lambda: link_counter(sw, srv.tap, "rx")
        out["cli port tx"] = lambda: link_counter(sw, cli.tap, "tx")
        out["cli port tx dropped"] = lambda: link_counter(sw, cli.tap, "tx", "dropped")
    if switch != "linux-bridge":
        srv_port, cli_port = ((srv.tap, cli.tap) if switch == "ovs" else ("vhu-srv", "vhu-cli"))
        out["OVS srv rx"] = lambda: _ovs_port(lab, srv_port)["rx"]
        out["OVS cli tx"] = lambda: _ovs_port(lab, cli_port)["tx"]
        out["OVS cli tx dropped"] = lambda: _ovs_port(lab, cli_port)["tx dropped"]
    if switch == "ovs":  # netdev datapath: AF_PACKET sockets on the taps
        assert isinstance(lab.switch, OvsNetdev)
        ovs = lab.switch.ovs
        out["OVS srv rx socket drops"] = lambda: ovs.rx_socket_drops().get(srv.tap, 0)
    return out


def _switch_rows(lab: VSwitchGuestsLab, root: Path, switch: str, trials: int,
                 offloads: str) -> list[str]:
    """TRIALS table rows of one switch."""
    rows = []
    state = lab.enter(switch, {"switch": switch, "background_mbps": 0})
    counters = _counters(lab, switch)
    for trial in range(trials):
        rep = 10 * GUEST_SWITCHES.index(switch) + trial
        drops_before = _ovs_drop_events(lab)
        result, counts = counted_transfer(state, root, rep, "counters", counters)
        drops = {name: total - drops_before.get(name, 0)
                 for name, total in _ovs_drop_events(lab).items()}
        values = {m.metric: m.value for m in result.measurements}
        iperf3 = json.loads(result.artifacts[0].content)
        cells = [f"{counts[c]:,}" if c in counts else "–" for c in COLUMNS]
        loss, dropped = values.get("study_loss_pct"), values.get("capture_dropped")
        rows.append(
            f"| {switch} | {offloads} | {trial + 1} | " + " | ".join(cells) + " | "
            + (f"{dropped:.0f}" if dropped is not None else "–") + " | "
            + (f"{loss:.3f} %" if loss is not None else "–") + " | "
            + f"{iperf3['end']['sum_sent'].get('retransmits', '–')} | "
            + (", ".join(f"{n} +{d}" for n, d in drops.items() if d) or
               ("none" if isinstance(lab.switch, OvsNetdev | OvsDpdk) else "–"))
            + " |")
        print(rows[-1], flush=True)
    if isinstance(lab.switch, OvsNetdev | OvsDpdk):  # errors OVS logged of its sends
        log = (lab.switch.ovs.rundir / "ovs-vswitchd.log").read_text(errors="replace")
        print(f"{switch}: ovs-vswitchd.log lines on sending or dropping:",
              *[line for line in log.splitlines()
                if re.search(r"error sending|drop", line, re.I)][-20:] or ["none"],
              sep="\n")
    return rows


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows: list[str] = []
    # Offloads on (the lab's default; OVS-DPDK has them off anyway), then off on the tap
    # switches: TSO super-frames and GRO in the client guest, or MTU-sized frames.
    for offloads, switches in ((True, GUEST_SWITCHES), (False, GUEST_SWITCHES[:2])):
        with guest_switch_lab(offloads) as (lab, root):
            for switch in switches:
                rows += _switch_rows(lab, root, switch, trials,
                                     "on" if offloads and switch != "ovs-dpdk" else "off")
    load = os.getloadavg()[0]
    body = "\n".join([
        f"{trials} trials of net.qos-transfer per switch ({DURATION_S} s TCP, server guest → "
        "client guest, irtt off, no background traffic, tcpdump receiver capture with snap "
        "length 96, sent_count=counters as the studies run it); packet counts over each trial. "
        "Guests: the vswitch-guests lab's two Debian guests under TCG (1 vCPU, 640 MiB, "
        "virtio-net, one queue; tap ports for the bridge and OVS, one boot with the lab's "
        "default offloads (on: TSO super-frames from the server guest, GRO in the client "
        "guest), vhost-user ports for OVS-DPDK with TSO/GSO/GRO/checksum off, a second boot; "
        "then the bridge and OVS again with the lab's param offloads=false, which turns them "
        "off in the guests too, a third boot). "
        "srv tx / cli rx: the guests' data NICs' stats64 packet counters; srv port rx / cli "
        "port tx (dropped): the host side of their taps (rx = what the server guest sent "
        "into the switch, tx = what the client guest's QEMU read from it); OVS srv rx / cli "
        "tx (dropped): ovs-vswitchd's live datapath port statistics (`ovs-appctl dpctl/show "
        "-s`; the tap ports on OVS, vhost-user ports vhu-srv/vhu-cli on OVS-DPDK); OVS srv rx "
        "socket drops: packets the kernel dropped at ovs-vswitchd's AF_PACKET receive socket "
        "of the server's tap because its receive buffer was full (`ss -0 -a -e -m -p`, skmem "
        "d; counted in the tap's rx, never seen by OVS, in no OVS counter; docs/net.md); receiver "
        "capture: packets in the "
        "client guest's capture (filter: tcp from the server's iperf3 port, so data and "
        "control connection); capture dropped: what tcpdump reported dropped; study loss: the workload's (srv tx − "
        "capture) / srv tx; TCP retransmits: iperf3's count at the sender; OVS drop events: "
        "ovs-vswitchd's coverage counters named *drop* that rose during the trial "
        "(`ovs-appctl coverage/show`). "
        f"Load average at the end: {load:.1f} (a machine shared with other jobs).", "",
        "| switch | offloads | trial | " + " | ".join(COLUMNS) + " | capture dropped | study loss | "
        "TCP retransmits | OVS drop events |",
        "|---|---|---|" + "---|" * (len(COLUMNS) + 4), *rows])
    print(body)
    record("net: guest packet count agreement",
           ".venv/bin/python benchmarks/net_guest_count_agreement.py", body)


if __name__ == "__main__":
    main()
