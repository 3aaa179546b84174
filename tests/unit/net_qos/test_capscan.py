"""The one-pass C scanner (what `virtbench parse pcap` runs) gives exactly the flows of the
per-packet reader and its flow analysis (read_pcap + capture_flows), on every capture in
tests/data/pcap and on generated ones: both byte orders, µs/ns/Kuznetsov records, pcapng with
several sections and interfaces of different link types and resolutions, VLAN, IPv6 extension
headers, fragments, non-IP packets, clocks that step back, and damaged files."""

from __future__ import annotations

import itertools
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench.net_qos.capture_scan import scan_capture
from virtbench.net_qos.flows import FlowStats, capture_flows
from virtbench.net_qos.pcap import PcapError, parse_pcap, read_pcap

from .test_pcap import _damaged

DATA = Path(__file__).resolve().parents[2] / "data" / "pcap"
CORPUS = sorted(p.name for p in DATA.iterdir() if p.suffix in (".pcap", ".pcapng", ".zst"))


def _both(data: bytes) -> tuple[str, str]:
    """(format, packets, damage, flows) of both paths, or the error each raised, as repr (exact
    for floats, and NaN, the throughput of a flow without duration, equals itself there)."""
    try:
        rec = parse_pcap(data)
        reader: object = (rec.format, rec.packets, rec.damage, capture_flows(rec))
    except PcapError as exc:
        reader = str(exc)
    try:
        scan = scan_capture(data)
        scanned: object = (scan.format, scan.packets, scan.damage, scan.flows)
    except PcapError as exc:
        scanned = str(exc)
    return repr(reader), repr(scanned)


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_files_give_the_same_flows(name: str) -> None:
    rec = read_pcap(DATA / name)
    scan = scan_capture(DATA / name)
    assert (scan.format, scan.packets, scan.damage) == (rec.format, rec.packets, rec.damage)
    assert scan.flows == capture_flows(rec)
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


# (link type, packet): each is decoded by one branch of the 5-tuple decoder
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
    reader, scanned = _both(classic(order, magic, link, pkts, snap))
    assert scanned == reader


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
    for order, ifaces, pkts in sections:
        times = _times([c for _, c, _ in pkts])
        blocks = []
        for (iface, (i, v, _), btype), t in zip(pkts, times, strict=True):
            iface %= len(ifaces)
            blocks.append((iface, t // 1000, packet(ifaces[iface][0], i, v), btype))
        data += section(order, ifaces, blocks)
    reader, scanned = _both(data)
    assert scanned == reader


@pytest.mark.parametrize("back_ns", [1_500_000, 3_500_000, 60_000_000])
def test_a_flow_whose_clock_steps_back_is_sorted_by_both(back_ns: int) -> None:
    """A timestamp a place or two back stays in the scanner's window; one further back (60
    places) makes it sort the flow's timestamps in a second pass: the same sums either way."""
    pkt = _framed(1, _IP_PACKETS[0], 0)
    times = [10**18 + i * 1_000_000 for i in range(200)]
    times[120] -= back_ns
    data = classic("<", 0xA1B23C4D, 1, [(t, pkt, 0) for t in times])
    reader, scanned = _both(data)
    assert scanned == reader
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
    reader, scanned = _both(_damaged(original, cut, flips))
    assert scanned == reader


def test_the_command_imports_no_numpy(tmp_path: Path) -> None:
    """`virtbench parse pcap FILE --json` runs without numpy, rich, pydantic or dataclasses
    (which imports inspect): their import alone costs about as long as tcpdump's whole read of
    a 1M-packet file."""
    probe = ("import sys; from virtbench.cli.entry import main; sys.argv = ['virtbench', "
             f"'parse', 'pcap', {str(DATA / 'two_flows.pcapng')!r}, '--json'];\n"
             "try:\n main()\nexcept SystemExit:\n pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'numpy', 'rich', 'pydantic', 'numba', 'typer', 'click', 'dataclasses'}), "
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
