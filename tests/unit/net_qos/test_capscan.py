"""The capture decoder (_capscan.c) on generated captures: both byte orders, µs/ns/Kuznetsov
records, pcapng with several sections and interfaces of different link types and resolutions,
VLAN, IPv6 extension headers, fragments, non-IP packets, clocks that step back, and damaged
files. Each packet's timestamp and lengths are the ones written, its flow the 5-tuple it was
built from, and each flow's figures what `study.capture_qos` gives on the flow's own packets;
its two outputs (the flow scan of `virtbench parse pcap`, the per-packet arrays of the labs)
come from one walk and agree on every file, damaged ones included. Real captures against
tshark: test_pcap.py."""

from __future__ import annotations

import ipaddress
import itertools
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench.net_qos.capture_scan import scan_capture
from virtbench.net_qos.flows import Flow, FlowStats, capture_flows, flow_ids
from virtbench.net_qos.pcap import PcapError, PcapRecords, parse_pcap, read_pcap
from virtbench.net_qos.study import capture_qos

from .test_pcap import _damaged

DATA = Path(__file__).resolve().parents[2] / "data" / "pcap"
CORPUS = sorted(p.name for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng", ".zst"))


def _outputs(data: bytes) -> tuple[str, str]:
    """(format, packets, damage) of the per-packet reader and of the flow scan, or the error
    each raised, as repr."""
    try:
        rec = parse_pcap(data)
        reader: object = (rec.format, rec.packets, rec.damage)
    except PcapError as exc:
        reader = str(exc)
    try:
        scan = scan_capture(data)
        scanned: object = (scan.format, scan.packets, scan.damage)
    except PcapError as exc:
        scanned = str(exc)
    return repr(reader), repr(scanned)


def _check_flows(rec: PcapRecords) -> list[FlowStats]:
    """Each flow's counts, first/last time and figures from its own packets (capture_qos, which
    sorts their timestamps); the flows of `virtbench parse pcap` are the same."""
    flows, ids = flow_ids(rec)
    assert sum(f.packets for f in flows) == rec.packets and ids.size == rec.packets
    for i, f in enumerate(flows):
        mask = ids == i
        ts, wire = rec.ts_ns[mask], rec.orig_len[mask]
        assert (f.packets, f.bytes) == (int(mask.sum()), int(wire.sum()))
        if f.first_ns is None:
            assert (ts == PcapRecords.NO_TIME).any() and f.qos is None
            continue
        assert (f.first_ns, f.last_ns) == (int(ts.min()), int(ts.max()))
        if f.packets < 3:
            assert f.qos is None
            continue
        ref = capture_qos(ts, wire)
        assert f.qos is not None
        for a, b in ((f.qos.delay_ms, ref.delay_ms), (f.qos.jitter_ms, ref.jitter_ms)):
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
    assert scan_capture(bytes(rec.data)).flows == flows
    return flows


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_files_give_the_same_flows(name: str) -> None:
    rec = read_pcap(DATA / name)
    scan = scan_capture(DATA / name)
    assert (scan.format, scan.packets, scan.damage) == (rec.format, rec.packets, rec.damage)
    assert scan.flows == capture_flows(rec) == _check_flows(rec)
    assert scan.flows and all(f.qos is not None for f in scan.flows if f.packets >= 3)


# --- generated packets and containers -----------------------------------------------------------

_V4 = (bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), bytes([192, 168, 7, 9]))
_V6 = (bytes(range(16)), bytes(range(16, 32)))


def _ipv4(proto: int, src: bytes, dst: bytes, l4: bytes, frag: int = 0, ihl: int = 5) -> bytes:
    opts = b"\1" * max(0, (ihl - 5) * 4)
    return struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(opts) + len(l4), 0, frag, 64,
                       proto, 0, src, dst) + opts + l4


def _ipv6(nxt: int, src: bytes, dst: bytes, rest: bytes) -> bytes:
    return struct.pack(">IHBB16s16s", 6 << 28, len(rest), nxt, 64, src, dst) + rest


def _ports(sport: int, dport: int, size: int) -> bytes:
    return struct.pack(">HH", sport, dport) + b"d" * size


def _eth(ethertype: int, payload: bytes, tags: int = 0) -> bytes:
    head = b"\2" * 12
    for i in range(tags):
        head += struct.pack(">HH", 0x88A8 if i == 0 and tags == 2 else 0x8100, 100 + i)
    return head + struct.pack(">H", ethertype) + payload


