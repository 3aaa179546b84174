"""Capture analysis speed: virtbench's pcap reader vs tshark on the same ~1 M packet capture.

Captures a real flood of small UDP packets between two namespaces of the vswitch lab (linux
bridge) with dumpcap (snap length 96, classic pcap), then times
``virtbench.net_qos.pcap.read_pcap`` + the study formulas, and ``tshark -q -z io,stat,0``,
and checks both report the same packet and byte counts.
Run as root: `.venv/bin/python benchmarks/net_capture_speed.py`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import linux_bridge_lab
from benchmarks.record import record
from virtbench.net_qos.pcap import read_pcap
from virtbench.net_qos.study import capture_qos
from virtbench.targets.local import NetnsTarget

PACKETS = 1_000_000


def make_capture(path: Path, workdir: Path) -> None:
    with linux_bridge_lab(workdir) as state:
        s = state.services
        cli, srv = state.target, NetnsTarget(s["server_ns"])
        dump = cli.spawn(["dumpcap", "-q", "-i", s["client_iface"], "-s", "96", "-P", "-B", "64",
                          "-f", "udp", "-c", str(PACKETS), "-a", "duration:60", "-w", str(path)])
        time.sleep(1.0)
        # iperf3 -R: the server floods the client with 64-byte UDP datagrams for up to 30 s
        sender = cli.spawn(["iperf3", "-c", s["server_ip"], "-p", str(s["iperf3_port"]), "-R",
                            "-u", "-b", "0", "-l", "64", "-t", "30"])
        dump.wait(90)
        sender.terminate()
        sender.wait(30)
        del srv


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="vbnet-bench-") as tmp:
        pcap = Path(tmp) / "flood.pcap"
        make_capture(pcap, Path(tmp))
        times = []
        cpu_times = []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            records = read_pcap(pcap)
            capture_qos(records.ts_ns, records.orig_len)
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
        ours = min(times)
        ours_cpu = min(cpu_times)
        t0 = time.perf_counter()
        out = subprocess.run(["tshark", "-r", str(pcap), "-q", "-z", "io,stat,0"],
                             capture_output=True, text=True, check=True).stdout
        tshark_s = time.perf_counter() - t0
        match = re.search(r"<>\s*[\d.]+\s*\|\s*(\d+)\s*\|\s*(\d+)", out)
        assert match, out
        t_packets, t_bytes = int(match.group(1)), int(match.group(2))
        size_mb = pcap.stat().st_size / 1e6
    same = (records.packets, records.bytes) == (t_packets, t_bytes)
    rate = records.packets / ours
    ok = same and rate >= 1_000_000 and tshark_s / ours >= 10
    verdict = "PASS" if ok else "FAIL"
    body = (
        f"Capture: {records.packets:,} packets, {size_mb:.0f} MB (dumpcap -s 96 -P, UDP flood "
        "between lab namespaces).\n\n"
        "| tool | time | packets/s | packets | bytes |\n|---|---|---|---|---|\n"
        f"| virtbench read_pcap + study formulas (best of 3) | {ours:.3f} s | {rate:,.0f} | "
        f"{records.packets:,} | {records.bytes:,} |\n"
        f"| tshark -q -z io,stat,0 | {tshark_s:.2f} s | {t_packets / tshark_s:,.0f} | "
        f"{t_packets:,} | {t_bytes:,} |\n\n"
        f"CPU time of our reader (best of 3): {ours_cpu:.3f} s = "
        f"{records.packets / ours_cpu:,.0f} packets per CPU-second. Load average while "
        f"measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared machine).\n\n"
        f"Same counts as tshark: {same}. Speed-up vs tshark: {tshark_s / ours:.1f}×. "
        f"Floors: ≥ 1,000,000 packets/s, same counts, ≥ 10× tshark: **{verdict}**\n"
    )
    print(body)
    record("net: capture analysis speed", ".venv/bin/python benchmarks/net_capture_speed.py",
           body)


if __name__ == "__main__":
    main()
