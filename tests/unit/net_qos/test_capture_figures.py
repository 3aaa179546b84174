"""A flow whose packets all carry one timestamp has no throughput (bits / 0 s): not NaN "ok" but
status no_capture_time, on both paths — `parse pcap`'s C scanner and the studies' formulas over
arrays (qos_transfer) — and `parse pcap --json` stays strict JSON."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

from virtbench.net_qos.capture_report import analyse_capture, flow_measurements
from virtbench.net_qos.qos_figures import NO_CAPTURE_TIME
from virtbench.net_qos.study import capture_qos


def _frame(sport: int = 5000, dport: int = 6000, payload: int = 10) -> bytes:
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28 + payload, 0, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    udp = struct.pack(">HHHH", sport, dport, 8 + payload, 0) + b"p" * payload
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp


def _pcap(stamps: list[tuple[int, int]]) -> bytes:
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # Ethernet
    frame = _frame()
    return header + b"".join(struct.pack("<IIII", s, us, len(frame), len(frame)) + frame
                             for s, us in stamps)


def test_scanner_path_three_packets_one_timestamp() -> None:
    rows = flow_measurements(analyse_capture(_pcap([(100, 5)] * 3)))
    by_metric = {r.metric: r for r in rows}
    assert by_metric["packets"].value == 3
    throughput = by_metric["study_throughput_mbps"]
    assert (throughput.value, throughput.status) == (None, NO_CAPTURE_TIME)
    # The gaps are all 0: the mean gap and its change are 0, a measurement.
    assert (by_metric["study_delay_ms"].value, by_metric["study_delay_ms"].status) == (0.0, "ok")


def test_scanner_path_distinct_timestamps_still_measure() -> None:
    rows = flow_measurements(analyse_capture(_pcap([(100, 0), (100, 1000), (100, 2000)])))
    throughput = next(r for r in rows if r.metric == "study_throughput_mbps")
    assert throughput.status == "ok" and throughput.value is not None and throughput.value > 0


def test_array_path_three_packets_one_timestamp() -> None:
    qos = capture_qos(np.array([7, 7, 7], dtype=np.int64), np.array([60, 60, 60], dtype=np.int64))
    assert qos.throughput_mbps is None
    figures = {name: (value, status) for name, value, status in qos.figures()}
    assert figures["study_throughput_mbps"] == (None, NO_CAPTURE_TIME)
    assert figures["study_jitter_ms"] == (0.0, "ok")


def test_parse_pcap_json_is_strict(tmp_path: Path) -> None:
    capture = tmp_path / "one-stamp.pcap"
    capture.write_bytes(_pcap([(100, 5)] * 3))
    done = subprocess.run([sys.executable, "-m", "virtbench", "parse", "pcap", str(capture),
                           "--json"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr

    def strict(token: str) -> float:
        raise AssertionError(f"not strict JSON: {token}")

    rows = json.loads(done.stdout, parse_constant=strict)
    throughput = [r for r in rows if r["metric"] == "study_throughput_mbps"]
    assert [(r["value"], r["status"]) for r in throughput] == [(None, NO_CAPTURE_TIME)]
    table = subprocess.run([sys.executable, "-m", "virtbench", "parse", "pcap", str(capture)],
                           capture_output=True, text=True, check=False)
    assert table.returncode == 0 and "nan" not in table.stdout.lower(), table.stdout


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def test_a_time_before_1970_is_invalid_not_ok() -> None:
    """A pcapng interface whose if_tsoffset puts its packets before the epoch (found by
    fuzzing: first_time_s -36119294 s)."""
    shb = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    options = struct.pack("<HHq", 14, 8, -10**9) + struct.pack("<HH", 0, 0)
    idb = _block(1, struct.pack("<HHI", 1, 0, 0) + options)  # Ethernet, offset -10^9 s
    frame = _frame()
    packets = b"".join(_block(6, struct.pack("<IIIII", 0, 0, us, len(frame), len(frame)) + frame)
                       for us in (5, 6, 7))
    rows = {r.metric: r for r in flow_measurements(analyse_capture(shb + idb + packets))}
    assert (rows["first_time_s"].value, rows["first_time_s"].status) == (None, "invalid")
    assert rows["packets"].value == 3 and rows["study_delay_ms"].status == "ok"
