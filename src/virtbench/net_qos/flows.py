"""Packets of a capture grouped into flows (5-tuples), with the studies' capture formulas per flow.

Decodes Ethernet (with VLAN tags), Linux cooked SLL and SLL2, raw IP and BSD loopback headers,
IPv4 and IPv6 (skipping extension headers), and the ports of TCP, UDP, UDP-Lite and SCTP. One
numba loop assigns every packet a flow id through an open-addressing hash table; a second one
sums each flow's packets, bytes, first/last time and the integer sums behind the studies'
delay and jitter (`virtbench.net_qos.study.capture_qos`: the same formulas, exact in ns).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numba import njit

from virtbench.model import VirtbenchError
from virtbench.net_qos.pcap import PcapRecords
from virtbench.net_qos.study import CaptureQos, capture_qos

__all__ = ["Flow", "FlowSpecError", "FlowStats", "capture_flows", "parse_flow_spec",
           "select_flows"]

PROTOCOLS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp", 136: "udplite"}
_BY_NAME = {v: k for k, v in PROTOCOLS.items()}
_NO_TIME = np.iinfo(np.int64).min


class FlowSpecError(VirtbenchError, ValueError):
    """A --flow value this module cannot read; the message shows the accepted forms."""


@dataclass(frozen=True)
class Flow:
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


@dataclass(frozen=True)
class FlowStats:
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
    keys, flow_id = _assign_flows(rec)
    n_flows = keys.shape[0]
    packets, nbytes, first, last, gap_sum, dgap_sum, ordered, timed = _flow_sums(
        flow_id, rec.ts_ns, rec.orig_len, n_flows)
    out = []
    for i in range(n_flows):
        flow = _flow_of(keys[i])
        n = int(packets[i])
        qos = None
        if timed[i] and n >= 3:
            if ordered[i]:
                qos = _qos_from_sums(n, int(nbytes[i]), int(gap_sum[i]), int(dgap_sum[i]))
            else:  # a clock stepped back inside the flow: let the formulas sort it
                mask = flow_id == i
                qos = capture_qos(rec.ts_ns[mask], rec.orig_len[mask])
        out.append(FlowStats(flow, n, int(nbytes[i]), int(first[i]) if timed[i] else None,
                             int(last[i]) if timed[i] else None, qos))
    return out


def _qos_from_sums(n: int, nbytes: int, gap_sum: int, dgap_sum: int) -> CaptureQos:
    """capture_qos's formulas from exact integer sums of a flow in arrival order."""
    capture_s = gap_sum / 1e9
    return CaptureQos(
        delay_ms=gap_sum / (n - 1) / 1e6,
        jitter_ms=dgap_sum / (n - 2) / 1e6,
        throughput_mbps=(nbytes * 8 / capture_s / 1e6) if capture_s > 0 else float("nan"),
        packets=n, bytes=nbytes, capture_s=capture_s)


def _assign_flows(rec: PcapRecords) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    flow_id = np.empty(rec.packets, np.int32)
    keys = _assign(rec.data, rec.data_off, rec.cap_len, rec.iface, rec.if_linktype, flow_id)
    return keys, flow_id


def _flow_of(key: npt.NDArray[np.int64]) -> Flow:
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
_TUPLE = re.compile(r"^(\w+):(\[[^\]]*\]|[^:\[\]]+):(\*|\d+):(\[[^\]]*\]|[^:\[\]]+):(\*|\d+)$")


@dataclass(frozen=True)
class FlowSpec:
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
    if not text.isdigit() or int(text) > 65535:
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


# --- compiled loops -----------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _be16(b, o):  # type: ignore[no-untyped-def]
    return (np.int64(b[o]) << 8) | np.int64(b[o + 1])


@njit(cache=True, nogil=True, inline="always")
def _be64(b, o):  # type: ignore[no-untyped-def]
    v = np.int64(0)
    for i in range(8):
        v = (v << 8) | np.int64(b[o + i])
    return v


