"""Version- and mode-specific behaviour of each parser on real outputs (tests/data, see the
README.md there). Where a case needs an input no tool here produces (duplicates, a clock that
runs backwards), a real output is edited in the one field concerned, and the test says so."""

from __future__ import annotations

import gzip
import json

import pytest

from virtbench.model import Measurement
from virtbench.parsers.parser_contract import ParseError
from virtbench.plugins import get_parser

from .corpus import DATA


def _parsed(tool: str, name: str):  # type: ignore[no-untyped-def]
    return get_parser(tool).read((DATA / name).read_bytes())


def _by(ms: list[Measurement], **labels: str) -> dict[str, Measurement]:
    return {m.metric: m for m in ms if m.labels == labels}


# fio -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "series"), [
    ("fio/fio3.33-global-randwrite.json", "randwrite"),             # everything in [global]
    ("fio/fio3.33-cmdline-before-name-read.json", "seqread"),       # options before --name
    ("fio/fio3.33-trim-loopdev-json-normal.txt", "seqtrim"),
])
def test_fio_pattern_from_global_options(name: str, series: str) -> None:
    got = _by(_parsed("fio", name).measurements)
    assert f"{series}_bandwidth_KiBps" in got and f"{series}_cpu_usr_pct" in got
    assert all(k.startswith(series) for k in got)


def test_fio_global_and_job_sections_give_every_direction() -> None:
    got = _by(_parsed("fio", "fio/fio3.33-global-and-job-write-randrw.json").measurements)
    assert {"seqwrite_iops", "randrw_read_iops", "randrw_write_iops", "seqwrite_cpu_sys_pct",
            "randrw_cpu_sys_pct"} <= set(got)
    # rwmixread=70: reads are about 70 % of the mixed job's I/Os
    reads, writes = got["randrw_read_iops"].value or 0, got["randrw_write_iops"].value or 0
    assert 0.6 < reads / (reads + writes) < 0.8


def test_fio_trimwrite_has_both_directions() -> None:
    got = _by(_parsed("fio", "fio/fio3.33-trimwrite-loopdev.json").measurements)
    assert {"trimwrite_trim_iops", "trimwrite_write_iops", "trimwrite_cpu_usr_pct"} <= set(got)


def test_fio_2x_json_in_microseconds_named_by_direction() -> None:
    parsed = _parsed("fio", "fio/public-pkb-fio-2.1.4-seqwrite.json")
    got = _by(parsed.measurements)
    assert parsed.format == "fio-2.1.4 JSON"
    assert got["write_bandwidth_KiBps"].value == 68118
    assert got["write_clat_mean_us"].value == pytest.approx(477734.84)  # µs already
    assert got["write_clat_p99_us"].value == 823296
    assert "read_iops" not in got  # no read I/O (io_bytes 0), not a row of zeros
    assert any("no job options" in w for w in parsed.warnings)


@pytest.mark.parametrize("version", ["3.25", "3.39"])
def test_fio_gtod_reduce_in_other_releases(version: str) -> None:
    got = _by(_parsed("fio", f"fio/fio{version}-gtod-reduce-randwrite.json").measurements)
    clat = got["randwrite_clat_mean_us"]
    assert (clat.value, clat.status) == (None, "not_measured")
    assert got["randwrite_iops"].value


def test_fio_2x_without_latencies_is_not_measured() -> None:
    # fio 2.x has no N; gtod_reduce left min = max = mean = 0 with I/O done. One real 2.x
    # output with its write clat zeroed as gtod_reduce=1 writes it.
    doc = json.loads((DATA / "fio/public-pkb-fio-2.1.4-seqwrite.json").read_text())
    write = doc["jobs"][0]["write"]
    write["clat"] = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0}
    got = _by(get_parser("fio").read(json.dumps(doc).encode()).measurements)
    assert (got["write_clat_mean_us"].value, got["write_clat_mean_us"].status) == \
        (None, "not_measured")


def test_fio_lat_percentiles_are_total_latency() -> None:
    got = _by(_parsed("fio", "fio/fio3.33-lat-percentiles-randwrite-json-normal.txt")
              .measurements)
    lat, clat = got["randwrite_lat_p99_us"].value, got["randwrite_clat_p99_us"].value
    assert lat is not None and clat is not None and lat >= clat
    assert got["randwrite_lat_mean_us"].value >= got["randwrite_clat_mean_us"].value  # type: ignore[operator]


def test_fio_group_reporting_has_no_job_rows() -> None:
    ms = _parsed("fio", "fio/fio3.33-numjobs2-group-write-json-normal.txt").measurements
    assert all(not m.labels for m in ms)


