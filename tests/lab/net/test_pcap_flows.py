"""`virtbench parse pcap` per flow against tshark on a capture of two simultaneous real flows:
two namespaces joined by a veth, iperf3 UDP and an iperf3 TCP transfer at once, tcpdump
capturing in the receiving namespace."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from virtbench.net_qos.capture_scan import scan_capture
from virtbench.net_qos.flows import FlowStats, capture_flows, parse_flow_spec, select_flows
from virtbench.net_qos.pcap import read_pcap

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]

A, B = f"vbpf{os.getpid()}a", f"vbpf{os.getpid()}b"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def _two_namespaces() -> Iterator[None]:
    try:
        _ip("netns", "add", A)
        _ip("netns", "add", B)
        _ip("link", "add", A, "type", "veth", "peer", "name", B)
        for ns, addr in ((A, "10.96.0.1/24"), (B, "10.96.0.2/24")):
            _ip("link", "set", ns, "netns", ns)
            _ip("-n", ns, "addr", "add", addr, "dev", ns)
            _ip("-n", ns, "link", "set", ns, "up")
        yield
    finally:
        for ns in (A, B):
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                      text=True, timeout=60).stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGTERM)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)


def _in(ns: str, *argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def two_flow_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pcap") / "two_flows.pcap"
    with _two_namespaces():
        servers = [_in(A, "iperf3", "-s", "-1", "-p", port) for port in ("5301", "5302")]
        dump = _in(B, "tcpdump", "-i", B, "-s", "96", "-w", str(path),
                   "port 5301 or port 5302")
        time.sleep(1.0)
        clients = [_in(B, "iperf3", "-c", "10.96.0.1", "-p", "5302", "-u", "-b", "2M", "-l",
                       "500", "-t", "2"),
                   _in(B, "iperf3", "-c", "10.96.0.1", "-p", "5301", "-R", "-n", "3M")]
        for c in clients:
            assert c.wait(60) == 0, c.stderr.read() if c.stderr else ""
        time.sleep(1.5)  # tcpdump hands over a ring block after at most 1 s
        dump.send_signal(signal.SIGINT)
        dump.wait(30)
        for s in servers:
            s.wait(30)
    return path


def _readers(path: Path) -> list[list[FlowStats]]:
    """The flows of the per-packet reader (the labs') and of the one-pass scanner (the
    command's)."""
    return [capture_flows(read_pcap(path)), scan_capture(path).flows]


def test_every_flow_matches_tshark(two_flow_capture: Path, tshark_flows: Any) -> None:
    for flows in _readers(two_flow_capture):
        ours = {(f.flow.proto, f.flow.src, f.flow.sport, f.flow.dst, f.flow.dport):
                [f.packets, f.bytes, f.first_ns, f.last_ns] for f in flows}
        assert ours == tshark_flows(two_flow_capture)
    assert {k[0] for k in ours} == {"tcp", "udp"}
    assert max(v[0] for k, v in ours.items() if k[0] == "udp") > 500  # 2 s of 500 packets/s


@pytest.mark.parametrize(("spec", "display_filter"), [
    ("udp", "udp"), ("tcp:5301", "tcp.port == 5301"), ("udp:5302", "udp.port == 5302"),
    ("tcp:10.96.0.1:5301:10.96.0.2:*", "ip.src == 10.96.0.1 && tcp.srcport == 5301"),
])
def test_flow_selection_matches_tshark(two_flow_capture: Path, tshark_flows: Any, spec: str,
                                       display_filter: str) -> None:
    for path in (two_flow_capture, _as_pcapng(two_flow_capture)):
        for flows in _readers(path):
            chosen = select_flows(flows, parse_flow_spec(spec))
            ours = {(f.flow.proto, f.flow.src, f.flow.sport, f.flow.dst, f.flow.dport):
                    [f.packets, f.bytes, f.first_ns, f.last_ns] for f in chosen}
            assert ours and ours == tshark_flows(path, display_filter)


def test_command_reports_the_received_udp_flow(two_flow_capture: Path,
                                               tshark_flows: Any) -> None:
    out = subprocess.run([sys.executable, "-m", "virtbench.cli", "parse", "pcap",
                          str(two_flow_capture), "--flow", "udp:10.96.0.2:*:10.96.0.1:5302",
                          "--json"], capture_output=True, text=True, check=True, timeout=300).stdout
    rows = {r["metric"]: r["value"] for r in json.loads(out)}
    [(packets, nbytes, first, last)] = tshark_flows(
        two_flow_capture, "ip.dst == 10.96.0.1 && udp.dstport == 5302").values()
    assert (rows["packets"], rows["bytes"]) == (packets, nbytes)
    assert rows["capture_s"] == pytest.approx((last - first) / 1e9, abs=1e-9)
    assert rows["study_throughput_mbps"] == pytest.approx(nbytes * 8 / (last - first) * 1e3)
    assert rows["study_delay_ms"] == pytest.approx((last - first) / (packets - 1) / 1e6)


def _as_pcapng(path: Path) -> Path:
    out = path.with_suffix(".pcapng")
    if not out.exists():
        subprocess.run(["editcap", "-F", "pcapng", str(path), str(out)], check=True, timeout=300)
    return out
