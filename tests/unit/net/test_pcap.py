"""The fast pcap reader against tshark's counts on real captures made here."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from virtbench.net_qos.pcap import PcapError, parse_pcap, read_pcap

DATA = Path(__file__).resolve().parents[2] / "data" / "pcap"
# frames and bytes from `tshark -r FILE -q -z io,stat,0` when the files were captured
EXPECTED = {"tcp_snap96.pcap": (214, 2638022), "udp_1200B_snap96.pcap": (523, 647174)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_match_tshark_recorded(name: str) -> None:
    records = read_pcap(DATA / name)
    assert (records.packets, records.bytes) == EXPECTED[name]
    assert records.snaplen == 96
    assert np.all(records.cap_len <= 96)
    assert np.all(np.diff(records.ts_ns) >= 0)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (tshark)")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_match_tshark_live(name: str) -> None:
    out = subprocess.run(["tshark", "-r", str(DATA / name), "-T", "fields", "-e", "frame.len",
                          "-e", "frame.time_epoch"], capture_output=True, text=True, check=True)
    rows = [line.split("\t") for line in out.stdout.splitlines() if line]
    records = read_pcap(DATA / name)
    assert records.packets == len(rows)
    assert records.bytes == sum(int(r[0]) for r in rows)
    # tshark prints µs timestamps for these µs-resolution files: they must agree exactly
    first = round(float(rows[0][1]) * 1e6)
    assert records.ts_ns[0] // 1000 == first


def _record(ts_s: int, frac: int, payload: bytes, orig: int) -> bytes:
    return struct.pack("<IIII", ts_s, frac, len(payload), orig) + payload


def _header(magic: int = 0xA1B2C3D4, snaplen: int = 96) -> bytes:
    return struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, 1)


def test_mixed_lengths_and_long_runs() -> None:
    # a long run of equal lengths (vector path) with odd-sized records between (scalar path)
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


def test_pcapng_is_refused_with_advice() -> None:
    with pytest.raises(PcapError, match="dumpcap -P"):
        parse_pcap(struct.pack("<I", 0x0A0D0D0A) + b"\0" * 40)


def test_truncated_file() -> None:
    data = _header() + _record(1, 0, b"a" * 60, 60)
    with pytest.raises(PcapError, match="truncated"):
        parse_pcap(data[:-10])


def test_not_a_pcap() -> None:
    with pytest.raises(PcapError, match="magic"):
        parse_pcap(b"hello world, this is not a capture file")
