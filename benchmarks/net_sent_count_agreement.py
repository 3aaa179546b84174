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
from collections.abc import Callable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.lab_contract import LabState
from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.net_qos.pcap import read_pcap
from virtbench.services import ClientServerPath
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net import capture as capture_module
from virtbench.workloads.net.counters import tx_packets
from virtbench.workloads.net.qos_transfer import QosTransfer
from virtbench.workloads.workload_contract import TrialContext, TrialResult

DURATION_S = 3


def counted_transfer(state: LabState, workdir: Path, rep: int, sent_count: str,
                     counters: Mapping[str, Callable[[], int]]
                     ) -> tuple[TrialResult, dict[str, int]]:
    """One net.qos-transfer (irtt off, captures kept) with ``counters`` read just before and
    after it: the workload's result, and each counter's increase plus the captures' packets
    ("sender capture" with sent_count=capture, "receiver capture")."""
    assert state.target is not None
    ctx = TrialContext(target=state.target, variant="b", knobs={}, workdir=workdir,
                       repetition=rep, seed=1, services=state.services)
    before = {name: read() for name, read in counters.items()}
    result = QosTransfer(QosTransfer.Params(duration_s=DURATION_S, probe=False,
                                            sent_count=sent_count, keep_pcaps=True)).run(ctx)
    counts = {name: read() - before[name] for name, read in counters.items()}
    if sent_count == "capture":
        counts["sender capture"] = read_pcap(workdir / f"r{rep}-sender.pcap").packets
    counts["receiver capture"] = read_pcap(workdir / f"r{rep}-receiver.pcap").packets
    return result, counts


def _trial(state: LabState, workdir: Path, rep: int) -> tuple[int, int, int]:
    """(tx counter, sender capture, receiver capture) packets of one transfer."""
    path = state.services.get(ClientServerPath)
    _, counts = counted_transfer(state, workdir, rep, "capture", {
        "tx": lambda: tx_packets(path.server_target, path.server_iface)})
    return counts["tx"], counts["sender capture"], counts["receiver capture"]


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
