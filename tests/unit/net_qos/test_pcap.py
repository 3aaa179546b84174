"""The capture reader and flow analysis against tshark on real captures made here (see
tests/data/pcap/README.md), plus hand-built files for the corners tools here do not write."""

from __future__ import annotations

import gzip
import json
import lzma
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench.net_qos.capture_report import analyse_capture, flow_measurements
from virtbench.net_qos.flows import (
    FlowSpecError,
    capture_flows,
    flow_ids,
    parse_flow_spec,
    select_flows,
)
from virtbench.net_qos.pcap import PcapError, PcapRecords, parse_pcap, read_pcap
from virtbench.net_qos.study import capture_qos

DATA = Path(__file__).resolve().parents[2] / "data" / "pcap"
# frames and bytes from `tshark -r FILE -q -z io,stat,0` when the files were captured
EXPECTED = {"tcp_snap96.pcap": (214, 2638022), "udp_1200B_snap96.pcap": (523, 647174)}
TWO_FLOWS = {"two_flows_us.pcap": ("pcap", 1), "two_flows_ns.pcap": ("pcap-ns", 1),
             "two_flows.pcapng": ("pcapng", 1), "two_flows_sll.pcap": ("pcap", 113),
             "two_flows_sll2.pcap": ("pcap", 276)}
ALL = sorted([*EXPECTED, *TWO_FLOWS])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_match_tshark_recorded(name: str) -> None:
    records = read_pcap(DATA / name)
    assert (records.packets, records.bytes) == EXPECTED[name]
    assert records.snaplen == 96
    assert np.all(records.cap_len <= 96)
    assert np.all(np.diff(records.ts_ns) >= 0)


@pytest.mark.parametrize("name", sorted(TWO_FLOWS))
def test_format_and_link_type(name: str) -> None:
    records = read_pcap(DATA / name)
    assert (records.format, records.linktype) == TWO_FLOWS[name]
    assert records.damage is None


def _ours(records: PcapRecords) -> dict[tuple[str, str, int, str, int], list[int]]:
    return {(f.flow.proto, f.flow.src, f.flow.sport, f.flow.dst, f.flow.dport):
            [f.packets, f.bytes, f.first_ns, f.last_ns] for f in capture_flows(records)}


@pytest.mark.parametrize("name", ALL)
def test_every_flow_matches_tshark(name: str, tshark_flows: Any) -> None:
    # µs files: tshark prints 9 decimals too, so the ns values must agree exactly everywhere
    assert _ours(read_pcap(DATA / name)) == tshark_flows(DATA / name)


@pytest.mark.parametrize(("spec", "display_filter"), [
    ("udp", "udp"), ("tcp", "tcp"), ("tcp:5201", "tcp.port == 5201"),
    ("udp:5202", "udp.port == 5202"),
    ("tcp:[fd00:98::1]:5201:*:*", "ipv6.src == fd00:98::1 && tcp.srcport == 5201"),
])
def test_flow_selection_matches_tshark_filter(spec: str, display_filter: str,
                                              tshark_flows: Any) -> None:
    path = DATA / "two_flows.pcapng"
    chosen = select_flows(capture_flows(read_pcap(path)), parse_flow_spec(spec))
    ours = {(f.flow.proto, f.flow.src, f.flow.sport, f.flow.dst, f.flow.dport):
            [f.packets, f.bytes, f.first_ns, f.last_ns] for f in chosen}
    assert ours == tshark_flows(path, display_filter)
    assert ours  # the capture has such flows: an empty match would prove nothing


@pytest.mark.parametrize("name", ALL)
def test_flow_formulas_equal_capture_qos(name: str) -> None:
    """The per-flow integer sums give what capture_qos gives on the flow's own packets."""
    records = read_pcap(DATA / name)
    flows, flow_id = flow_ids(records)
    assert flows == capture_flows(records)
    for i, f in enumerate(flows):  # flows come in id order
        if f.qos is None:
            assert f.packets < 3
            continue
        mask = flow_id == i
        ref = capture_qos(records.ts_ns[mask], records.orig_len[mask])
        assert (f.qos.packets, f.qos.bytes) == (ref.packets, ref.bytes) == (f.packets, f.bytes)
        for a, b in ((f.qos.delay_ms, ref.delay_ms), (f.qos.jitter_ms, ref.jitter_ms),
                     (f.qos.throughput_mbps, ref.throughput_mbps)):
            assert a == pytest.approx(b, rel=1e-12)


