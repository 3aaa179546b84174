"""Each tool's own human-readable report of the same run against what the parser read.

fio json,normal prints both in one file; the iperf3 server logged its text report of the test
the client saved as JSON; irtt printed its summary while writing the JSON; bonnie++ printed the
table beside the CSV line. Human text is rounded (3 significant digits), so rates compare within
that rounding and counts exactly.
"""

from __future__ import annotations

import re

import pytest

from virtbench.model import Measurement
from virtbench.plugins import get_parser

from .corpus import DATA

_BINARY = {"": 1.0, "k": 1024.0, "M": 1024.0**2, "G": 1024.0**3}
_DECIMAL = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def _read(tool: str, name: str) -> list[Measurement]:
    return get_parser(tool).read((DATA / name).read_bytes()).measurements


def _value(ms: list[Measurement], metric: str, **labels: str) -> float:
    found = [m for m in ms if m.metric == metric and m.labels == labels]
    assert len(found) == 1, (metric, labels, found)
    assert found[0].value is not None
    return found[0].value


def _fio_normal(text: str) -> list[tuple[str, float, float, float]]:
    """(direction, IOPS, BW KiB/s, clat avg µs) per job direction of fio's normal output."""
    rows = []
    normal = text[text.rindex("\n}") :]
    pattern = (r"^\s+(read|write|trim): IOPS=([\d.]+)(k?) BW=([\d.]+)(\w?)iB/s.*\n"
               r"(?:\s+slat.*\n)?"
               r"\s+clat \((usec|nsec|msec)\): min=\s*\S+ max=\s*\S+ avg=\s*([\d.]+)")
    for m in re.finditer(pattern, normal.replace(", ", " "), re.MULTILINE):
        iops = float(m.group(2)) * (1000 if m.group(3) else 1)
        bw = float(m.group(4)) * _BINARY[m.group(5) or ""] / 1024
        clat = float(m.group(7)) * {"usec": 1, "nsec": 1e-3, "msec": 1e3}[m.group(6)]
        rows.append((m.group(1), iops, bw, clat))
    return rows


@pytest.mark.parametrize("version", ["3.25", "3.33", "3.39"])
def test_fio_json_and_normal_of_one_run_agree(version: str) -> None:
    name = f"fio/fio{version}-json-normal-write-randrw.txt"
    ms = _read("fio", name)
    normal = _fio_normal((DATA / name).read_text())
    series = ["seqwrite", "randrw_read", "randrw_write"]
    assert [d for d, *_ in normal] == ["write", "read", "write"]
    for prefix, (_d, iops, bw, clat) in zip(series, normal, strict=True):
        assert _value(ms, f"{prefix}_iops") == pytest.approx(iops, rel=0.005)
        assert _value(ms, f"{prefix}_bandwidth_KiBps") == pytest.approx(bw, rel=0.005)
        assert _value(ms, f"{prefix}_clat_mean_us") == pytest.approx(clat, rel=0.001)
    text = (DATA / name).read_text()
    cpu = re.findall(r"cpu\s+: usr=([\d.]+)%, sys=([\d.]+)%", text)
    assert _value(ms, "randrw_cpu_sys_pct") == pytest.approx(float(cpu[1][1]), abs=0.01)


@pytest.mark.parametrize("version", ["3.25", "3.33", "3.39"])
def test_fio_numjobs_rows_and_total_match_fio_group_line(version: str) -> None:
    name = f"fio/fio{version}-numjobs2-randread-json-normal.txt"
    ms = _read("fio", name)
    text = (DATA / name).read_text()
    normal = _fio_normal(text)
    for k, (_d, iops, bw, clat) in enumerate(normal):
        assert _value(ms, "randread_iops", job=f"nj#{k}") == pytest.approx(iops, rel=0.005)
        assert _value(ms, "randread_bandwidth_KiBps", job=f"nj#{k}") == pytest.approx(bw,
                                                                                      rel=0.005)
        assert _value(ms, "randread_clat_mean_us", job=f"nj#{k}") == pytest.approx(clat, rel=1e-3)
    group = re.search(r"READ: bw=([\d.]+)MiB/s", text)
    assert group is not None
    total = _value(ms, "randread_bandwidth_KiBps", job="total")
    # fio's group line is io / longest runtime; the sum of per-job rates is slightly higher.
    assert total == pytest.approx(float(group.group(1)) * 1024, rel=0.02)
    assert total == pytest.approx(sum(bw for _d, _i, bw, _c in normal), rel=0.01)


