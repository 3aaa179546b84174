"""A figure a tool output states but that cannot be a measurement (NaN, Infinity, a negative
rate, count or time, a proportion over 100 %) is never an ok value: every parser gives it
status ``invalid`` (value None) and a warning naming the metric; ``parse --json`` stays strict
JSON. Reproduces `parse` printing NaN, Infinity and -1 rates with status ok."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from virtbench.model import Domain, Measurement, Metric
from virtbench.parsers.fio import parse_fio
from virtbench.parsers.iperf3 import iperf3_measurements, parse_iperf3_json
from virtbench.parsers.parser_contract import INVALID, Parsed, check_figures
from virtbench.parsers.varnishstat import VarnishSnapshot, timeline
from virtbench.plugins import get_parser

from .corpus import DATA

_IPERF3 = DATA / "iperf3" / "iperf3.12-tcp-loopback.json"
_FIO = DATA / "fio" / "ext4loop-libaio-direct-read.json"


def _replace_first(text: str, pattern: str, value: str) -> str:
    new, count = re.subn(pattern, lambda m: m.group(1) + value, text, count=1)
    assert count == 1, pattern
    return new


def _assert_figures_sound(parsed: Parsed, metrics: tuple[Metric, ...]) -> None:
    domains = {m.name: m.value_domain for m in metrics}
    for m in parsed.measurements:
        if m.status != "ok":
            assert m.value is None
            continue
        assert m.value is not None and math.isfinite(m.value), m
        if domains.get(m.metric, Domain.REAL) is not Domain.REAL:
            assert m.value >= 0, m


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999", "-1"])
def test_iperf3_rate_that_is_no_measurement_is_invalid(bad: str) -> None:
    text = _IPERF3.read_text()
    # end.sum_received.bits_per_second: the primary throughput.
    head, tail = text.split('"sum_received":', 1)
    tail = _replace_first(tail, r'("bits_per_second":\s*)[-0-9.eE+]+', bad)
    parser = get_parser("iperf3")
    parsed = parser.read((head + '"sum_received":' + tail).encode())
    throughput = [m for m in parsed.measurements
                  if m.metric == "throughput_mbps" and not m.labels]
    assert [(m.value, m.status) for m in throughput] == [(None, INVALID)]
    assert any(w.startswith("iperf3: throughput_mbps is ") and INVALID in w
               for w in parsed.warnings), parsed.warnings
    _assert_figures_sound(parsed, parser.metrics)


def test_iperf3_workload_path_drops_a_negative_count() -> None:
    head, tail = _IPERF3.read_text().split('"sum_sent":', 1)
    text = head + '"sum_sent":' + _replace_first(tail, r'("retransmits":\s*)[-0-9.eE+]+', "-3")
    statuses = {m.metric: m.status for m in iperf3_measurements(parse_iperf3_json(text))}
    assert statuses["tcp_retransmits"] == INVALID


@pytest.mark.parametrize("bad", ["NaN", "-5"])
def test_fio_bandwidth_that_is_no_measurement_is_invalid(bad: str) -> None:
    text = _replace_first(_FIO.read_text(), r'("bw"\s*:\s*)[-0-9.eE+]+', bad)
    rows = [m for m in parse_fio(text) if m.metric.endswith("bandwidth_KiBps")]
    assert [(m.value, m.status) for m in rows] == [(None, INVALID)]


def test_bonnie_negative_rate_is_invalid() -> None:
    text = (DATA / "bonnie" / "rootdisk-512M-n4.csv").read_text()
    fields = text.split(",")
    fields[9] = "-246162"  # block write K/sec
    parsed = get_parser("bonnie++").read(",".join(fields).encode())
    assert any(m.status == INVALID for m in parsed.measurements)
    _assert_figures_sound(parsed, get_parser("bonnie++").metrics)


def test_varnishstat_counter_that_went_down_gives_invalid_deltas() -> None:
    before = VarnishSnapshot(None, {"MAIN.cache_hit": 100, "MAIN.cache_miss": 10,
                                    "MAIN.n_lru_nuked": 0, "MAIN.backend_req": 10})
    after = VarnishSnapshot(None, {"MAIN.cache_hit": 5, "MAIN.cache_miss": 1,
                                   "MAIN.n_lru_nuked": 0, "MAIN.backend_req": 1})
    rows = {m.metric: m for m in timeline([before, after])}
    assert rows["cache_hits_interval"].status == INVALID
    assert rows["backend_fetches_interval"].value is None


def test_check_figures_keeps_sound_figures_and_real_metrics() -> None:
    metrics = (Metric("rate", "B/s", "higher", "r"),  # type: ignore[arg-type]
               Metric("offset", "deg", "lower", "o"),  # type: ignore[arg-type]
               Metric("share", "%", "higher", "s"))  # type: ignore[arg-type]
    rows = [Measurement("rate", 0.0), Measurement("offset", -3.0), Measurement("share", 100.0),
            Measurement("share", 100.5), Measurement("rate", None, status="not_measured"),
            Measurement("offset", math.nan)]
    out, warnings = check_figures(rows, metrics, "tool")
    assert [m.status for m in out] == ["ok", "ok", "ok", INVALID, "not_measured", INVALID]
    assert len(warnings) == 2 and "over 100" in warnings[0] and "finite" in warnings[1]


def test_parse_json_output_is_strict_json(tmp_path: Path) -> None:
    text = _IPERF3.read_text()
    head, tail = text.split('"sum_received":', 1)
    bad = tmp_path / "nan.json"
    bad.write_text(head + '"sum_received":'
                   + _replace_first(tail, r'("bits_per_second":\s*)[-0-9.eE+]+', "NaN"))
    done = subprocess.run([sys.executable, "-m", "virtbench", "parse", "iperf3", str(bad),
                           "--json"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr

    def strict(token: str) -> float:
        raise AssertionError(f"not strict JSON: {token}")

    document = json.loads(done.stdout, parse_constant=strict)
    rows = [m for m in document["measurements"] if m["metric"] == "throughput_mbps"]
    assert rows == [{"metric": "throughput_mbps", "value": None, "unit": "Mbit/s",
                     "status": INVALID, "t": None, "labels": {}}]
    assert "throughput_mbps is nan" in done.stderr


def test_a_plugin_parser_gets_the_same_rule_from_read() -> None:
    from virtbench.parsers.parser_contract import Parser

    metric = Metric("rate_Bps", "B/s", "higher", "a rate")  # type: ignore[arg-type]
    plugin = Parser("plugin", "a plugin's parser", (metric,),
                    lambda text: [Measurement("rate_Bps", float(text))])
    parsed = plugin.read(b"-inf")
    assert [(m.value, m.status) for m in parsed.measurements] == [(None, INVALID)]
    assert parsed.warnings and parsed.figures_checked


@pytest.mark.parametrize(("tool", "data"), [
    ("bonnie++", b"1.98,2" + b"x" * 200_000 + b"\n"),  # csv.Error: field over csv's limit
    ("bonnie++", b"1.98,2.00a,h\r1,2\n"),  # csv.Error: a \r inside a line
    ("iperf3", b'{"start": {"test_start": {}}, "end": {"sum_sent": {"bits_per_second": 1'
               + b"0" * 400 + b', "bytes": 1}}}\n'),  # OverflowError: int beyond a float
    ("irtt", b'{"stats": {"packets_sent": ' + b"9" * 5000 + b"}}"),  # ValueError: 4,300 digits
    ("varnishstat", b'{"MAIN.cache_hit": {"value": 1' + b"0" * 400 + b"}}"),
])
def test_inputs_that_raised_other_exceptions_are_parse_errors_or_invalid(
        tool: str, data: bytes) -> None:
    from virtbench.parsers.parser_contract import ParseError

    try:
        parsed = get_parser(tool).read(data)
    except ParseError:
        return
    assert all(m.status != "ok" or math.isfinite(m.value or 0.0) for m in parsed.measurements)
