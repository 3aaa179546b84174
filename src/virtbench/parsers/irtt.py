"""irtt client JSON (``irtt client -o FILE``; gzip unless the name ends in .json): RTT, one-way
delays, IPDV, loss, RFC 3550 jitter and packet counts.

irtt reports durations in ns; everything here is converted to ms. One-way delays are only
meaningful when client and server share a clock (same machine, or PTP-synchronised hosts); a
negative one is reported with a warning. What irtt did not measure (``--tstamp=none|send|
receive`` leaves server timestamps out; ``--clock=monotonic`` leaves out the wall clock that
one-way delays need) is "not measured", never 0. Loss is irtt's: packets sent minus distinct
packets received (duplicates excluded).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from virtbench.model import Better, Measurement, Metric
from virtbench.net_qos.rfc3550 import rfc3550_jitter_ns
from virtbench.parsers.jsontext import loads
from virtbench.parsers.parser_contract import (
    NOT_MEASURED,
    Parsed,
    ParseError,
    Parser,
    check_figures,
    checked,
)

__all__ = [
    "IRTT_METRICS", "PARSERS", "IrttResult", "irtt_measurements", "parse_irtt",
    "parse_irtt_full", "parse_irtt_json",
]

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
           "irtt probes without a reply, as irtt defines it: (sent − distinct replies) / sent "
           "× 100 (duplicates excluded)"),
    Metric("packets_sent", "packets", None, "probes the irtt client sent"),
    Metric("packets_received", "packets", None,
           "replies the irtt client received, duplicates included (irtt's packets_received)"),
    Metric("packets_duplicate", "packets", Better.LOWER, "duplicate replies irtt received"),
    Metric("packets_lost", "packets", Better.LOWER,
           "probes without any reply: sent − (received − duplicates)"),
)
_MAPPED_STATS = {"rtt", "send_delay", "receive_delay", "ipdv_round_trip", "packets_sent",
                 "packets_received", "duplicates", "packet_loss_percent",
                 "server_packets_received"}


@dataclass(frozen=True)
class IrttResult:
    """Summary of one irtt run (ms, %, counts); None where irtt measured nothing."""

    rtt_mean_ms: float | None
    rtt_median_ms: float | None
    send_delay_ms: float | None
    receive_delay_ms: float | None
    ipdv_rtt_ms: float | None
    jitter_up_ms: float | None
    jitter_down_ms: float | None
    packets_sent: int
    packets_received: int
    loss_pct: float
    server_packets_received: int | None = None
    """Probes the server received (and answered); None when the server did not report it."""
    duplicates: int = 0
    negative_delays: tuple[str, ...] = ()
    """Names of one-way delays with negative values (unsynchronised clocks)."""

    @property
    def packets_lost(self) -> int:
        return self.packets_sent - (self.packets_received - self.duplicates)


def _count(stats: dict[str, Any], key: str, default: int | None = 0) -> int | None:
    value = stats.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ParseError(f"irtt JSON: stats.{key} is {value!r}, not a count")
    return int(value)


def _stat_ms(stats: dict[str, Any], name: str, field: str = "mean") -> float | None:
    """A duration statistic in ms; None when irtt took no sample of it (n = 0 or absent)."""
    entry = stats.get(name)
    if not isinstance(entry, dict) or not entry.get("n") or field not in entry:
        return None
    value = entry[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"irtt JSON: stats.{name}.{field} is {value!r}, not a number")
    return float(value) / 1e6


def _stamp(rt: dict[str, Any], side: str, event: str, clock: str) -> int | None:
    node: Any = rt.get("timestamps")
    for key in (side, event, clock):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, int) and not isinstance(node, bool) else None


def _stamps(round_trips: list[dict[str, Any]], side: str, event: str, clock: str
            ) -> list[int] | None:
    """Every round trip's ``timestamps.side.event.clock``; None unless each carries it (an
    integer). One loop, no call per round trip: a run has thousands (BENCHMARKS.md, parse
    speed)."""
    out = []
    try:
        for rt in round_trips:
            value = rt["timestamps"][side][event][clock]
            if type(value) is not int:  # a bool or a float is no irtt stamp
                return None
            out.append(value)
    except (KeyError, TypeError):  # a stamp or a level is missing, or is not an object
        return None
    return out


def _jitter(round_trips: list[Any], send: tuple[str, str], receive: tuple[str, str]
            ) -> float | None:
    """RFC 3550 jitter between two timestamps; each side's clock (wall, else monotonic) only
    appears in differences, so the two hosts' clocks need not agree."""
    received = [rt for rt in round_trips if isinstance(rt, dict) and rt.get("lost") == "false"]
    if len(received) < 2:
        return None
    clocks = ("wall", "monotonic")
    send_clock = next((c for c in clocks if _stamp(received[0], *send, c) is not None), None)
    recv_clock = next((c for c in clocks if _stamp(received[0], *receive, c) is not None), None)
    if send_clock is None or recv_clock is None:
        return None
    sent_at = _stamps(received, *send, send_clock)
    received_at = _stamps(received, *receive, recv_clock)
    if sent_at is None or received_at is None:
        return None  # not every reply carries the stamp: no consistent series
    return rfc3550_jitter_ns(sent_at, received_at) / 1e6