def test_fio_messages_before_the_json_are_warnings() -> None:
    raw = (DATA / "fio/fio3.33-json-normal-write-randrw.txt").read_bytes()
    line = b"fio: this line stands for a warning fio prints before its JSON\n"
    parsed = get_parser("fio").read(line + raw)
    assert any(w.startswith("fio printed: fio: this line") for w in parsed.warnings)
    assert not [w for w in get_parser("fio").read(raw).warnings if w.startswith("fio printed")]


def test_fio_failed_job_names_the_job() -> None:
    # A job that ended with an error but did I/O keeps its statistics, flagged partial (issue
    # 36: it was refused as having "no results"); one that did no I/O is refused, naming it.
    doc = json.loads((DATA / "fio/fio3.33-global-randwrite.json").read_text())
    doc["jobs"][0]["error"] = 28
    parsed = get_parser("fio").read(json.dumps(doc).encode())
    assert parsed.partial and parsed.measurements
    assert any("job 'job-in-global' ended with error 28 (No space left on device)" in w
               for w in parsed.warnings)
    for direction in ("read", "write", "trim"):
        doc["jobs"][0][direction]["total_ios"] = 0
    with pytest.raises(ParseError, match="job 'job-in-global' failed with error 28 "
                                         r"\(No space left on device\) before doing any I/O"):
        get_parser("fio").read(json.dumps(doc).encode())


# iperf3 --------------------------------------------------------------------------------------

def test_iperf3_text_before_json_is_a_warning() -> None:
    raw = (DATA / "iperf3/iperf3.12-tcp-bidir-loopback.json").read_bytes()
    line = b"warning: this line stands for one iperf3 prints before its JSON\n"
    parsed = get_parser("iperf3").read(line + raw)
    assert any("printed before its JSON: warning: this line" in w for w in parsed.warnings)
    assert [m.value for m in parsed.measurements] == \
        [m.value for m in get_parser("iperf3").read(raw).measurements]


def test_iperf3_udp_bidir_and_reverse_parallel() -> None:
    got = _parsed("iperf3", "iperf3/iperf3.12-udp-bidir-loopback.json").measurements
    directions = {m.labels.get("direction") for m in got}
    assert directions == {"client_to_server", "server_to_client"}
    for d in directions:
        assert _by(got, direction=d)["udp_packets"].value == 382
    rev = _parsed("iperf3", "iperf3/iperf3.12-udp-reverse-P2-loopback.json").measurements
    total = _by(rev)
    streams = [m for m in rev if m.metric == "udp_packets" and "stream" in m.labels]
    assert len(streams) == 2
    assert sum(m.value or 0 for m in streams) == total["udp_packets"].value
    assert total["udp_lost_packets"].value == 92


def test_iperf3_pre_311_udp_has_only_end_sum() -> None:
    parsed = _parsed("iperf3", "iperf3/iperf3.9-udp-loopback.json")
    got = _by(parsed.measurements)
    assert parsed.format == "iperf 3.9 -J"
    assert (got["throughput_mbps"].value, got["throughput_mbps"].status) == \
        (None, "not_measured")
    assert got["sender_throughput_mbps"].value == pytest.approx(100.003386, rel=1e-6)
    assert (got["udp_packets"].value, got["udp_lost_packets"].value) == (763, 1)
    assert any("iperf3 < 3.11" in w for w in parsed.warnings)


def test_iperf3_reverse_rtt_zeros_are_not_reported() -> None:
    got = _by(_parsed("iperf3", "iperf3/iperf3.9-tcp-reverse-loopback.json").measurements)
    assert not [k for k in got if k.startswith("tcp_rtt")]
    assert got["throughput_mbps"].value


def test_iperf3_json_stream_reads_like_json() -> None:
    stream = _parsed("iperf3", "iperf3/iperf3.18-udp-json-stream-loopback.json")
    assert stream.format == "iperf 3.18 --json-stream" and not stream.warnings
    got = _by(stream.measurements)
    assert (got["udp_packets"].value, got["udp_lost_packets"].value) == (763, 50)
    bidir = _parsed("iperf3", "iperf3/iperf3.18-tcp-bidir-json-stream-loopback.json")
    assert {m.labels.get("direction") for m in bidir.measurements} == \
        {"client_to_server", "server_to_client"}


def test_iperf3_json_stream_cut_before_its_end_event() -> None:
    lines = (DATA / "iperf3/iperf3.18-tcp-json-stream-loopback.json").read_bytes().splitlines()
    assert lines[-1].startswith(b'{"event":"end"')
    with pytest.raises(ParseError, match=r"no 'end' event after \d+ interval"):
        get_parser("iperf3").read(b"\n".join(lines[:-1]))


def test_iperf3_error_without_results_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="unable to connect"):
        get_parser("iperf3").read(json.dumps(
            {"start": {}, "intervals": [], "end": {},
             "error": "unable to connect to server: Connection refused"}).encode())