# each is decoded by one branch of the 5-tuple decoder; its flow: _IP_FLOWS
_IP_PACKETS = [
    _ipv4(17, _V4[0], _V4[1], _ports(5000, 5201, 100)),
    _ipv4(6, _V4[1], _V4[0], _ports(5201, 5000, 20)),
    _ipv4(6, _V4[0], _V4[1], _ports(5000, 5201, 1400)),
    _ipv4(17, _V4[0], _V4[2], _ports(5000, 5201, 30), frag=0x2000),  # first fragment
    _ipv4(17, _V4[0], _V4[2], b"tail" * 5, frag=0x0010),  # later fragment: no ports
    _ipv4(1, _V4[2], _V4[0], b"\x08\0" + b"i" * 30),  # ICMP: no ports
    _ipv4(132, _V4[0], _V4[1], _ports(38412, 38412, 40), ihl=7),  # SCTP, IP options
    _ipv4(47, _V4[0], _V4[1], b"g" * 24),  # GRE: a protocol without a name
    _ipv4(17, _V4[0], _V4[1], b"\x13", ihl=5),  # UDP cut before its ports
    _ipv6(17, _V6[0], _V6[1], _ports(4000, 4001, 60)),
    _ipv6(0, _V6[1], _V6[0], b"\x06\0" + b"\0" * 6 + _ports(80, 4002, 10)),  # hop-by-hop
    _ipv6(44, _V6[0], _V6[1], b"\x11\0\0\0\0\0\0\1" + _ports(4000, 4001, 8)),  # fragment 0
    _ipv6(44, _V6[0], _V6[1], b"\x11\0\x01\x00\0\0\0\1" + b"x" * 16),  # later fragment
    _ipv6(60, _V6[0], _V6[1], b"\x88\x01" + b"\0" * 14 + _ports(1, 2, 4)),  # dest opts, UDP-Lite
    _ipv6(58, _V6[1], _V6[0], b"\x80\0" + b"e" * 20),  # ICMPv6
]


def _flow(version: int, proto: str, src: bytes, sport: int, dst: bytes, dport: int) -> Flow:
    return Flow(version, proto, str(ipaddress.ip_address(src)), sport,
                str(ipaddress.ip_address(dst)), dport)


_IP_FLOWS = [  # the 5-tuple each of _IP_PACKETS was built from
    _flow(4, "udp", _V4[0], 5000, _V4[1], 5201),
    _flow(4, "tcp", _V4[1], 5201, _V4[0], 5000),
    _flow(4, "tcp", _V4[0], 5000, _V4[1], 5201),
    _flow(4, "udp", _V4[0], 5000, _V4[2], 5201),
    _flow(4, "udp", _V4[0], 0, _V4[2], 0),
    _flow(4, "icmp", _V4[2], 0, _V4[0], 0),
    _flow(4, "sctp", _V4[0], 38412, _V4[1], 38412),
    _flow(4, "47", _V4[0], 0, _V4[1], 0),
    _flow(4, "udp", _V4[0], 0, _V4[1], 0),
    _flow(6, "udp", _V6[0], 4000, _V6[1], 4001),
    _flow(6, "tcp", _V6[1], 80, _V6[0], 4002),
    _flow(6, "udp", _V6[0], 4000, _V6[1], 4001),
    _flow(6, "udp", _V6[0], 0, _V6[1], 0),
    _flow(6, "udplite", _V6[0], 1, _V6[1], 2),
    _flow(6, "icmpv6", _V6[1], 0, _V6[0], 0),
]


def _framed(link: int, ip: bytes, variant: int) -> bytes:
    """The IP packet behind link type ``link``'s header (Ethernet: 0–2 VLAN tags)."""
    ethertype = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    if link == 1:
        return _eth(ethertype, ip, tags=variant % 3)
    if link == 113:
        return struct.pack(">HHH8sH", 0, 1, 6, b"\2" * 8, ethertype) + ip
    if link == 276:
        return struct.pack(">HHIHBB8s", ethertype, 0, 2, 1, 0, 6, b"\2" * 8) + ip
    if link in (0, 108):
        family = 2 if ethertype == 0x0800 else (24, 28, 30)[variant % 3]
        return struct.pack("<I" if variant % 2 else ">I", family) + ip
    return ip  # raw IP (101, 12, 14, 228, 229)


