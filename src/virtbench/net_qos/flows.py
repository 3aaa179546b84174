"""Packets of a capture grouped into flows (5-tuples), with the studies' capture formulas per flow.

Decodes Ethernet (with VLAN tags), Linux cooked SLL and SLL2, raw IP and BSD loopback headers,
IPv4 and IPv6 (skipping extension headers), and the ports of TCP, UDP, UDP-Lite and SCTP. The
decoding is virtbench's capture decoder, in C (`virtbench.net_qos._capscan`): one pass over the
capture assigns every packet a flow through an open-addressing hash table and sums each flow's
packets, bytes, first/last time and the integer sums behind the studies' delay and jitter
(`virtbench.net_qos.study.capture_qos`: the same formulas, exact in ns). This module turns those
sums into figures; so that `virtbench parse pcap` starts fast, it imports numpy only where
per-packet arrays are used, and its types are named tuples (`dataclasses` imports `inspect`,
~10 ms of start-up).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from virtbench.errors import VirtbenchError
from virtbench.inputs.ascii_numbers import is_digits
from virtbench.net_qos.qos_figures import CaptureQos, capture_throughput_mbps

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from virtbench.net_qos.pcap import PcapRecords

__all__ = ["Flow", "FlowSpecError", "FlowStats", "capture_flows", "flow_ids", "flow_stats",
           "parse_flow_spec", "select_flows"]

PROTOCOLS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp", 136: "udplite"}
_BY_NAME = {v: k for k, v in PROTOCOLS.items()}


class FlowSpecError(VirtbenchError, ValueError):
    """A --flow value this module cannot read; the message shows the accepted forms."""


class Flow(NamedTuple):
    """A 5-tuple (``version`` 4 or 6). Non-IP packets form the flow ``proto = "non-ip"``."""

    version: int
    proto: str
    src: str
    sport: int
    dst: str
    dport: int

    def labels(self) -> dict[str, str]:
        return {"proto": self.proto, "src": self.src, "sport": str(self.sport),
                "dst": self.dst, "dport": str(self.dport)}

    def __str__(self) -> str:
        if self.proto == "non-ip":
            return "non-ip"
        left, right = (f"[{self.src}]", f"[{self.dst}]") if self.version == 6 else (
            self.src, self.dst)
        return f"{self.proto} {left}:{self.sport} > {right}:{self.dport}"


class FlowStats(NamedTuple):
    """One flow of a capture: counts, first/last timestamps (ns) and the studies' formulas
    (``qos`` is None below 3 packets or without timestamps, as the formulas need them)."""

    flow: Flow
    packets: int
    bytes: int
    first_ns: int | None
    last_ns: int | None
    qos: CaptureQos | None


def capture_flows(rec: PcapRecords) -> list[FlowStats]:
    """Every flow of the capture, in order of first appearance."""
    return flow_ids(rec)[0]


def flow_ids(rec: PcapRecords) -> tuple[list[FlowStats], npt.NDArray[np.int32]]:
    """Every flow of the capture (as `capture_flows`) and each packet's flow: its index there."""
    import numpy as np

    from virtbench.net_qos import _capscan

    fmt = rec.capture
    ids = np.empty(rec.packets, np.int32)
    _n, _n_if, _stop, _reason, rows = _capscan.scan(
        rec.data, fmt.pcapng, fmt.big, fmt.record_header, fmt.scale, fmt.linktype, flow_ids=ids)
    return [flow_stats(*row) for row in rows], ids


def flow_stats(key: Sequence[int] | npt.NDArray[np.int64], packets: int, nbytes: int,
               first: int, last: int, gap_sum: int, dgap_sum: int, timed: bool) -> FlowStats:
    """A flow's stats from its key (src_hi, src_lo, dst_hi, dst_lo, meta) and its sums: Σ gap
    and Σ |Δ gap| (ns) over its timestamps in time order; ``timed``: every packet has one."""
    qos = _qos_from_sums(packets, nbytes, gap_sum, dgap_sum) if timed and packets >= 3 else None
    return FlowStats(_flow_of(key), packets, nbytes, first if timed else None,
                     last if timed else None, qos)