# irtt ----------------------------------------------------------------------------------------

def _irtt_doc(name: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(gzip.decompress((DATA / name).read_bytes()))
    return loaded


def test_irtt_loss_excludes_duplicates_as_irtt_does() -> None:
    # No tool here duplicates packets (netem is missing): a real output's counts edited as irtt
    # writes them when 2 of 200 replies arrive twice and 40 never (irtt: 20 % loss).
    doc = _irtt_doc("irtt/irtt0.9-tbf-loss-netns.json.gz")
    stats = doc["stats"]
    assert isinstance(stats, dict)
    stats.update(packets_sent=200, packets_received=162, duplicates=2)
    del stats["packet_loss_percent"]
    got = _by(get_parser("irtt").read(json.dumps(doc).encode()).measurements)
    assert got["probe_loss_pct"].value == pytest.approx(20.0)
    assert (got["packets_lost"].value, got["packets_duplicate"].value) == (40, 2)


def test_irtt_negative_one_way_delay_warns() -> None:
    doc = _irtt_doc("irtt/irtt0.9-default-loopback.json.gz")
    stats = doc["stats"]
    assert isinstance(stats, dict)
    stats["send_delay"]["min"] = -1500000  # a server clock 1.5 ms behind the client's
    parsed = get_parser("irtt").read(json.dumps(doc).encode())
    assert any("send_delay has negative values" in w for w in parsed.warnings)


@pytest.mark.parametrize(("mode", "missing"), [
    ("tstamp-none", {"one_way_delay_up_ms", "one_way_delay_down_ms", "rfc3550_jitter_up_ms",
                     "rfc3550_jitter_down_ms"}),
    ("tstamp-send", {"rfc3550_jitter_up_ms"}),
    ("tstamp-receive", {"rfc3550_jitter_down_ms"}),
    ("clock-monotonic", {"one_way_delay_up_ms", "one_way_delay_down_ms"}),
    ("clock-wall", set()),
    ("tstamp-midpoint", set()),
])
def test_irtt_timestamp_modes_not_measured(mode: str, missing: set[str]) -> None:
    ms = _parsed("irtt", f"irtt/irtt0.9-{mode}-loopback.json.gz").measurements
    assert {m.metric for m in ms if m.status == "not_measured"} == missing
    assert all(m.value is None for m in ms if m.metric in missing)


# bonnie++ ------------------------------------------------------------------------------------

def test_bonnie_196_csv_48_fields() -> None:
    parsed = _parsed("bonnie++", "bonnie/public-pkb-1.96-csv.csv")
    got = _by(parsed.measurements)
    assert parsed.format == "bonnie++ 1.96 CSV (format 1.96)"
    assert got["seq_output_block_KiBps"].value == 72853
    assert got["random_seeks_per_s"].value == 537.7
    assert got["seq_create_per_s"].value == 49223
    assert got["seq_read_per_s"].status == "too_fast"
    assert got["seq_output_per_char_KiBps"].status == "skipped"
    assert got["seq_output_block_latency_us"].value == 512000
    assert got["random_delete_latency_us"].value == 839


def test_bonnie_103_table_without_latency_rows() -> None:
    parsed = _parsed("bonnie++", "bonnie/public-1.03-lkml-stdout.txt")
    got = _by(parsed.measurements)
    assert not [k for k in got if k.endswith("_latency_us")]
    assert got["seq_output_block_KiBps"].value == 39833
    assert got["random_seeks_per_s"].value == 339.8
    assert got["seq_delete_per_s"].value == 17244
    assert got["seq_read_per_s"].status == "too_fast"
    assert any("no Latency rows" in w for w in parsed.warnings)


def test_bonnie_unknown_csv_falls_back_to_the_table_with_a_warning() -> None:
    text = (DATA / "bonnie/public-1.96-devback1-stdout.txt").read_text()
    parsed = get_parser("bonnie++").read(text.replace("    1.96,1.96,", "    1.99,1.99,").encode())
    assert parsed.format == "bonnie++ 1.96 table"
    assert any("CSV format '1.99'" in w and "table" in w for w in parsed.warnings)
    assert _by(parsed.measurements)["seq_output_rewrite_KiBps"].value == 106363


# varnishstat ---------------------------------------------------------------------------------

def test_varnishstat_3x_counters_without_main_prefix() -> None:
    parsed = _parsed("varnishstat", "varnishstat/public-varnish3-exporter-test.json")
    got = _by(parsed.measurements)
    assert "Varnish 3.x layout" in parsed.format
    assert (got["cache_hits"].value, got["cache_misses"].value) == (0, 0)
    assert got["hit_ratio_cumulative"].status == "no_requests"