_NON_IP = [(1, _eth(0x0806, b"\0\1\x08\0\6\4\0\1" + b"a" * 20)),  # ARP
           (1, b"\2" * 10),  # cut inside the Ethernet header
           (1, _eth(0x8100, b"\0")),  # cut inside a VLAN tag
           (113, b"\0" * 10), (276, b"\0" * 12), (0, b"\0\0"),
           (101, b""), (101, b"\x50" + b"\0" * 30),  # raw, no IP version
           (1, _eth(0x0800, b"\x45" + b"\0" * 10)),  # IPv4 cut before the addresses
           (1, _eth(0x86DD, b"\x60" + b"\0" * 30)),  # IPv6 cut before the addresses
           (147, b"user link type, never decoded")]
LINKS = (1, 113, 276, 0, 108, 101, 12, 14, 228, 229)


def packet(link: int, index: int, variant: int) -> bytes:
    if index < len(_IP_PACKETS):
        return _framed(link, _IP_PACKETS[index], variant)
    return _NON_IP[index % len(_NON_IP)][1]


def classic(order: str, magic: int, link: int, pkts: list[tuple[int, bytes, int]],
            snap: int = 0) -> bytes:
    """A classic pcap of (ns, bytes, extra wire bytes): µs/ns records or Kuznetsov's."""
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snap or 65535, link)]
    for ts, pkt, extra in pkts:
        sec, ns = divmod(ts, 10**9)
        frac = ns if magic == 0xA1B23C4D else ns // 1000
        stored = pkt[:snap] if snap else pkt
        out.append(struct.pack(order + "IIII", sec, frac, len(stored), len(pkt) + extra))
        if magic == 0xA1B2CD34:
            out.append(struct.pack(order + "IHBB", 7, 0x800, 0, 0))
        out.append(stored)
    return b"".join(out)


def _block(order: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack(order + "II", btype, 12 + len(body)) + body + struct.pack(
        order + "I", 12 + len(body))


def section(order: str, ifaces: list[tuple[int, int | None, int, int]],
            pkts: list[tuple[int, int, bytes, int]]) -> bytes:
    """A pcapng section: interfaces (link, if_tsresol, if_tsoffset, snaplen) and packets
    (interface, units, bytes, block type: 6 enhanced, 2 obsolete, 3 simple)."""
    out = [_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))]
    for link, res, offset, snap in ifaces:
        opts = b"" if res is None else struct.pack(order + "HHB3x", 9, 1, res)
        opts += struct.pack(order + "HHq", 14, 8, offset) if offset else b""
        out.append(_block(order, 1, struct.pack(order + "HHI", link, 0, snap) + opts
                          + struct.pack(order + "HH", 0, 0)))
    for iface, units, pkt, btype in pkts:
        if btype == 3:
            out.append(_block(order, 3, struct.pack(order + "I", len(pkt)) + pkt))
        elif btype == 2:
            out.append(_block(order, 2, struct.pack(order + "HHIIII", iface, 0, units >> 32,
                                                    units & 0xFFFFFFFF, len(pkt), len(pkt))
                              + pkt))
        else:
            out.append(_block(order, 6, struct.pack(order + "IIIII", iface, units >> 32,
                                                    units & 0xFFFFFFFF, len(pkt), len(pkt))
                              + pkt))
    return b"".join(out)


@pytest.mark.parametrize("link", LINKS)
def test_every_packet_shape_decodes_to_the_flow_it_was_built_from(link: int) -> None:
    for variant in range(6):  # Ethernet with 0-2 VLAN tags, BSD loopback's families and orders
        pkts = [(10**18 + k * 1000, packet(link, k, variant), 0) for k in range(len(_IP_PACKETS))]
        flows, ids = flow_ids(parse_pcap(classic("<", 0xA1B23C4D, link, pkts)))
        assert [flows[f].flow for f in ids] == _IP_FLOWS


_packet_choice = st.tuples(st.integers(0, len(_IP_PACKETS) + len(_NON_IP) - 1),
                           st.integers(0, 5),  # framing variant
                           st.integers(-3_000_000, 40_000_000))  # ns to the previous packet