def _to_big_endian(little: bytes) -> bytes:
    """The same classic pcap written big-endian (as a big-endian host's libpcap writes it)."""
    out = bytearray(struct.pack(">IHHiIII", *struct.unpack_from("<IHHiIII", little, 0)))
    o = 24
    while o < len(little):
        ts, frac, cap, orig = struct.unpack_from("<IIII", little, o)
        out += struct.pack(">IIII", ts, frac, cap, orig) + little[o + 16:o + 16 + cap]
        o += 16 + cap
    return bytes(out)


def test_big_endian_classic_reads_like_little_endian(tmp_path: Path, tshark_flows: Any) -> None:
    little = (DATA / "two_flows_ns.pcap").read_bytes()
    big = tmp_path / "big.pcap"
    big.write_bytes(_to_big_endian(little))
    assert big.read_bytes()[:4] == bytes.fromhex("a1b23c4d")
    assert _ours(read_pcap(big)) == _ours(parse_pcap(little)) == tshark_flows(big)


def test_compressed_captures(tmp_path: Path) -> None:
    raw = (DATA / "two_flows.pcapng").read_bytes()
    want = _ours(parse_pcap(raw))
    assert _ours(parse_pcap(gzip.compress(raw))) == want
    assert _ours(parse_pcap(lzma.compress(raw))) == want
    with pytest.raises(PcapError, match="compressed capture is damaged"):
        parse_pcap(gzip.compress(raw)[:200])
    with pytest.raises(PcapError, match=r"compressed capture is damaged \(xz: "):
        parse_pcap(lzma.compress(raw)[:-20])