def _load(text: str) -> dict[str, Any]:
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"irtt: not the JSON written by 'irtt client -o' (line {exc.lineno} "
                         f"column {exc.colno}: {exc.msg}); expected a complete JSON document"
                         ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("stats"), dict):
        raise ParseError("irtt JSON: missing 'stats' (is this 'irtt client -o FILE' output?)")
    return doc


def parse_irtt_json(text: str) -> IrttResult:
    return _result(_load(text))


def _result(doc: dict[str, Any]) -> IrttResult:
    stats = doc["stats"]
    sent = _count(stats, "packets_sent") or 0
    received = _count(stats, "packets_received") or 0
    duplicates = _count(stats, "duplicates") or 0
    if sent <= 0:
        raise ParseError("irtt JSON: no packets were sent (stats.packets_sent = 0)")
    if not 0 <= received - duplicates <= sent:
        raise ParseError(f"irtt JSON: {received} received with {duplicates} duplicates does not "
                         f"fit {sent} sent")
    irtt_loss = stats.get("packet_loss_percent")
    loss = (float(irtt_loss) if isinstance(irtt_loss, (int, float))
            and not isinstance(irtt_loss, bool) else 100.0 * (sent - received + duplicates) / sent)
    rts = doc.get("round_trips")
    round_trips = rts if isinstance(rts, list) else []
    negative = tuple(name for name in ("send_delay", "receive_delay")
                     if (_stat_ms(stats, name, "min") or 0.0) < 0)
    return IrttResult(
        rtt_mean_ms=_stat_ms(stats, "rtt"),
        rtt_median_ms=_stat_ms(stats, "rtt", "median"),
        send_delay_ms=_stat_ms(stats, "send_delay"),
        receive_delay_ms=_stat_ms(stats, "receive_delay"),
        ipdv_rtt_ms=_stat_ms(stats, "ipdv_round_trip"),
        jitter_up_ms=_jitter(round_trips, ("client", "send"), ("server", "receive")),
        jitter_down_ms=_jitter(round_trips, ("server", "send"), ("client", "receive")),
        packets_sent=sent,
        packets_received=received,
        loss_pct=loss,
        server_packets_received=_count(stats, "server_packets_received", None),
        duplicates=duplicates,
        negative_delays=negative,
    )


def irtt_measurements(result: IrttResult) -> list[Measurement]:
    """Every metric; one irtt did not measure has value None and status not_measured."""
    values = {
        "rtt_mean_ms": result.rtt_mean_ms,
        "rtt_median_ms": result.rtt_median_ms,
        "one_way_delay_up_ms": result.send_delay_ms,
        "one_way_delay_down_ms": result.receive_delay_ms,
        "ipdv_rtt_ms": result.ipdv_rtt_ms,
        "rfc3550_jitter_up_ms": result.jitter_up_ms,
        "rfc3550_jitter_down_ms": result.jitter_down_ms,
        "probe_loss_pct": result.loss_pct,
        "packets_sent": float(result.packets_sent),
        "packets_received": float(result.packets_received),
        "packets_duplicate": float(result.duplicates),
        "packets_lost": float(result.packets_lost),
    }
    return check_figures([Measurement(name, value,
                                      status="ok" if value is not None else NOT_MEASURED)
                          for name, value in values.items()], IRTT_METRICS, "irtt")[0]


def parse_irtt_full(text: str) -> Parsed:
    doc = _load(text)
    result = _result(doc)
    version = doc.get("version")
    name = (f"irtt {version.get('irtt', '')}".strip() if isinstance(version, dict) else "irtt")
    warnings = []
    config = doc.get("config")
    params = config.get("params") if isinstance(config, dict) else None
    params = params if isinstance(params, dict) else {}
    for delay in result.negative_delays:
        warnings.append(f"irtt {delay} has negative values: the client's and server's clocks "
                        "are not synchronised, so one-way delays are meaningless")
    missing = [m.metric for m in irtt_measurements(result) if m.status == NOT_MEASURED]
    if missing:
        warnings.append(f"irtt did not measure {', '.join(missing)} (tstamp="
                        f"{params.get('stamp_at', '?')}, clock={params.get('clock', '?')})")
    stats = doc["stats"]
    unmapped = sorted(k for k, v in stats.items() if k not in _MAPPED_STATS
                      and isinstance(v, dict) and v.get("n"))
    if unmapped:
        warnings.append(f"irtt stats not mapped: {', '.join(unmapped)}")
    return checked(Parsed(irtt_measurements(result), f"{name} JSON", warnings), IRTT_METRICS,
                   name)


def parse_irtt(text: str) -> list[Measurement]:
    return irtt_measurements(parse_irtt_json(text))


PARSERS = (Parser("irtt", "irtt client JSON (-o FILE; plain or gzip)", IRTT_METRICS,
                  parse_irtt, parse_irtt_full),)