def _times(choices: list[tuple[int, int, int]]) -> list[int]:
    t, out = 1_700_000_000 * 10**9, []
    for _, _, step in choices:
        t += step
        out.append(t)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(order=st.sampled_from("<>"), magic=st.sampled_from([0xA1B2C3D4, 0xA1B23C4D, 0xA1B2CD34]),
       link=st.sampled_from(LINKS), snap=st.sampled_from([0, 30, 64]),
       choices=st.lists(_packet_choice, max_size=60))
def test_classic_captures_give_the_same_flows(order: str, magic: int, link: int, snap: int,
                                              choices: list[tuple[int, int, int]]) -> None:
    pkts = [(t, packet(link, i, v), v % 2 * 4) for (i, v, _), t in zip(
        choices, _times(choices), strict=True)]
    rec = parse_pcap(classic(order, magic, link, pkts, snap))
    assert rec.damage is None and rec.packets == len(pkts)
    unit = 1 if magic == 0xA1B23C4D else 1000
    assert rec.ts_ns.tolist() == [t // unit * unit for t, _, _ in pkts]
    assert rec.orig_len.tolist() == [len(pkt) + extra for _, pkt, extra in pkts]
    assert rec.cap_len.tolist() == [min(len(pkt), snap or len(pkt)) for _, pkt, _ in pkts]
    flows = _check_flows(rec)
    _, ids = flow_ids(rec)
    for (i, _v, _), f in zip(choices, ids.tolist(), strict=True):
        if i < len(_IP_PACKETS) and snap == 0:
            assert flows[f].flow == _IP_FLOWS[i]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sections=st.lists(st.tuples(
    st.sampled_from("<>"),
    st.lists(st.tuples(st.sampled_from(LINKS), st.sampled_from([None, 6, 9, 3, 0x80 | 20, 0x80]),
                       st.sampled_from([0, 100, -5]), st.sampled_from([0, 48])),
             min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), _packet_choice, st.sampled_from([6, 6, 6, 2, 3])),
             max_size=40)), min_size=1, max_size=3))
