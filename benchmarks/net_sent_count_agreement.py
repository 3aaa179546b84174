"""Do the sender's tx counter and the packet captures count the same foreground packets?

Per switch: net.qos-transfer with sent_count=capture (a tcpdump at the sender too) while the
server interface's tx counter is read around it (irtt off, so the counter has only the flow);
then the same with captures stopped the naive way (SIGINT at once, no wait for the ring's last
block), which is what the capture code did before.
Run as root: `.venv/bin/python benchmarks/net_sent_count_agreement.py`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.net_qos.pcap import read_pcap
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.workloads.net import capture as capture_module
from virtbench.workloads.net.counters import tx_packets
from virtbench.workloads.net.qos_transfer import QosTransfer
from virtbench.workloads.workload_contract import TrialContext

DURATION_S = 3


def _trial(state: object, workdir: Path, rep: int) -> tuple[int, int, int]:
    """(tx counter, sender capture, receiver capture) packets of one transfer."""
    services = state.services  # type: ignore[attr-defined]
    server = NetnsTarget(services["server_ns"])
    ctx = TrialContext(target=state.target, variant="b", knobs={},  # type: ignore[attr-defined]
                       workdir=workdir, repetition=rep, seed=1, services=services)
    before = tx_packets(server, services["server_iface"])
    QosTransfer(QosTransfer.Params(duration_s=DURATION_S, probe=False, sent_count="capture",
                                   keep_pcaps=True)).run(ctx)
    after = tx_packets(server, services["server_iface"])
    sent = read_pcap(workdir / f"r{rep}-sender.pcap").packets
    received = read_pcap(workdir / f"r{rep}-receiver.pcap").packets
    return after - before, sent, received


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="vbnet-count-") as tmp:
        lab = VSwitchLab(None, Path(tmp), LocalTarget())
        try:
            lab.up()
            for rep, switch in enumerate(("linux-bridge", "ovs", "ovs-dpdk")):
                state = lab.enter(switch, {"switch": switch, "background_mbps": 0})
                counted = _trial(state, Path(tmp), rep)
                drain = capture_module.Capture._drain
                capture_module.Capture._drain = lambda self: None  # type: ignore[method-assign]
                try:
                    naive = _trial(state, Path(tmp), 10 + rep)
                finally:
                    capture_module.Capture._drain = drain  # type: ignore[method-assign]
                for how, (tx, sent, received) in (("waits for the ring", counted),
                                                  ("stops at once", naive)):
                    rows.append(f"| {switch} | {how} | {tx:,} | {sent:,} | {received:,} | "
                                f"{100 * (tx - received) / tx:.3f} % |")
        finally:
            lab.down()
    body = (f"{DURATION_S} s TCP transfers, tcpdump captures (snap length 96), irtt off; tx "
            "counter = the server interface's stats64.tx.packets over the trial. 'stops at "
            "once' interrupts tcpdump without waiting for its last ring block, as the capture "
            "code did before; the last column is what the studies' loss formula then reports."
            "\n\n| switch | capture stop | tx counter | sender capture | receiver capture | "
            "(tx − received) / tx |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(body)
    record("net: sent-packet count agreement",
           ".venv/bin/python benchmarks/net_sent_count_agreement.py", body)


if __name__ == "__main__":
    main()
