"""irtt client JSON (``irtt client -o FILE``): RTT, one-way delays, IPDV, loss, RFC 3550 jitter.

irtt reports durations in ns; everything here is converted to ms. One-way delays are only
meaningful when client and server share a clock (same machine, or PTP-synchronised hosts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from virtbench.model import Better, Measurement, Metric
from virtbench.net_qos.rfc3550 import rfc3550_jitter_ns
from virtbench.parsers.base import ParseError, Parser

__all__ = ["IRTT_METRICS", "PARSERS", "IrttResult", "parse_irtt", "parse_irtt_json"]

IRTT_METRICS = (
    Metric("rtt_mean_ms", "ms", Better.LOWER,
           "mean round-trip time of irtt probes (client send → client receive), ms", primary=True),
    Metric("rtt_median_ms", "ms", Better.LOWER, "median irtt round-trip time, ms"),
    Metric("one_way_delay_up_ms", "ms", Better.LOWER,
           "mean one-way delay client → server (server receive − client send wall clock), ms"),
    Metric("one_way_delay_down_ms", "ms", Better.LOWER,
           "mean one-way delay server → client (client receive − server send wall clock), ms"),
    Metric("ipdv_rtt_ms", "ms", Better.LOWER,
           "mean absolute IPDV (RFC 3393: |RTT_i − RTT_{i−1}| of consecutive probes), ms"),
    Metric("rfc3550_jitter_up_ms", "ms", Better.LOWER,
           "RFC 3550 interarrival jitter of probes client → server (J += (|D| − J)/16), ms"),
    Metric("rfc3550_jitter_down_ms", "ms", Better.LOWER,
           "RFC 3550 interarrival jitter of replies server → client, ms"),
    Metric("probe_loss_pct", "%", Better.LOWER,
           "irtt probes without a reply, from sequence numbers: lost / sent × 100"),
)


@dataclass(frozen=True)
class IrttResult:
    """Summary of one irtt run (ms, %, counts)."""

    rtt_mean_ms: float
    rtt_median_ms: float
    send_delay_ms: float
    receive_delay_ms: float
    ipdv_rtt_ms: float | None
    jitter_up_ms: float | None
    jitter_down_ms: float | None
    packets_sent: int
    packets_received: int
    loss_pct: float
    server_packets_received: int | None = None
    """Probes the server received (and answered); None when the server did not report it."""


def _stat_ms(stats: dict[str, Any], name: str, field: str = "mean") -> float:
    try:
        return float(stats[name][field]) / 1e6
    except (KeyError, TypeError) as exc:
        raise ParseError(f"irtt JSON: missing 'stats.{name}.{field}'") from exc


def _jitters(round_trips: list[Any]) -> tuple[float | None, float | None]:
    rows = []
    for rt in round_trips:
        if rt.get("lost") != "false":
            continue
        ts = rt["timestamps"]
        rows.append((ts["client"]["send"]["wall"], ts["server"]["receive"]["wall"],
                     ts["server"]["send"]["wall"], ts["client"]["receive"]["wall"]))
    if len(rows) < 2:
        return None, None
    a = np.array(rows, dtype=np.int64)
    up = rfc3550_jitter_ns(a[:, 0], a[:, 1]) / 1e6
    down = rfc3550_jitter_ns(a[:, 2], a[:, 3]) / 1e6
    return up, down


def parse_irtt_json(text: str) -> IrttResult:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"irtt: not the JSON written by 'irtt client -o' ({exc})") from exc
    if not isinstance(doc, dict) or "stats" not in doc:
        raise ParseError("irtt JSON: missing 'stats' (is this 'irtt client -o FILE' output?)")
    stats = doc["stats"]
    sent = int(stats.get("packets_sent", 0))
    received = int(stats.get("packets_received", 0))
    if sent == 0:
        raise ParseError("irtt JSON: no packets were sent (stats.packets_sent = 0)")
    if received == 0:
        raise ParseError("irtt JSON: no reply received (is the irtt server reachable?)")
    ipdv = stats.get("ipdv_round_trip") or {}
    up, down = _jitters(doc.get("round_trips") or [])
    return IrttResult(
        rtt_mean_ms=_stat_ms(stats, "rtt"),
        rtt_median_ms=_stat_ms(stats, "rtt", "median") if "median" in stats["rtt"]
        else _stat_ms(stats, "rtt"),
        send_delay_ms=_stat_ms(stats, "send_delay"),
        receive_delay_ms=_stat_ms(stats, "receive_delay"),
        ipdv_rtt_ms=float(ipdv["mean"]) / 1e6 if "mean" in ipdv else None,
        jitter_up_ms=up,
        jitter_down_ms=down,
        packets_sent=sent,
        packets_received=received,
        loss_pct=100.0 * (sent - received) / sent,
        server_packets_received=(int(stats["server_packets_received"])
                                 if "server_packets_received" in stats else None),
    )


def irtt_measurements(result: IrttResult) -> list[Measurement]:
    out = [
        Measurement("rtt_mean_ms", result.rtt_mean_ms),
        Measurement("rtt_median_ms", result.rtt_median_ms),
        Measurement("one_way_delay_up_ms", result.send_delay_ms),
        Measurement("one_way_delay_down_ms", result.receive_delay_ms),
        Measurement("probe_loss_pct", result.loss_pct),
    ]
    if result.ipdv_rtt_ms is not None:
        out.append(Measurement("ipdv_rtt_ms", result.ipdv_rtt_ms))
    if result.jitter_up_ms is not None:
        out.append(Measurement("rfc3550_jitter_up_ms", result.jitter_up_ms))
    if result.jitter_down_ms is not None:
        out.append(Measurement("rfc3550_jitter_down_ms", result.jitter_down_ms))
    return out


def parse_irtt(text: str) -> list[Measurement]:
    return irtt_measurements(parse_irtt_json(text))


PARSERS = (Parser("irtt", "irtt client JSON (-o FILE)", IRTT_METRICS, parse_irtt),)