def test_pcapng_captures_give_the_same_flows(sections: list[tuple[
        str, list[tuple[int, int | None, int, int]],
        list[tuple[int, tuple[int, int, int], int]]]]) -> None:
    data = b""
    # per packet: (interface, its description, units, bytes, block type, _IP_PACKETS index or
    # more, whether it was framed for the link it is decoded with)
    written: list[tuple[int, tuple[int, int | None, int, int], int, bytes, int, int, bool]] = []
    n_if = 0
    for order, ifaces, pkts in sections:
        times = _times([c for _, c, _ in pkts])
        blocks = []
        for (iface, (i, v, _), btype), t in zip(pkts, times, strict=True):
            iface %= len(ifaces)
            pkt = packet(ifaces[iface][0], i, v)
            blocks.append((iface, t // 1000, pkt, btype))
            used = 0 if btype == 3 else iface  # a simple packet: interface 0 of the section
            written.append((n_if + used, ifaces[used], t // 1000, pkt, btype, i,
                            ifaces[used][0] == ifaces[iface][0]))
        data += section(order, ifaces, blocks)
        n_if += len(ifaces)
    rec = parse_pcap(data)
    assert rec.damage is None and rec.packets == len(written)
    assert rec.if_linktype.tolist() == [link for _, ifaces, _ in sections for link, *_ in ifaces]
    flows = _check_flows(rec)
    _, ids = flow_ids(rec)
    for k, (g, (_link, res, offset, snap), units, pkt, btype, i, framed) in enumerate(written):
        stored = min(len(pkt), snap) if btype == 3 and snap else len(pkt)
        assert (rec.iface[k], rec.orig_len[k], rec.cap_len[k]) == (g, len(pkt), stored)
        assert rec.ts_ns[k] == (PcapRecords.NO_TIME if btype == 3 else _ns(units, res, offset))
        if i < len(_IP_PACKETS) and stored == len(pkt) and framed:
            assert flows[ids[k]].flow == _IP_FLOWS[i]


def _ns(units: int, res: int | None, offset_s: int) -> int:
    """pcapng timestamp units at if_tsresol ``res`` (None: µs) and if_tsoffset, in ns, as int64
    (a resolution of 10^-3 s times these units leaves int64: wraps, as the decoder's does)."""
    res = 6 if res is None else res
    if res & 0x80:
        ns = (units >> (res & 0x7F)) * 10**9 + (
            (units & ((1 << (res & 0x7F)) - 1)) * 10**9 >> (res & 0x7F)) + offset_s * 10**9
    elif res <= 9:
        ns = units * 10 ** (9 - res) + offset_s * 10**9
    else:
        ns = units // 10 ** (res - 9) + offset_s * 10**9
    return (ns + 2**63) % 2**64 - 2**63


@pytest.mark.parametrize("back_ns", [1_500_000, 3_500_000, 60_000_000])
def test_a_flow_whose_clock_steps_back_is_sorted(back_ns: int) -> None:
    """A timestamp a place or two back stays in the decoder's window; one further back (60
    places) makes it sort the flow's timestamps in a second pass: the sorted sums either way."""
    pkt = _framed(1, _IP_PACKETS[0], 0)
    times = [10**18 + i * 1_000_000 for i in range(200)]
    times[120] -= back_ns
    data = classic("<", 0xA1B23C4D, 1, [(t, pkt, 0) for t in times])
    assert _check_flows(parse_pcap(data)) == scan_capture(data).flows
    [flow] = scan_capture(data).flows
    assert isinstance(flow, FlowStats) and flow.qos is not None
    assert flow.qos.delay_ms == pytest.approx((max(times) - min(times)) / 199 / 1e6)
    gaps = [b - a for a, b in itertools.pairwise(sorted(times))]
    jitter_ns = sum(abs(b - a) for a, b in itertools.pairwise(gaps)) / (len(gaps) - 1)
    assert flow.qos.jitter_ms == pytest.approx(jitter_ns / 1e6)


# --- damaged files --------------------------------------------------------------------------------

_GENERATED = {
    "classic-be-ns": classic(">", 0xA1B23C4D, 1, [
        (10**18 + i * 7_000, packet(1, i % 20, i), 0) for i in range(300)]),
    "pcapng-multi": section("<", [(1, None, 0, 0), (101, 9, 0, 0)], [
        (i % 2, 10**15 + i, packet(1 if i % 2 == 0 else 101, i % 20, i), 6) for i in range(200)])
    + section(">", [(113, 0x80 | 10, 3, 0)], [(0, i * 1000, packet(113, i % 15, i), 6)
                                            for i in range(100)]),
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted([*CORPUS, *_GENERATED])), cut=st.integers(0, 80_000),
       flips=st.lists(st.tuples(st.integers(0, 80_000), st.integers(0, 7)), max_size=6))
def test_damaged_captures_give_the_same_flows_or_error(
        name: str, cut: int, flips: list[tuple[int, int]]) -> None:
    original = _GENERATED[name] if name in _GENERATED else (DATA / name).read_bytes()
    data = _damaged(original, cut, flips)
    reader, scanned = _outputs(data)
    assert scanned == reader
    if not reader.startswith("("):  # both raised the same error
        return
    rec = parse_pcap(data)
    assert np.all(rec.data_off + rec.cap_len <= len(data))
    _check_flows(rec)


def test_the_command_imports_no_numpy(tmp_path: Path) -> None:
    """`virtbench parse pcap FILE --json` runs without numpy, rich, pydantic or dataclasses
    (which imports inspect): their import alone costs about as long as tcpdump's whole read of
    a 1M-packet file."""
    probe = ("import sys; from virtbench.cli.entry import main; sys.argv = ['virtbench', "
             f"'parse', 'pcap', {str(DATA / 'two_flows.pcapng')!r}, '--json'];\n"
             "try:\n main()\nexcept SystemExit:\n pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'numpy', 'rich', 'pydantic', 'typer', 'click', 'dataclasses'}), "
             "file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=300)
    assert proc.stderr.strip().splitlines()[-1] == "[]"
    assert '"metric": "packets"' in proc.stdout


def test_the_command_reads_a_compressed_capture_from_stdin() -> None:
    cmd = [sys.executable, "-m", "virtbench", "parse", "pcap"]
    piped = subprocess.run([*cmd, "-", "--json", "--flow", "udp"], capture_output=True,
                           check=True, input=(DATA / "two_flows_us.pcap.zst").read_bytes(),
                           timeout=300).stdout
    named = subprocess.run([*cmd, str(DATA / "two_flows_us.pcap"), "--json", "--flow", "udp"],
                           capture_output=True, check=True, timeout=300).stdout
    assert piped == named and b'"proto": "udp"' in named