@pytest.mark.parametrize(("name", "original"), [
    ("two_flows.pcapng.zst", "two_flows.pcapng"),  # zstd FILE: the frame says its size
    ("two_flows_us.pcap.zst", "two_flows_us.pcap"),  # zstd < FILE: a frame without a size
])
def test_zstd_captures_from_the_zstd_tool(name: str, original: str, tshark_flows: Any) -> None:
    packed = (DATA / name).read_bytes()
    assert packed[:4] == b"\x28\xb5\x2f\xfd"
    records = read_pcap(DATA / name)
    assert records.damage is None
    assert _ours(records) == _ours(read_pcap(DATA / original)) == tshark_flows(DATA / original)
    with pytest.raises(PcapError, match=r"compressed capture is damaged \(zstd: "):
        parse_pcap(packed[: len(packed) // 2])


def test_zstd_capture_on_the_command_line() -> None:
    cmd = [sys.executable, "-m", "virtbench", "parse", "pcap"]
    packed, plain = (subprocess.run([*cmd, str(DATA / name), "--json"], capture_output=True,
                                    text=True, check=True, timeout=300).stdout
                     for name in ("two_flows.pcapng.zst", "two_flows.pcapng"))
    assert json.loads(packed) == json.loads(plain) and json.loads(plain)


def test_pcapng_sections_are_numbered_in_turn() -> None:
    raw = (DATA / "two_flows.pcapng").read_bytes()
    one, two = parse_pcap(raw), parse_pcap(raw + raw)
    assert two.packets == 2 * one.packets and two.if_linktype.size == 2 * one.if_linktype.size
    assert set(two.iface[one.packets:]) == {i + one.if_linktype.size for i in set(one.iface)}


# --- hand-built pcapng: resolutions, offsets, simple packet blocks, big-endian sections --------

def _block(order: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(order + "II", btype, n) + body + struct.pack(order + "I", n)


def _shb(order: str) -> bytes:
    return _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def _idb(order: str, link: int, tsresol: int | None = None, offset: int = 0) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += struct.pack(order + "HHB3x", 9, 1, tsresol)
    if offset:
        opts += struct.pack(order + "HHq", 14, 8, offset)
    opts += struct.pack(order + "HH", 0, 0)
    return _block(order, 1, struct.pack(order + "HHI", link, 0, 0) + opts)


def _udp4(sport: int, dport: int, payload: int = 10) -> bytes:
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28 + payload, 0, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return ip + struct.pack(">HHHH", sport, dport, 8 + payload, 0) + b"p" * payload


def _epb(order: str, iface: int, units: int, pkt: bytes) -> bytes:
    return _block(order, 6, struct.pack(order + "IIIII", iface, units >> 32, units & 0xFFFFFFFF,
                                        len(pkt), len(pkt)) + pkt)


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_timestamp_resolutions_and_raw_ip(order: str) -> None:
    pkt = _udp4(1000, 2000)
    data = (_shb(order) + _idb(order, 101) + _idb(order, 101, tsresol=9)
            + _idb(order, 101, tsresol=0x80 | 20, offset=100)
            + _epb(order, 0, 1_500_000, pkt)  # default µs: 1.5 s
            + _epb(order, 1, 2_000_000_123, pkt)  # ns
            + _epb(order, 2, 3 << 20, pkt))  # 2^-20 s units: 3 s, + 100 s offset
    rec = parse_pcap(data)
    assert rec.damage is None
    assert list(rec.ts_ns) == [1_500_000_000, 2_000_000_123, 103_000_000_000]
    [flow] = capture_flows(rec)
    assert (flow.flow.proto, flow.flow.src, flow.flow.sport, flow.flow.dport) == \
        ("udp", "10.0.0.1", 1000, 2000)
    assert flow.packets == 3 and flow.bytes == 3 * len(pkt)


def test_simple_packet_blocks_have_no_timestamps() -> None:
    pkt = _udp4(7, 9)
    spb = _block("<", 3, struct.pack("<I", len(pkt)) + pkt)
    rec = parse_pcap(_shb("<") + _idb("<", 101) + spb * 4)
    assert rec.packets == 4
    [flow] = capture_flows(rec)
    assert flow.first_ns is None and flow.qos is None
    statuses = {m.metric: m.status for m in flow_measurements(analyse_capture(
        _shb("<") + _idb("<", 101) + spb * 4))}
    assert statuses["study_delay_ms"] == "no_timestamps"


# --- damaged and foreign files ------------------------------------------------------------------

def _record(ts_s: int, frac: int, payload: bytes, orig: int) -> bytes:
    return struct.pack("<IIII", ts_s, frac, len(payload), orig) + payload


def _header(magic: int = 0xA1B2C3D4, snaplen: int = 96) -> bytes:
    return struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, 1)


def test_mixed_lengths_and_long_runs() -> None:
    recs = [_record(10, i, b"x" * 96, 1514) for i in range(1000)]
    recs += [_record(11, i, b"y" * (40 + i % 7), 40 + i % 7) for i in range(100)]
    recs += [_record(12, i, b"z" * 96, 200) for i in range(50)]
    records = parse_pcap(_header() + b"".join(recs))
    assert records.packets == 1150
    assert records.bytes == 1000 * 1514 + sum(40 + i % 7 for i in range(100)) + 50 * 200
    assert records.ts_ns[0] == 10 * 10**9 and records.ts_ns[1] == 10 * 10**9 + 1000


def test_nanosecond_magic() -> None:
    records = parse_pcap(_header(0xA1B23C4D) + _record(1, 5, b"a" * 60, 60))
    assert records.ts_ns[0] == 1_000_000_005


def test_truncated_file_is_read_up_to_the_cut_and_marked() -> None:
    data = _header() + _record(1, 0, b"a" * 60, 60) * 3
    records = parse_pcap(data[:-10])
    assert records.packets == 2
    assert records.damage is not None and "cut short at byte 176" in records.damage
    rows = flow_measurements(analyse_capture(data[:-10]))
    assert rows and {m.status for m in rows} <= {"partial", "too_few_packets"}


@pytest.mark.parametrize(("content", "found"), [
    (b"hello world, this is not a capture file", "looks like text"),
    (b'{"start": {}}', "looks like JSON"),
    (b"\x00\x01\x02\x03" * 10, "unknown binary format"),
    (b"", "only 0 bytes"),
    (b"\x28\xb5\x2f\xfd" + b"\0" * 30, "zstd"),
])
def test_not_a_capture(content: bytes, found: str) -> None:
    with pytest.raises(PcapError, match=found) as info:
        parse_pcap(content)
    assert "\n" not in str(info.value)


def _damaged(data: bytes, cut: int, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data[:max(0, cut)])
    for pos, bit in flips:
        if out:
            out[pos % len(out)] ^= 1 << bit
    return bytes(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(ALL), cut=st.integers(0, 80_000),
       flips=st.lists(st.tuples(st.integers(0, 80_000), st.integers(0, 7)), max_size=4))
def test_damaged_captures_never_crash(name: str, cut: int, flips: list[tuple[int, int]]) -> None:
    original = (DATA / name).read_bytes()
    data = _damaged(original, cut, flips)
    try:
        records = parse_pcap(data)
    except PcapError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert np.all(records.data_off + records.cap_len <= len(data))
    flows = capture_flows(records)
    assert sum(f.packets for f in flows) == records.packets
    if not flips:  # a cut file gives a prefix of the packets, marked unless cut between records
        whole = parse_pcap(original)
        assert np.array_equal(records.ts_ns, whole.ts_ns[:records.packets])
        if records.damage is None and len(data) < len(original):
            assert records.packets < whole.packets


# --- --flow and the command ---------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["tcpx", "tcp:70000", "tcp:1:2", "udp:10.0.0.300:1:10.0.0.1:2",
                                 ""])
