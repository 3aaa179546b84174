"""Which part of the QoS instrumentation costs TCP throughput through the Linux bridge.

Rotates iperf3 alone, + a receiver capture with tcpdump, + one with dumpcap, + tcpdump at
receiver and sender (the studies' two taps), + irtt probes only, in the vswitch lab (same flow,
same path); records the mean throughput of each and the CPU time the capture programs used.
Run as root: `.venv/bin/python benchmarks/net_instrumentation_breakdown.py [ROUNDS]`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import linux_bridge_lab
from benchmarks.record import record
from virtbench.labs.lab_contract import LabState
from virtbench.parsers.iperf3 import parse_iperf3_json
from virtbench.targets.local import NetnsTarget
from virtbench.workloads.net.capture import Capture, CaptureTool

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
DURATION_S = 4
# configuration → capture taps as (tool, at the sender?); irtt is a separate flag
CONFIGS: dict[str, tuple[list[tuple[CaptureTool, bool]], bool]] = {
    "iperf3 alone": ([], False),
    "+ receiver capture, tcpdump": ([("tcpdump", False)], False),
    "+ receiver capture, dumpcap": ([("dumpcap", False)], False),
    "+ receiver and sender capture, tcpdump": ([("tcpdump", False), ("tcpdump", True)], False),
    "+ irtt probes only (10 ms)": ([], True),
}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _trial(state: LabState, workdir: Path, taps: list[tuple[CaptureTool, bool]],
           irtt: bool) -> tuple[float, float]:
    """Throughput (Mbit/s) of one transfer and the CPU seconds its capture programs used."""
    s = state.services
    client, server = state.target, NetnsTarget(s["server_ns"])
    assert client is not None
    bpf = f"tcp and src host {s['server_ip']} and src port {s['iperf3_port']}"
    captures = [Capture(server if at_sender else client,
                        s["server_iface"] if at_sender else s["client_iface"],
                        workdir / f"cap{i}.pcap", 96, bpf, tool)
                for i, (tool, at_sender) in enumerate(taps)]
    for cap in captures:
        cap.start()
    probe = (client.spawn(["irtt", "client", "-i", "10ms", "-d", f"{DURATION_S}s", "-Q",
                           f"{s['server_ip']}:{s['irtt_port']}"], stdout=subprocess.DEVNULL)
             if irtt else None)
    res = client.run(["iperf3", "-c", s["server_ip"], "-p", str(s["iperf3_port"]), "-R",
                      "-t", str(DURATION_S), "-J"], timeout=DURATION_S + 60)
    if probe is not None:
        probe.wait(DURATION_S + 30)
    cpu = 0.0
    for cap in captures:
        assert cap.popen is not None
        cpu += _cpu_seconds(cap.popen.pid)  # before stop: the drain wait is not transfer time
        cap.stop()
        cap.discard()
    return parse_iperf3_json(res.stdout).receiver_bps / 1e6, cpu


def main() -> None:
    tput: dict[str, list[float]] = {name: [] for name in CONFIGS}
    cpu: dict[str, list[float]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="vbnet-cost-") as tmp, \
            linux_bridge_lab(Path(tmp)) as state:
        for _ in range(ROUNDS):
            for name, (taps, irtt) in CONFIGS.items():
                mbps, cpu_s = _trial(state, Path(tmp), taps, irtt)
                tput[name].append(mbps)
                cpu[name].append(cpu_s)
    alone = tput["iperf3 alone"]
    base = statistics.mean(alone)

    def half_width(v: list[float]) -> float:
        """Normal-approximation 95 % half-width of the cost, in % of the alone mean."""
        se = (statistics.variance(alone) / len(alone) + statistics.variance(v) / len(v)) ** 0.5
        return 100 * 1.96 * se / base

    rows = [f"| {name} | {statistics.mean(v):,.0f} | {statistics.stdev(v):,.0f} | "
            f"{100 * (base - statistics.mean(v)) / base:+.1f} ± {half_width(v):.1f} % | "
            f"{statistics.mean(cpu[name]):.3f} |" for name, v in tput.items()]
    body = (f"Linux bridge, {DURATION_S} s TCP transfers, {ROUNDS} rounds of the configurations "
            "in turn; 2 cores, both saturated by iperf3. Captures: snap length 96, BPF on the "
            "flow, classic pcap. Capture CPU = user + system seconds of the capture processes "
            "during the transfer (/proc/PID/stat); kernel work in softirq is not in it. Cost ± "
            "the 95 % half-width (normal approximation): throughput here varies by ~10 % from "
            "run to run, so only the capture CPU separates the tools clearly at this size.\n\n"
            "| configuration | mean Mbit/s | sd | cost vs alone | capture CPU s |\n"
            "|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(body)
    record("net: instrumentation cost by component",
           ".venv/bin/python benchmarks/net_instrumentation_breakdown.py", body)


if __name__ == "__main__":
    main()
