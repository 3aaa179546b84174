"""iperf3 ``-J`` (JSON) output: throughput, TCP retransmissions, UDP jitter and loss, CPU use."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from virtbench.model import Better, Domain, Measurement, Metric
from virtbench.parsers.base import ParseError, Parser

__all__ = ["IPERF3_METRICS", "PARSERS", "Iperf3Result", "parse_iperf3", "parse_iperf3_json"]

IPERF3_METRICS = (
    Metric("throughput_mbps", "Mbit/s", Better.HIGHER,
           "iperf3 goodput at the receiver: payload bits received / test seconds / 10^6 "
           "(end.sum_received.bits_per_second)", primary=True),
    Metric("sender_throughput_mbps", "Mbit/s", Better.HIGHER,
           "payload bits the sender wrote / test seconds / 10^6 (end.sum_sent)"),
    Metric("tcp_retransmits", "segments", Better.LOWER,
           "TCP segments the sender retransmitted during the test (end.sum_sent.retransmits)"),
    Metric("udp_jitter_ms", "ms", Better.LOWER,
           "iperf3's UDP jitter at the receiver (RFC 3550 smoothed interarrival jitter), ms"),
    Metric("udp_loss_pct", "%", Better.LOWER,
           "UDP datagrams lost, from iperf3 sequence numbers: lost / sent × 100"),
    Metric("cpu_sender_pct", "%", Better.LOWER,
           "iperf3 process CPU use on the sending host (user+system, % of one core)",
           domain=Domain.POSITIVE),
    Metric("cpu_receiver_pct", "%", Better.LOWER,
           "iperf3 process CPU use on the receiving host (user+system, % of one core)",
           domain=Domain.POSITIVE),
)


@dataclass(frozen=True)
class Iperf3Result:
    """One iperf3 test. Rates in bit/s, durations in s, CPU in % (iperf3's own accounting)."""

    protocol: str
    reverse: bool
    seconds: float
    receiver_bps: float
    sender_bps: float
    sent_bytes: int
    received_bytes: int
    retransmits: int | None
    udp_jitter_ms: float | None
    udp_lost_packets: int | None
    udp_packets: int | None
    cpu_sender_pct: float | None
    cpu_receiver_pct: float | None


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            raise ParseError(f"iperf3 JSON: missing field '{'.'.join(path)}'")
        d = d[key]
    return d


def parse_iperf3_json(text: str) -> Iperf3Result:
    """Parse the output of ``iperf3 -J`` (client side)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"iperf3: not JSON output of 'iperf3 -J' ({exc})") from exc
    if not isinstance(doc, dict):
        raise ParseError("iperf3: expected a JSON object")
    if doc.get("error"):
        raise ParseError(f"iperf3 reported an error: {doc['error']}")
    test = _get(doc, "start", "test_start")
    protocol = str(test.get("protocol", "TCP"))
    reverse = bool(test.get("reverse", 0))
    end = _get(doc, "end")
    sent = _get(end, "sum_sent")
    received = _get(end, "sum_received")
    cpu = end.get("cpu_utilization_percent") or {}
    # host_* is this (client) process; remote_* the server. -R makes the server the sender.
    host_cpu = cpu.get("host_total")
    remote_cpu = cpu.get("remote_total")
    cpu_sender, cpu_receiver = (remote_cpu, host_cpu) if reverse else (host_cpu, remote_cpu)
    udp = end.get("sum") if protocol == "UDP" else None
    return Iperf3Result(
        protocol=protocol,
        reverse=reverse,
        seconds=float(received.get("seconds", sent.get("seconds", 0.0))),
        receiver_bps=float(_get(received, "bits_per_second")),
        sender_bps=float(_get(sent, "bits_per_second")),
        sent_bytes=int(_get(sent, "bytes")),
        received_bytes=int(_get(received, "bytes")),
        retransmits=int(sent["retransmits"]) if "retransmits" in sent else None,
        udp_jitter_ms=float(udp["jitter_ms"]) if udp and "jitter_ms" in udp else None,
        udp_lost_packets=int(udp["lost_packets"]) if udp and "lost_packets" in udp else None,
        udp_packets=int(udp["packets"]) if udp and "packets" in udp else None,
        cpu_sender_pct=float(cpu_sender) if cpu_sender is not None else None,
        cpu_receiver_pct=float(cpu_receiver) if cpu_receiver is not None else None,
    )


def iperf3_measurements(result: Iperf3Result) -> list[Measurement]:
    out = [
        Measurement("throughput_mbps", result.receiver_bps / 1e6),
        Measurement("sender_throughput_mbps", result.sender_bps / 1e6),
    ]
    if result.retransmits is not None:
        out.append(Measurement("tcp_retransmits", float(result.retransmits)))
    if result.udp_jitter_ms is not None:
        out.append(Measurement("udp_jitter_ms", result.udp_jitter_ms))
    if result.udp_packets:
        out.append(Measurement("udp_loss_pct",
                               100.0 * (result.udp_lost_packets or 0) / result.udp_packets))
    if result.cpu_sender_pct is not None:
        out.append(Measurement("cpu_sender_pct", result.cpu_sender_pct))
    if result.cpu_receiver_pct is not None:
        out.append(Measurement("cpu_receiver_pct", result.cpu_receiver_pct))
    return out


def parse_iperf3(text: str) -> list[Measurement]:
    return iperf3_measurements(parse_iperf3_json(text))


PARSERS = (
    Parser("iperf3", "iperf3 -J output (TCP or UDP, normal or -R)", IPERF3_METRICS, parse_iperf3),
)
