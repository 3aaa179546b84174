"""iperf3 and irtt parsers on real outputs captured here (tests/data)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from virtbench.parsers.iperf3 import parse_iperf3, parse_iperf3_json
from virtbench.parsers.irtt import parse_irtt, parse_irtt_json
from virtbench.parsers.parser_contract import ParseError

DATA = Path(__file__).resolve().parents[2] / "data"


def test_iperf3_tcp_reverse() -> None:
    r = parse_iperf3_json((DATA / "iperf3" / "tcp_reverse_veth.json").read_text())
    assert r.protocol == "TCP" and r.reverse
    assert r.receiver_bps == pytest.approx(20935512499, rel=1e-6)
    assert r.retransmits == 2252
    # with -R the server sends: the sender's CPU is iperf3's "remote" figure
    assert r.cpu_sender_pct == pytest.approx(93.896, abs=1e-3)


def test_iperf3_tcp_forward_metrics() -> None:
    ms = {m.metric: m.value for m in parse_iperf3(
        (DATA / "iperf3" / "tcp_forward_veth.json").read_text())}
    assert ms["throughput_mbps"] == pytest.approx(21259.44, abs=0.01)
    assert ms["tcp_retransmits"] == 2765
    assert "udp_jitter_ms" not in ms


def test_iperf3_udp() -> None:
    ms = {m.metric: m.value for m in parse_iperf3(
        (DATA / "iperf3" / "udp_50M_veth.json").read_text())}
    assert ms["udp_jitter_ms"] == pytest.approx(0.02738, abs=1e-5)
    assert ms["udp_loss_pct"] == 0.0
    assert ms["throughput_mbps"] == pytest.approx(50, rel=0.01)


def test_iperf3_errors() -> None:
    with pytest.raises(ParseError, match="unable to connect"):
        parse_iperf3(json.dumps({"start": {}, "intervals": [], "end": {},
                                 "error": "unable to connect to server"}))
    with pytest.raises(ParseError, match="no JSON object"):
        parse_iperf3("Connecting to host 10.0.0.1, port 5201")
    with pytest.raises(ParseError, match="sum_sent"):
        parse_iperf3(json.dumps({"start": {"test_start": {}}, "end": {}}))


def test_irtt() -> None:
    r = parse_irtt_json((DATA / "irtt" / "client_10ms_1s_veth.json").read_text())
    assert r.packets_sent == r.packets_received > 90
    assert r.loss_pct == 0.0
    assert r.server_packets_received == 97  # the replies the server sent, for the tx counter
    assert r.rtt_median_ms is not None and r.rtt_mean_ms is not None
    assert 0 < r.rtt_median_ms <= r.rtt_mean_ms * 2
    assert r.jitter_up_ms is not None and r.jitter_up_ms > 0
    names = {m.metric for m in parse_irtt((DATA / "irtt" / "client_10ms_1s_veth.json").read_text())}
    assert {"rtt_mean_ms", "one_way_delay_up_ms", "rfc3550_jitter_down_ms"} <= names


def test_irtt_errors() -> None:
    with pytest.raises(ParseError, match="stats"):
        parse_irtt(json.dumps({"version": {}}))
    with pytest.raises(ParseError, match="no packets"):
        parse_irtt(json.dumps({"stats": {"packets_sent": 0}}))


@pytest.mark.parametrize(("tool", "path"), [("iperf3", "iperf3/tcp_20M_veth.json"),
                                            ("irtt", "irtt/client_10ms_1s_veth.json")])
def test_cli_parse(tool: str, path: str) -> None:
    out = subprocess.run([sys.executable, "-m", "virtbench", "parse", tool, str(DATA / path)],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0 and "No module named" in out.stderr:
        pytest.skip("virtbench is not runnable as a module")
    assert out.returncode == 0, out.stderr
    assert ("throughput_mbps" if tool == "iperf3" else "rtt_mean_ms") in out.stdout