@njit(cache=True, nogil=True)
def _key_of(b, o, end, link, key):  # type: ignore[no-untyped-def]
    """Fill key (src_hi, src_lo, dst_hi, dst_lo, meta) of the packet in b[o:end]; all zero for
    a packet that is not IP or is cut before its addresses."""
    key[:] = 0
    ethertype = -1
    if link == 1:  # Ethernet, up to two VLAN tags
        if end - o < 14:
            return
        ethertype = _be16(b, o + 12)
        o += 14
        for _ in range(2):
            if (ethertype == 0x8100 or ethertype == 0x88A8) and end - o >= 4:
                ethertype = _be16(b, o + 2)
                o += 4
    elif link == 113:  # Linux cooked v1
        if end - o < 16:
            return
        ethertype = _be16(b, o + 14)
        o += 16
    elif link == 276:  # Linux cooked v2
        if end - o < 20:
            return
        ethertype = _be16(b, o)
        o += 20
    elif link == 0 or link == 108:  # BSD loopback: address family, host or network order
        if end - o < 4:
            return
        fam = np.int64(b[o]) | np.int64(b[o + 3])
        o += 4
        ethertype = 0x0800 if fam == 2 else (0x86DD if fam in (24, 28, 30) else -1)
    elif link == 101 or link == 12 or link == 14 or link == 228 or link == 229:  # raw IP
        if end - o < 1:
            return
        v = b[o] >> 4
        ethertype = 0x0800 if v == 4 else (0x86DD if v == 6 else -1)
    if ethertype == 0x0800:
        if end - o < 20:
            return
        ihl = (np.int64(b[o]) & 0xF) * 4
        proto = np.int64(b[o + 9])
        key[1] = (np.int64(b[o + 12]) << 24) | (np.int64(b[o + 13]) << 16) \
            | (np.int64(b[o + 14]) << 8) | np.int64(b[o + 15])
        key[3] = (np.int64(b[o + 16]) << 24) | (np.int64(b[o + 17]) << 16) \
            | (np.int64(b[o + 18]) << 8) | np.int64(b[o + 19])
        first_fragment = (_be16(b, o + 6) & 0x1FFF) == 0
        version = 4
        l4 = o + ihl
    elif ethertype == 0x86DD:
        if end - o < 40:
            return
        proto = np.int64(b[o + 6])
        key[0] = _be64(b, o + 8)
        key[1] = _be64(b, o + 16)
        key[2] = _be64(b, o + 24)
        key[3] = _be64(b, o + 32)
        version = 6
        l4 = o + 40
        first_fragment = True
        for _ in range(8):  # extension headers: hop-by-hop, routing, fragment, destination
            if proto == 44:
                if end - l4 < 8:
                    break
                first_fragment = (_be16(b, l4 + 2) & 0xFFF8) == 0
                proto = np.int64(b[l4])
                l4 += 8
            elif proto == 0 or proto == 43 or proto == 60:
                if end - l4 < 8:
                    break
                proto_next = np.int64(b[l4])
                l4 += (np.int64(b[l4 + 1]) + 1) * 8
                proto = proto_next
            else:
                break
    else:
        return
    sport = 0
    dport = 0
    if first_fragment and (proto == 6 or proto == 17 or proto == 132 or proto == 136) \
            and end - l4 >= 4:
        sport = _be16(b, l4)
        dport = _be16(b, l4 + 2)
    key[4] = (np.int64(version) << 40) | (proto << 32) | (sport << 16) | dport


@njit(cache=True, nogil=True)
def _assign(b, data_off, cap_len, iface, if_link, flow_id):  # type: ignore[no-untyped-def]
    """Flow id of every packet (in flow_id); returns the keys of the flows, by id."""
    n = data_off.size
    cap = 1024
    table = np.full(cap, -1, np.int64)  # hash slot -> flow id
    keys = np.empty((64, 5), np.int64)
    n_flows = 0
    key = np.zeros(5, np.int64)
    last = np.full(5, -1, np.int64)
    last_id = -1
    for i in range(n):
        o = data_off[i]
        _key_of(b, o, o + cap_len[i], if_link[iface[i]], key)
        if last_id >= 0 and key[0] == last[0] and key[1] == last[1] and key[2] == last[2] \
                and key[3] == last[3] and key[4] == last[4]:
            flow_id[i] = last_id
            continue
        h = np.int64(0x51ED270B27A2B3C5)
        for j in range(5):
            h = (h ^ key[j]) * np.int64(0x100000001B3)
            h ^= h >> 29
        slot = h & (cap - 1)
        while True:
            f = table[slot]
            if f < 0:
                if n_flows == keys.shape[0]:
                    grown = np.empty((keys.shape[0] * 2, 5), np.int64)
                    grown[:n_flows] = keys[:n_flows]
                    keys = grown
                keys[n_flows] = key
                table[slot] = n_flows
                f = n_flows
                n_flows += 1
                if n_flows * 2 > cap:  # keep the table at most half full
                    cap *= 2
                    table = np.full(cap, -1, np.int64)
                    for k in range(n_flows):
                        hk = np.int64(0x51ED270B27A2B3C5)
                        for j in range(5):
                            hk = (hk ^ keys[k, j]) * np.int64(0x100000001B3)
                            hk ^= hk >> 29
                        s = hk & (cap - 1)
                        while table[s] >= 0:
                            s = (s + 1) & (cap - 1)
                        table[s] = k
                break
            if keys[f, 0] == key[0] and keys[f, 1] == key[1] and keys[f, 2] == key[2] \
                    and keys[f, 3] == key[3] and keys[f, 4] == key[4]:
                break
            slot = (slot + 1) & (cap - 1)
        flow_id[i] = f
        last[:] = key
        last_id = f
    return keys[:n_flows].copy()


@njit(cache=True, nogil=True)
def _flow_sums(flow_id, ts, wire, n_flows):  # type: ignore[no-untyped-def]
    """Per flow: packets, bytes, first and last ts, Σ gap, Σ |Δ gap| (ns), whether its
    timestamps never go back, and whether every packet has one."""
    packets = np.zeros(n_flows, np.int64)
    nbytes = np.zeros(n_flows, np.int64)
    first = np.zeros(n_flows, np.int64)
    last = np.zeros(n_flows, np.int64)
    gap_sum = np.zeros(n_flows, np.int64)
    dgap_sum = np.zeros(n_flows, np.int64)
    prev_gap = np.zeros(n_flows, np.int64)
    ordered = np.ones(n_flows, np.bool_)
    timed = np.ones(n_flows, np.bool_)
    no_time = -9223372036854775807 - 1
    for i in range(flow_id.size):
        f = flow_id[i]
        t = ts[i]
        nbytes[f] += wire[i]
        if t == no_time:
            timed[f] = False
        elif packets[f] == 0:
            first[f] = t
        else:
            gap = t - last[f]
            if gap < 0:
                ordered[f] = False
            gap_sum[f] += gap
            if packets[f] >= 2:
                d = gap - prev_gap[f]
                dgap_sum[f] += d if d >= 0 else -d
            prev_gap[f] = gap
        if t != no_time:
            last[f] = t
        packets[f] += 1
    return packets, nbytes, first, last, gap_sum, dgap_sum, ordered, timed