def _qos_from_sums(n: int, nbytes: int, gap_sum: int, dgap_sum: int) -> CaptureQos:
    """capture_qos's formulas from exact integer sums of a flow's gaps in time order."""
    capture_s = gap_sum / 1e9
    return CaptureQos(
        delay_ms=gap_sum / (n - 1) / 1e6,
        jitter_ms=dgap_sum / (n - 2) / 1e6,
        throughput_mbps=capture_throughput_mbps(nbytes, capture_s),
        packets=n, bytes=nbytes, capture_s=capture_s)


def _flow_of(key: Sequence[int] | npt.NDArray[np.int64]) -> Flow:
    src_hi, src_lo, dst_hi, dst_lo, meta = (int(k) & 0xFFFF_FFFF_FFFF_FFFF for k in key)
    version, proto = (meta >> 40) & 0xFF, (meta >> 32) & 0xFF
    sport, dport = (meta >> 16) & 0xFFFF, meta & 0xFFFF
    if version == 0:
        return Flow(0, "non-ip", "", 0, "", 0)
    if version == 4:
        src, dst = str(ipaddress.IPv4Address(src_lo)), str(ipaddress.IPv4Address(dst_lo))
    else:
        src = str(ipaddress.IPv6Address((src_hi << 64) | src_lo))
        dst = str(ipaddress.IPv6Address((dst_hi << 64) | dst_lo))
    return Flow(version, PROTOCOLS.get(proto, str(proto)), src, sport, dst, dport)


# --- selection ----------------------------------------------------------------------------------

_SPEC_HELP = ("expected 'udp', 'tcp', 'tcp:5201' (either port), or a 5-tuple "
              "'PROTO:SRC:SPORT:DST:DPORT' (IPv6 addresses in brackets, '*' for any part)")
# A port is any text here, so that _port says what is wrong with it (digits 0-9 only).
_PART = r"(\[[^\]]*\]|[^:\[\]]+)"
_TUPLE = re.compile(rf"^(\w+):{_PART}:([^:\[\]]+):{_PART}:([^:\[\]]+)$")


class FlowSpec(NamedTuple):
    """What --flow asked for; None = any."""

    proto: str | None
    port: int | None = None
    src: str | None = None
    sport: int | None = None
    dst: str | None = None
    dport: int | None = None

    def matches(self, f: Flow) -> bool:
        if self.proto is not None and f.proto != self.proto:
            return False
        if self.port is not None and self.port not in (f.sport, f.dport):
            return False
        return all(want is None or want == have for want, have in (
            (self.src, f.src), (self.sport, f.sport), (self.dst, f.dst), (self.dport, f.dport)))


def parse_flow_spec(spec: str) -> FlowSpec:
    """``udp``, ``tcp:5201`` (either port) or ``PROTO:SRC:SPORT:DST:DPORT`` (``*``: any)."""
    text = spec.strip().lower()
    m = _TUPLE.match(text)
    if m:
        proto, src, sport, dst, dport = m.groups()
        return FlowSpec(_proto(proto, spec), None, _addr(src, spec), _port(sport, spec),
                        _addr(dst, spec), _port(dport, spec))
    parts = text.split(":")
    if len(parts) == 1:
        return FlowSpec(_proto(parts[0], spec))
    if len(parts) == 2:
        return FlowSpec(_proto(parts[0], spec), _port(parts[1], spec))
    raise FlowSpecError(f"--flow {spec!r}: {_SPEC_HELP}")


def _proto(text: str, spec: str) -> str | None:
    if text == "*":
        return None
    if text in _BY_NAME:
        return text
    raise FlowSpecError(f"--flow {spec!r}: unknown protocol {text!r} "
                        f"(known: {', '.join(_BY_NAME)}); {_SPEC_HELP}")


def _port(text: str, spec: str) -> int | None:
    if text == "*":
        return None
    if not is_digits(text) or int(text) > 65535:  # the one rule: digits 0-9
        raise FlowSpecError(f"--flow {spec!r}: port {text!r} is not 0–65535; {_SPEC_HELP}")
    return int(text)


def _addr(text: str, spec: str) -> str | None:
    text = text.strip("[]")
    if text == "*":
        return None
    try:
        return str(ipaddress.ip_address(text))
    except ValueError as exc:
        raise FlowSpecError(f"--flow {spec!r}: {text!r} is not an IP address; "
                            f"{_SPEC_HELP}") from exc


def select_flows(flows: list[FlowStats], spec: FlowSpec | None) -> list[FlowStats]:
    return [f for f in flows if spec is None or spec.matches(f.flow)]