def test_fio_gtod_reduce_latency_is_not_measured_not_zero() -> None:
    ms = _read("fio", "fio/fio3.33-gtod-reduce-randread-json-normal.txt")
    clat = [m for m in ms if m.metric == "randread_clat_mean_us"]
    assert [(m.value, m.status) for m in clat] == [(None, "not_measured")]
    assert not [m for m in ms if "_p99" in m.metric]
    text = (DATA / "fio/fio3.33-gtod-reduce-randread-json-normal.txt").read_text()
    assert "clat (" not in text[text.rindex("\n}") :]  # fio's own report prints no latency


def _iperf3_server_receiver(name: str, role: str = "receiver") -> list[tuple[str, float]]:
    text = (DATA / name).read_text()
    return [(m.group(1), float(m.group(2)) * _DECIMAL[m.group(3)] / 1e6)
            for m in re.finditer(r"^\[\s*(\S+?)\](?:\[\S+\])?\s+\S+\s+sec\s+\S+ \S+\s+([\d.]+) "
                                 rf"(\w?)bits/sec.*{role}\s*$", text, re.MULTILINE)]


@pytest.mark.parametrize(("json_name", "role", "metric"), [
    ("iperf3.12-tcp-loopback", "receiver", "throughput_mbps"),
    ("iperf3.12-tcp-reverse-loopback", "sender", "sender_throughput_mbps"),  # -R: server sends
    ("iperf3.12-udp-100M-loopback", "receiver", "throughput_mbps"),
    ("iperf3.18-tcp-json-stream-loopback", "receiver", "throughput_mbps"),
    ("iperf3.18-udp-json-stream-loopback", "receiver", "throughput_mbps"),
    ("iperf3.18-udp-loopback", "receiver", "throughput_mbps"),
    ("iperf3.9-tcp-loopback", "receiver", "throughput_mbps"),
])
def test_iperf3_client_json_matches_server_text(json_name: str, role: str, metric: str) -> None:
    ms = _read("iperf3", f"iperf3/{json_name}.json")
    lines = _iperf3_server_receiver(f"iperf3/{json_name}.server.txt", role)
    assert len(lines) == 1
    assert _value(ms, metric) == pytest.approx(lines[0][1], rel=0.006)


def test_iperf3_parallel_streams_and_sum_match_server_text() -> None:
    ms = _read("iperf3", "iperf3/iperf3.12-tcp-P2-loopback.json")
    lines = dict(_iperf3_server_receiver("iperf3/iperf3.12-tcp-P2-loopback.server.txt"))
    assert set(lines) == {"6", "9", "SUM"}
    assert _value(ms, "throughput_mbps") == pytest.approx(lines["SUM"], rel=0.006)
    streams = sorted(m.value or 0 for m in ms
                     if m.metric == "throughput_mbps" and "stream" in m.labels)
    assert streams == pytest.approx(sorted([lines["6"], lines["9"]]), rel=0.006)
    assert sum(streams) == pytest.approx(_value(ms, "throughput_mbps"), rel=1e-6)


def test_iperf3_bidir_both_directions_match_server_text() -> None:
    ms = _read("iperf3", "iperf3/iperf3.12-tcp-bidir-loopback.json")
    text = (DATA / "iperf3/iperf3.12-tcp-bidir-loopback.server.txt").read_text()
    rx = re.search(r"\[RX-S\]\s+0\.00-\S+\s+sec\s+\S+ \S+\s+([\d.]+) Gbits/sec\s+receiver", text)
    tx = re.search(r"\[TX-S\]\s+0\.00-\S+\s+sec\s+\S+ \S+\s+([\d.]+) Gbits/sec\s+(\d+)\s+sender",
                   text)
    assert rx is not None and tx is not None
    # The server receives what the client sends (client_to_server) and sends the reverse.
    up = _value(ms, "throughput_mbps", direction="client_to_server")
    assert up == pytest.approx(float(rx.group(1)) * 1e3, rel=0.006)
    down_sent = _value(ms, "sender_throughput_mbps", direction="server_to_client")
    assert down_sent == pytest.approx(float(tx.group(1)) * 1e3, rel=0.006)
    assert _value(ms, "tcp_retransmits", direction="server_to_client") == int(tx.group(2))


@pytest.mark.parametrize("stem", ["iperf3.12-udp-100M-loopback", "iperf3.9-udp-loopback",
                                  "iperf3.18-udp-json-stream-loopback"])