def test_bad_flow_spec_says_what_is_accepted(bad: str) -> None:
    with pytest.raises(FlowSpecError, match=r"expected 'udp'|known:"):
        parse_flow_spec(bad)


def test_command_json_and_clear_errors(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "virtbench", "parse", "pcap"]
    out = subprocess.run([*cmd, str(DATA / "two_flows_us.pcap"), "--flow", "udp:5202", "--json"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    rows = json.loads(out)
    packets = {r["labels"]["sport"]: r["value"] for r in rows if r["metric"] == "packets"}
    assert packets == {"35415": 168.0, "5202": 1.0}
    bad = tmp_path / "notes.txt"
    bad.write_text("not a capture\n")
    for argv in ([*cmd, str(bad)], [*cmd, str(DATA / "two_flows_us.pcap"), "--flow", "sctp"],
                 [*cmd, str(tmp_path / "missing.pcap")]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.startswith("error:")


def test_a_flow_whose_clock_steps_back_is_sorted_as_capture_qos_does() -> None:
    # a capture on several CPUs: a few timestamps go back a little (seen in real TCP captures)
    rng = np.random.default_rng(7)
    ts = np.cumsum(rng.integers(1_000, 50_000, 500)) + 10**15
    ts[[50, 51, 300]] -= 120_000
    pkt = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]),
                      bytes([10, 0, 0, 2])) + struct.pack(">HHHH", 9, 7, 26, 0) + b"x" * 18
    data = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 96, 101) + b"".join(
        struct.pack("<IIII", int(t) // 10**9, int(t) % 10**9, len(pkt), len(pkt)) + pkt
        for t in ts)
    [flow] = capture_flows(parse_pcap(data))
    ref = capture_qos(ts.astype(np.int64), np.full(ts.size, len(pkt), np.int64))
    assert flow.qos is not None
    assert (flow.first_ns, flow.last_ns) == (int(ts.min()), int(ts.max()))
    for a, b in ((flow.qos.delay_ms, ref.delay_ms), (flow.qos.jitter_ms, ref.jitter_ms),
                 (flow.qos.throughput_mbps, ref.throughput_mbps)):
        assert a == pytest.approx(b, rel=1e-12)


def test_reads_a_pipe(tmp_path: Path) -> None:
    # `virtbench parse pcap <(zcat capture.pcap.gz)`: a pipe cannot be memory-mapped
    import os
    import threading

    fifo = tmp_path / "capture"
    os.mkfifo(fifo)
    raw = (DATA / "two_flows_sll.pcap").read_bytes()
    # a daemon: a writer no reader ever came for must not hold the test run at exit
    writer = threading.Thread(target=fifo.write_bytes, args=(gzip.compress(raw),), daemon=True)
    writer.start()
    try:
        assert _ours(read_pcap(fifo)) == _ours(parse_pcap(raw))
    finally:
        writer.join(10)
    assert not writer.is_alive(), "the writer was still blocked on the pipe after 10 s"
