"""iperf3 output: ``-J`` (one JSON document) and ``--json-stream`` (3.17+, one event per line).

Read: throughput at the receiver and the sender, TCP retransmits and RTT (mean/min/max of the
streams' sender side), UDP jitter, packets and lost packets, CPU use; per stream (when there
are several) and the sum; both directions of ``--bidir`` (label ``direction``). Text the tool
prints around the JSON (warnings) is kept as warnings. A run stopped with Ctrl-C (end sums plus
an ``error``) is a partial result; a value iperf3 did not report is absent or "not measured".
The server's own output (``iperf3 -s -J``) is read too: there the half and the CPU figures only
the client measures are iperf3's placeholder zeros, reported as not measured; which side sent
comes from the file's ``sender`` flags.

Versions: the ``end.sum_sent``/``end.sum_received`` pair exists for UDP only from 3.11 on; older
UDP outputs have ``end.sum`` alone (the sender's rate plus the receiver's loss and jitter).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from virtbench.model import Better, Domain, Measurement, Metric
from virtbench.parsers.jsontext import find_json, loads
from virtbench.parsers.parser_contract import (
    NOT_MEASURED,
    Parsed,
    ParseError,
    Parser,
    check_figures,
    checked,
)

__all__ = [
    "IPERF3_DETAIL_METRICS", "IPERF3_METRICS", "PARSERS", "Iperf3Result", "iperf3_measurements",
    "parse_iperf3", "parse_iperf3_full", "parse_iperf3_json",
]

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
"""What ``iperf3_measurements`` gives (the workloads' metrics, positions kept: they slice it)."""
IPERF3_DETAIL_METRICS = (
    Metric("udp_packets", "packets", Better.HIGHER,
           "UDP datagrams the sender sent (iperf3 'packets')"),
    Metric("udp_lost_packets", "packets", Better.LOWER,
           "UDP datagrams that did not arrive, from iperf3 sequence numbers ('lost_packets')"),
    Metric("tcp_rtt_mean_ms", "ms", Better.LOWER,
           "mean of the kernel's smoothed TCP RTT samples on the sender (iperf3 mean_rtt), ms"),
    Metric("tcp_rtt_min_ms", "ms", Better.LOWER,
           "smallest smoothed TCP RTT the sender's kernel reported (iperf3 min_rtt), ms"),
    Metric("tcp_rtt_max_ms", "ms", Better.LOWER,
           "largest smoothed TCP RTT the sender's kernel reported (iperf3 max_rtt), ms"),
)
_ALL_METRICS = IPERF3_METRICS + IPERF3_DETAIL_METRICS
_MAPPED_END = {
    "streams", "sum", "sum_sent", "sum_received", "sum_bidir_reverse", "sum_sent_bidir_reverse",
    "sum_received_bidir_reverse", "cpu_utilization_percent", "sender_tcp_congestion",
    "receiver_tcp_congestion",
}
_MAPPED_TOP = {"start", "intervals", "end", "error"}


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


def _num(d: Any, key: str) -> float | None:
    value = d.get(key) if isinstance(d, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _stream_doc(text: str, warnings: list[str]) -> dict[str, Any]:
    """Rebuild the ``-J`` document from ``--json-stream`` events (one JSON object a line)."""
    doc: dict[str, Any] = {"intervals": []}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            event = loads(line)
        except json.JSONDecodeError as exc:
            warnings.append(f"iperf3 --json-stream line {number} is not JSON ({exc.msg}), "
                            f"ignored: {line[:80]!r}")
            continue
        if not isinstance(event, dict) or "event" not in event:
            warnings.append(f"iperf3 --json-stream line {number} is not an event, ignored")
            continue
        kind, data = event.get("event"), event.get("data")
        if kind == "interval":
            doc["intervals"].append(data)
        elif kind in ("start", "end", "error"):
            doc[str(kind)] = data
        else:
            warnings.append(f"iperf3 --json-stream event {kind!r} (line {number}) is not mapped")
    return doc


def _document(text: str) -> tuple[dict[str, Any], str, list[str]]:
    """(the -J document, format name, warnings about text around it)."""
    warnings: list[str] = []
    found = find_json(text, "iperf3", "the JSON of 'iperf3 -J' or '--json-stream'",
                      lambda d: "event" in d or "start" in d or "end" in d or "error" in d)
    if "event" in found.doc:
        doc = _stream_doc(text[found.start:], warnings)
        fmt = "--json-stream"
    else:
        doc, fmt = found.doc, "-J"
        if found.after.strip():
            warnings.append(f"iperf3: text after the JSON is not mapped: "
                            f"{found.after.strip().splitlines()[0][:80]!r}")
    for line in found.before.splitlines():
        if line.strip():
            warnings.append(f"iperf3 printed before its JSON: {line.strip()[:120]}")
    version = doc.get("start", {}).get("version") if isinstance(doc.get("start"), dict) else None
    return doc, f"{version or 'iperf3'} {fmt}", warnings


def _check_error(doc: dict[str, Any], fmt: str) -> str | None:
    """iperf3's error text when it reported one; a ParseError when nothing usable is left."""
    error = doc.get("error")
    if not error:
        return None
    end = doc.get("end")
    if not isinstance(end, dict) or not any(k in end for k in ("sum_sent", "sum")):
        raise ParseError(f"{fmt}: iperf3 reported an error and no results: {error}")
    return str(error)


def _rtt(streams: list[Any], sending: bool | None) -> dict[str, float]:
    """RTT over the streams' sender side (µs in iperf3 → ms): mean of means, min, max."""
    means, mins, maxs = [], [], []
    for stream in streams:
        sender = stream.get("sender") if isinstance(stream, dict) else None
        if not isinstance(sender, dict) or not _num(sender, "max_rtt"):
            continue  # absent, or zeros: with -R before 3.11 the remote sender's RTT is not sent
        if sending is not None and bool(sender.get("sender", True)) != sending:
            continue
        means.append(_num(sender, "mean_rtt") or 0.0)
        mins.append(_num(sender, "min_rtt") or 0.0)
        maxs.append(_num(sender, "max_rtt") or 0.0)
    if not means:
        return {}
    return {"tcp_rtt_mean_ms": sum(means) / len(means) / 1e3,
            "tcp_rtt_min_ms": min(mins) / 1e3, "tcp_rtt_max_ms": max(maxs) / 1e3}


def _placeholder(part: Any, other: Any) -> bool:
    """``part`` is a sum iperf3 filled with zeros because the peer's report never reached this
    side (an interrupted run; a server's view of the client's half): no bytes, while the other
    half of the same direction moved some."""
    return (isinstance(part, dict) and not _num(part, "bytes")
            and not _num(part, "bits_per_second") and (_num(other, "bytes") or 0) > 0)


def _sums(sent: Any, received: Any, udp: Any, labels: dict[str, str], peer_missing: bool
          ) -> list[Measurement]:
    """Measurements of one direction's (or one stream's) sums. ``peer_missing``: the peer's
    report may be absent (an interrupted run, the server side), so its zeros are not values."""
    out: list[Measurement] = []
    sent_bps = _num(sent, "bits_per_second")
    recv_bps = _num(received, "bits_per_second")
    if (recv_bps is not None and peer_missing and _placeholder(received, sent)) or (
            recv_bps is None and udp is not None):
        out.append(Measurement("throughput_mbps", None, labels=dict(labels), status=NOT_MEASURED))
    elif recv_bps is not None:
        out.append(Measurement("throughput_mbps", recv_bps / 1e6, labels=dict(labels)))
    udp_bps = _num(udp, "bits_per_second")
    sent_missing = peer_missing and _placeholder(sent, received)
    if sent_missing:
        out.append(Measurement("sender_throughput_mbps", None, labels=dict(labels),
                               status=NOT_MEASURED))
    elif sent_bps is not None:
        out.append(Measurement("sender_throughput_mbps", sent_bps / 1e6, labels=dict(labels)))
    elif udp_bps is not None:
        out.append(Measurement("sender_throughput_mbps", udp_bps / 1e6, labels=dict(labels)))
    retransmits = None if sent_missing else _num(sent, "retransmits")
    if retransmits is not None:
        out.append(Measurement("tcp_retransmits", retransmits, labels=dict(labels)))
    if udp is not None:
        out += _udp(udp, labels)
    return out


def _udp(udp: Any, labels: dict[str, str]) -> list[Measurement]:
    out: list[Measurement] = []
    for metric, key in (("udp_jitter_ms", "jitter_ms"), ("udp_packets", "packets"),
                        ("udp_lost_packets", "lost_packets")):
        value = _num(udp, key)
        if value is not None:
            out.append(Measurement(metric, value, labels=dict(labels)))
    packets, lost = _num(udp, "packets"), _num(udp, "lost_packets")
    if packets:
        out.append(Measurement("udp_loss_pct", 100.0 * (lost or 0.0) / packets,
                               labels=dict(labels)))
    return out


def _direction(end: dict[str, Any], reverse_half: bool, udp_proto: bool) -> tuple[Any, Any, Any]:
    suffix = "_bidir_reverse" if reverse_half else ""
    sent = end.get(f"sum_sent{suffix}")
    received = end.get(f"sum_received{suffix}")
    udp = end.get(f"sum{suffix}") if udp_proto else None
    return sent, received, udp


def _sending(stream: dict[str, Any], udp_proto: bool) -> bool:
    """Whether this host sent on the stream (``sender`` flag of its sender or udp part)."""
    part = stream.get("udp") if udp_proto else stream.get("sender")
    return bool(part.get("sender", True)) if isinstance(part, dict) else True


def _legacy_bidir(end: dict[str, Any], streams: list[Any], udp_proto: bool,
                  labels_of: dict[bool, dict[str, str]], interrupted: bool,
                  warnings: list[str]) -> list[Measurement]:
    """iperf3 before 3.11 writes --bidir end sums for one direction only (their ``sender``
    flag says which); the other direction is read from its stream when it has one."""
    sent, received, udp = _direction(end, False, udp_proto)
    flagged = next((x for x in (sent, udp) if isinstance(x, dict) and "sender" in x), {})
    summed = bool(flagged.get("sender", True))
    out = _sums(sent, received, udp, labels_of[summed], interrupted)
    other = [s for s in streams if isinstance(s, dict) and _sending(s, udp_proto) != summed]
    if len(other) == 1:
        stream = other[0]
        out += _sums(stream.get("sender"), stream.get("receiver"),
                     stream.get("udp") if udp_proto else None, labels_of[not summed], interrupted)
    if not udp_proto:
        for sending in (summed, not summed):
            for metric, value in _rtt(streams, sending).items():
                out.append(Measurement(metric, value, labels=dict(labels_of[sending])))
    warnings.append(
        f"iperf3 --bidir before 3.11: end sums cover {labels_of[summed]['direction']} only; "
        f"{labels_of[not summed]['direction']} is read from its "
        f"{'stream' if len(other) == 1 else 'streams (no sum)'}")
    return out


def _stream_measurements(streams: list[Any], udp_proto: bool, bidir: bool,
                         labels_of: dict[bool, dict[str, str]], interrupted: bool
                         ) -> list[Measurement]:
    per_direction: dict[bool, list[Any]] = {True: [], False: []}
    for stream in streams:
        if not isinstance(stream, dict):
            continue
        per_direction[_sending(stream, udp_proto) if bidir else True].append(stream)
    out: list[Measurement] = []
    for sending, group in per_direction.items():
        if len(group) < 2:
            continue  # one stream is its own sum
        for stream in group:
            sender, receiver = stream.get("sender"), stream.get("receiver")
            udp = stream.get("udp") if udp_proto else None
            socket = (udp or sender or {}).get("socket", "?")
            labels = {**labels_of[sending], "stream": str(socket)}
            out += _sums(sender, receiver, udp, labels, interrupted)
            for metric, value in _rtt([stream], None).items():
                out.append(Measurement(metric, value, labels=dict(labels)))
    return out


@dataclass(frozen=True)
class _Run:
    """What one iperf3 document says about its test, read once for the measurement steps."""

    fmt: str
    doc: dict[str, Any]
    end: dict[str, Any]
    udp_proto: bool
    streams: list[Any]
    bidir: bool
    legacy_bidir: bool
    server: bool
    """The output is the server's (``iperf3 -s -J``): its ``start`` has ``accepted_connection``
    where a client's has ``connecting_to``."""
    host_sends: bool
    """This side sent the data (not --bidir): from the file's own ``sender`` flags."""
    peer_missing: bool
    """The peer's report may be absent: the run was interrupted, or this is the server side."""

    def labels_of(self) -> dict[bool, dict[str, str]]:
        """--bidir: the direction label of the half this side sends (True) or receives."""
        if not self.bidir:
            return {True: {}, False: {}}
        ours, theirs = ("server_to_client", "client_to_server") if self.server else (
            "client_to_server", "server_to_client")
        return {True: {"direction": ours}, False: {"direction": theirs}}


def _host_sends(end: dict[str, Any], udp_proto: bool, server: bool, reverse: bool) -> bool:
    """Whether this side sent, by the ``sender`` flag of its end sums: UDP's ``sum`` first (3.12
    marks a UDP server's placeholder ``sum_sent`` as sent), else TCP's ``sum_sent``. Without a
    flag, from the role: the client sends unless -R, the server only with -R."""
    for key in (("sum",) if udp_proto else ()) + ("sum_sent", "sum_received"):
        part = end.get(key)
        if isinstance(part, dict) and isinstance(part.get("sender"), bool):
            return bool(part["sender"])
    return reverse if server else not reverse


def _read_run(text: str, warnings: list[str]) -> _Run:
    doc, fmt, found_warnings = _document(text)
    warnings += found_warnings
    if fmt.endswith("--json-stream") and "end" not in doc:
        raise ParseError(f"{fmt} has no 'end' event after {len(doc['intervals'])} interval(s): "
                         "the run did not finish; expected start, interval... and end events")
    error = _check_error(doc, fmt)
    if error is not None:
        warnings.append(f"iperf3 reported '{error}': the run was stopped early; results cover "
                        "the part before the stop")
    test = _get(doc, "start", "test_start")
    end = _get(doc, "end")
    if not isinstance(end, dict) or not isinstance(test, dict):
        raise ParseError(f"{fmt}: 'start.test_start' and 'end' must be objects")
    udp_proto = str(test.get("protocol", "TCP")).upper() == "UDP"
    if "sum_sent" not in end and not (udp_proto and "sum" in end):
        raise ParseError(f"{fmt}: no 'end.sum_sent' (nor UDP 'end.sum'); the run produced no "
                         "results")
    raw_streams = end.get("streams")
    streams: list[Any] = raw_streams if isinstance(raw_streams, list) else []
    both_ways = len({_sending(s, udp_proto) for s in streams if isinstance(s, dict)}) == 2
    legacy_bidir = both_ways and not any(k.endswith("bidir_reverse") for k in end)
    start = doc.get("start")
    server = isinstance(start, dict) and "accepted_connection" in start
    if server:
        fmt += " (server side)"
        warnings.append(f"{fmt}: the server's own output; what only the client measures "
                        "(its sums, its CPU) is not measured here, not 0")
    return _Run(fmt, doc, end, udp_proto, streams,
                bool(test.get("bidir", 0)) or "sum_sent_bidir_reverse" in end or legacy_bidir,
                legacy_bidir, server,
                _host_sends(end, udp_proto, server, bool(test.get("reverse", 0))),
                error is not None or server)


def _direction_rows(run: _Run) -> list[Measurement]:
    """The end sums (and RTT) of each direction the test had."""
    labels_of = run.labels_of()
    out: list[Measurement] = []
    halves = () if run.legacy_bidir else (False, True) if run.bidir else (False,)
    for reverse_half in halves:
        sent, received, udp = _direction(run.end, reverse_half, run.udp_proto)
        ours = (not reverse_half) != run.server  # the client-to-server half is the server's
        labels = labels_of[ours]  # to receive
        out += _sums(sent, received, udp, labels, run.peer_missing)
        if not run.udp_proto:
            sending = ours if run.bidir else None
            for metric, value in _rtt(run.streams, sending).items():
                out.append(Measurement(metric, value, labels=dict(labels)))
    return out


def _cpu_rows(run: _Run, warnings: list[str]) -> list[Measurement]:
    """CPU of sender and receiver: ``host_*`` is this side, ``remote_*`` its peer (all zeros
    when the peer's report did not arrive: not measured)."""
    cpu = run.end.get("cpu_utilization_percent") or {}
    if run.bidir:
        if cpu:
            warnings.append("iperf3 --bidir: each host both sends and receives, so its CPU use "
                            "is not attributed to a direction (cpu_utilization_percent not "
                            "mapped)")
        return []
    host, remote = _num(cpu, "host_total"), _num(cpu, "remote_total")
    remote_missing = run.peer_missing and not any(
        _num(cpu, k) for k in ("remote_total", "remote_user", "remote_system"))
    out: list[Measurement] = []
    for metric, value, missing in (("cpu_sender_pct", host, False),
                                   ("cpu_receiver_pct", remote, remote_missing)
                                   ) if run.host_sends else (
            ("cpu_sender_pct", remote, remote_missing), ("cpu_receiver_pct", host, False)):
        if missing:
            out.append(Measurement(metric, None, status=NOT_MEASURED))
        elif value is not None:
            out.append(Measurement(metric, value))
    return out


def parse_iperf3_full(text: str) -> Parsed:
    """Every result of one iperf3 output (``-J`` or ``--json-stream``), client or server side."""
    warnings: list[str] = []
    run = _read_run(text, warnings)
    if run.udp_proto and "sum_received" not in run.end:
        warnings.append(f"{run.fmt} UDP output has only end.sum (iperf3 < 3.11): the "
                        "receiver's throughput is not reported; sender rate, jitter and loss "
                        "are")
    labels_of = run.labels_of()
    out: list[Measurement] = []
    if run.legacy_bidir:
        out += _legacy_bidir(run.end, run.streams, run.udp_proto, labels_of, run.peer_missing,
                             warnings)
    out += _direction_rows(run)
    out += _stream_measurements(run.streams, run.udp_proto, run.bidir, labels_of,
                                run.peer_missing)
    out += _cpu_rows(run, warnings)
    for key in sorted(set(run.end) - _MAPPED_END):
        warnings.append(f"iperf3 JSON end.{key} is not mapped")
    for key in sorted(set(run.doc) - _MAPPED_TOP):
        warnings.append(f"iperf3 JSON '{key}' is not mapped")
    if not out:
        raise ParseError(f"{run.fmt}: end sums hold no rates")
    return checked(Parsed(out, run.fmt, warnings, partial=bool(run.doc.get("error"))),
                   _ALL_METRICS, "iperf3")


def parse_iperf3_json(text: str) -> Iperf3Result:
    """The forward direction's sums of one complete ``iperf3 -J`` run (what workloads use)."""
    doc, fmt, _ = _document(text)
    if doc.get("error"):
        raise ParseError(f"iperf3 reported an error: {doc['error']}")
    test = _get(doc, "start", "test_start")
    protocol = str(test.get("protocol", "TCP"))
    reverse = bool(test.get("reverse", 0))
    end = _get(doc, "end")
    sent = _get(end, "sum_sent")
    received = _get(end, "sum_received")
    cpu = end.get("cpu_utilization_percent") or {}
    host_cpu = _num(cpu, "host_total")
    remote_cpu = _num(cpu, "remote_total")
    cpu_sender, cpu_receiver = (remote_cpu, host_cpu) if reverse else (host_cpu, remote_cpu)
    udp = end.get("sum") if protocol == "UDP" else None
    try:
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
            cpu_sender_pct=cpu_sender,
            cpu_receiver_pct=cpu_receiver,
        )
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ParseError(f"{fmt}: a sum field is not a number ({exc})") from None


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
    return check_figures(out, IPERF3_METRICS, "iperf3")[0]


def parse_iperf3(text: str) -> list[Measurement]:
    return parse_iperf3_full(text).measurements


PARSERS = (
    Parser("iperf3", "iperf3 -J or --json-stream (TCP/UDP, -R, --bidir, -P; 3.x)",
           _ALL_METRICS, parse_iperf3, parse_iperf3_full),
)