def test_iperf3_udp_packets_and_loss_match_server_text(stem: str) -> None:
    ms = _read("iperf3", f"iperf3/{stem}.json")
    text = (DATA / f"iperf3/{stem}.server.txt").read_text()
    last = re.findall(r"(\d+)/(\d+) \(([\d.]+)%\)\s+receiver", text)
    assert len(last) == 1
    lost, total, pct = last[0]
    assert _value(ms, "udp_lost_packets") == int(lost)
    assert _value(ms, "udp_packets") == int(total)
    decimals = len(pct.partition(".")[2])  # iperf3 prints 0.52% (3.12) or 6.6% (3.18)
    assert _value(ms, "udp_loss_pct") == pytest.approx(float(pct), abs=0.5 * 10**-decimals)


def test_iperf3_tcp_rtt_from_streams_sender() -> None:
    ms = _read("iperf3", "iperf3/iperf3.12-tcp-loopback.json")
    low, mean, high = (_value(ms, f"tcp_rtt_{k}_ms") for k in ("min", "mean", "max"))
    assert 0 < low <= mean <= high


def test_iperf3_interrupted_run_is_partial_with_receiver_not_measured() -> None:
    parsed = get_parser("iperf3").read(
        (DATA / "iperf3/iperf3.12-tcp-interrupted-loopback.json").read_bytes())
    assert parsed.partial
    assert any("interrupt" in w for w in parsed.warnings)
    rate = [m for m in parsed.measurements if m.metric == "throughput_mbps"]
    assert [(m.value, m.status) for m in rate] == [(None, "not_measured")]
    assert _value(parsed.measurements, "sender_throughput_mbps") > 0


def _irtt_text(name: str) -> tuple[int, int, float, float]:
    text = (DATA / name).read_text()
    counts = re.search(r"packets sent/received: (\d+)/(\d+) \(([\d.]+)% loss\)", text)
    rtt = re.search(r"^\s+RTT\s+\S+\s+([\d.]+)(µs|ms|ns|s)\s", text, re.MULTILINE)
    assert counts is not None and rtt is not None
    unit = {"ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1e3}[rtt.group(2)]
    return int(counts.group(1)), int(counts.group(2)), float(counts.group(3)), \
        float(rtt.group(1)) * unit


@pytest.mark.parametrize("stem", ["irtt0.9-default-loopback", "irtt0.9-tbf-loss-netns",
                                  "irtt0.9-tstamp-none-loopback", "irtt0.9-plain-loopback"])
def test_irtt_json_matches_irtt_text(stem: str) -> None:
    json_name = f"irtt/{stem}.json" if "plain" in stem else f"irtt/{stem}.json.gz"
    ms = _read("irtt", json_name)
    sent, received, loss, rtt_mean = _irtt_text(f"irtt/{stem}.txt")
    assert _value(ms, "packets_sent") == sent
    assert _value(ms, "packets_received") == received
    assert _value(ms, "packets_lost") == sent - received
    assert _value(ms, "probe_loss_pct") == pytest.approx(loss, abs=0.005)
    assert _value(ms, "rtt_mean_ms") == pytest.approx(rtt_mean, rel=0.006)


def test_bonnie_196_table_reads_like_its_csv() -> None:
    table = {m.metric: m for m in _read("bonnie++", "bonnie/public-1.96-devback1-table.txt")}
    csv = {m.metric: m for m in _read("bonnie++", "bonnie/public-1.96-devback1-stdout.txt")}
    assert set(table) == set(csv)
    for metric, m in csv.items():
        assert (table[metric].value, table[metric].status) == (m.value, m.status), metric
    assert table["seq_output_rewrite_KiBps"].value == 106363  # fills its cell
    assert table["seq_output_rewrite_cpu_pct"].value == 15


def test_iperf3_39_bidir_directions_match_server_text() -> None:
    parsed = get_parser("iperf3").read(
        (DATA / "iperf3/iperf3.9-tcp-bidir-loopback.json").read_bytes())
    text = (DATA / "iperf3/iperf3.9-tcp-bidir-loopback.server.txt").read_text()
    rx = re.search(r"\[RX-S\]\s+0\.00-\S+\s+sec\s+\S+ \S+\s+([\d.]+) Gbits/sec\s+receiver", text)
    assert rx is not None
    up = _value(parsed.measurements, "throughput_mbps", direction="client_to_server")
    assert up == pytest.approx(float(rx.group(1)) * 1e3, rel=0.006)
    assert _value(parsed.measurements, "throughput_mbps", direction="server_to_client") > 0
    assert any("before 3.11: end sums cover server_to_client only" in w
               for w in parsed.warnings)
