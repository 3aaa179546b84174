"""Issue 36's classes of real outputs, each on files made here by running the tool in that mode
(tests/data/<tool>/README.md says how): a value the tool did not measure is never a measured 0,
every result row is read and labelled, a terminal capture is read, a failed fio job keeps its
statistics or is refused with the true reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.model import Measurement
from virtbench.parsers.parser_contract import NOT_MEASURED, Parsed, ParseError, terminal_text
from virtbench.plugins import get_parser

from .corpus import DATA, REFUSED


def _read(tool: str, name: str) -> Parsed:
    folder = {"bonnie++": "bonnie"}.get(tool, tool)
    return get_parser(tool).read((DATA / folder / name).read_bytes())


def _by(parsed: Parsed) -> dict[tuple[str, tuple[tuple[str, str], ...]], Measurement]:
    out = {}
    for m in parsed.measurements:
        key = (m.metric, tuple(sorted(m.labels.items())))
        assert key not in out, f"{key} twice"
        out[key] = m
    return out


def _value(parsed: Parsed, metric: str, **labels: str) -> float | None:
    return _by(parsed)[(metric, tuple(sorted(labels.items())))].value


def _status(parsed: Parsed, metric: str, **labels: str) -> str:
    return _by(parsed)[(metric, tuple(sorted(labels.items())))].status


# iperf3 -s -J: the server's own JSON ---------------------------------------------------------

def test_iperf3_server_side_receiver_zeros_are_not_measured() -> None:
    parsed = _read("iperf3", "iperf3.12-tcp-server-side-loopback.json")
    assert parsed.format.endswith("(server side)")
    assert _value(parsed, "throughput_mbps") == pytest.approx(3915.239, abs=1e-3)
    # the client's half (sum_sent, remote CPU) is iperf3's placeholder zeros on this side
    assert _status(parsed, "sender_throughput_mbps") == NOT_MEASURED
    assert _status(parsed, "cpu_sender_pct") == NOT_MEASURED
    # the server received: its own CPU (host_total) is the receiver's
    assert _value(parsed, "cpu_receiver_pct") == pytest.approx(8.2665, abs=1e-3)


def test_iperf3_server_side_reverse_is_the_sender() -> None:
    parsed = _read("iperf3", "iperf3.12-tcp-reverse-server-side-loopback.json")
    assert _value(parsed, "sender_throughput_mbps") == pytest.approx(2360.489, abs=1e-3)
    assert _value(parsed, "tcp_retransmits") == 4
    assert _status(parsed, "throughput_mbps") == NOT_MEASURED
    assert _value(parsed, "cpu_sender_pct") == pytest.approx(8.5097, abs=1e-3)
    assert _status(parsed, "cpu_receiver_pct") == NOT_MEASURED


def test_iperf3_server_side_udp_keeps_its_receiver_figures() -> None:
    parsed = _read("iperf3", "iperf3.12-udp-server-side-loopback.json")
    assert _value(parsed, "throughput_mbps") == pytest.approx(50.065, abs=1e-3)
    assert _value(parsed, "udp_packets") == 382
    assert _status(parsed, "sender_throughput_mbps") == NOT_MEASURED
    assert _value(parsed, "cpu_receiver_pct") == pytest.approx(0.4211, abs=1e-3)
    assert _status(parsed, "cpu_sender_pct") == NOT_MEASURED


def test_iperf3_server_side_bidir_labels_each_direction_by_what_the_server_did() -> None:
    parsed = _read("iperf3", "iperf3.12-tcp-bidir-server-side-loopback.json")
    up, down = {"direction": "client_to_server"}, {"direction": "server_to_client"}
    assert _value(parsed, "throughput_mbps", **up) == pytest.approx(889.902, abs=1e-3)
    assert _status(parsed, "sender_throughput_mbps", **up) == NOT_MEASURED
    assert _value(parsed, "sender_throughput_mbps", **down) == pytest.approx(916.000, abs=1e-3)
    assert _status(parsed, "throughput_mbps", **down) == NOT_MEASURED
    # the RTT is of the stream the server sent on (sender: true), i.e. server to client
    assert _value(parsed, "tcp_rtt_max_ms", **down) == pytest.approx(5.361)
    assert ("tcp_rtt_max_ms", tuple(up.items())) not in _by(parsed)


def test_iperf3_server_side_streams_each_keep_what_the_server_measured() -> None:
    parsed = _read("iperf3", "iperf3.12-tcp-P2-server-side-loopback.json")
    streams = {m.labels["stream"] for m in parsed.measurements if "stream" in m.labels}
    assert len(streams) == 2
    for stream in streams:
        assert _value(parsed, "throughput_mbps", stream=stream) > 0  # type: ignore[operator]
        assert _status(parsed, "sender_throughput_mbps", stream=stream) == NOT_MEASURED
    assert _status(parsed, "cpu_sender_pct") == NOT_MEASURED


def test_iperf3_client_sides_unchanged_cpu_roles() -> None:
    parsed = _read("iperf3", "iperf3.12-tcp-reverse-loopback.json")  # -R: the server sends
    assert _value(parsed, "cpu_sender_pct") == pytest.approx(12.1508, abs=1e-3)  # remote
    assert _value(parsed, "cpu_receiver_pct") == pytest.approx(7.7972, abs=1e-3)  # host


# terminal captures ----------------------------------------------------------------------------

def test_iperf3_ctrl_c_in_a_terminal_capture_is_read_as_partial() -> None:
    raw = (DATA / "iperf3/iperf3.12-tcp-ctrl-c-script-capture.txt").read_bytes()
    assert b"^C{\r\n" in raw  # the echoed Ctrl-C before the JSON, CRLF line ends
    parsed = get_parser("iperf3").read(raw)
    assert parsed.partial
    assert any("terminal capture" in w and "^C" in w and "CRLF" in w for w in parsed.warnings)
    assert _value(parsed, "sender_throughput_mbps") == pytest.approx(6212.626, abs=1e-3)
    # the server's report never arrived: its receiver rate and CPU are not measured, not 0
    assert _status(parsed, "throughput_mbps") == NOT_MEASURED
    assert _status(parsed, "cpu_receiver_pct") == NOT_MEASURED


@pytest.mark.parametrize(("tool", "name"), [
    ("fio", "fio3.33-randread-script-capture.txt"),
    ("varnishstat", "varnishstat7.1-filtered-script-capture.txt"),
])
def test_terminal_captures_read_like_the_plain_output(tool: str, name: str) -> None:
    raw = (DATA / {"bonnie++": "bonnie"}.get(tool, tool) / name).read_bytes()
    assert b"\r\n" in raw and raw.startswith(b"Script started on ")
    parsed = get_parser(tool).read(raw)
    plain = get_parser(tool).read(raw.replace(b"\r\n", b"\n").split(b"\n", 1)[1]
                                  .rsplit(b"Script done", 1)[0])
    assert [(m.metric, m.value, m.status) for m in parsed.measurements] == \
        [(m.metric, m.value, m.status) for m in plain.measurements]
    assert parsed.warnings[0].startswith(f"{tool}: read as a terminal capture")


def test_terminal_text_removes_escapes_and_leaves_plain_text_alone() -> None:
    text, note = terminal_text("\x1b[?2004h\x1b[01;32mok\x1b[0m\r\n^C^C{\r\n}\r\n")
    assert text == "ok\n{\n}\n"
    assert "3 terminal escape sequences" in note and "echoed control key (^C)" in note
    plain = '{"a": "^C x"}\n'
    assert terminal_text(plain) == (plain, "")


# varnishstat -f: filtered counters ------------------------------------------------------------

def test_varnishstat_filtered_counters_are_not_measured() -> None:
    parsed = _read("varnishstat", "varnishstat7.1-filtered-hit-miss.json")
    assert _value(parsed, "cache_hits") == 2 and _value(parsed, "cache_misses") == 1
    assert _value(parsed, "hit_ratio_cumulative") == pytest.approx(200 / 3)
    for metric in ("lru_nuked_total", "backend_fetches"):
        assert _status(parsed, metric) == NOT_MEASURED
    assert any("MAIN.backend_req, MAIN.n_lru_nuked not in the output" in w
               for w in parsed.warnings)


def test_varnishstat_filtered_without_hits_is_read() -> None:
    parsed = _read("varnishstat", "varnishstat7.1-filtered-lru-storage-bytes.json")
    assert _value(parsed, "lru_nuked_total") == 0  # present in the output: a measured 0
    assert _value(parsed, "storage_used_bytes", storage="s0") == 386
    for metric in ("hit_ratio_cumulative", "cache_hits", "cache_misses", "backend_fetches"):
        assert _status(parsed, metric) == NOT_MEASURED
    assert _status(parsed, "storage_free_bytes", storage="s0") == NOT_MEASURED


def test_varnishstat_filtered_timeline() -> None:
    parsed = _read("varnishstat", "varnishstat7.1-filtered-timeline-2-snapshots.json")
    assert _value(parsed, "cache_hits_interval") == 4
    assert _value(parsed, "backend_fetches_interval") == 4
    assert _value(parsed, "hit_ratio_interval") == 50
    assert _status(parsed, "lru_nuked_interval") == NOT_MEASURED
    assert _status(parsed, "lru_nuked_total") == NOT_MEASURED


def test_varnishstat_filtered_to_nothing_read_says_so() -> None:
    doc = b'{"version": 1, "counters": {"MAIN.uptime": {"value": 5}}}'
    with pytest.raises(ParseError, match="none of the counters read"):
        get_parser("varnishstat").read(doc)


# bonnie++: several results --------------------------------------------------------------------

def test_bonnie_bon_csv2txt_table_of_two_results_gives_both_labelled() -> None:
    table = _read("bonnie++", "bonnie2.00-tmp-64M-n1-x2-bon_csv2txt.txt")
    csv = _read("bonnie++", "bonnie2.00-tmp-64M-n1-x2.csv")
    assert {m.labels.get("loop") for m in table.measurements} == {"1", "2"}
    assert len(table.measurements) == len(csv.measurements) == 2 * 36
    for loop in ("1", "2"):
        for metric in ("seq_create_per_s", "random_seeks_per_s", "seq_output_per_char_KiBps"):
            assert _value(table, metric, loop=loop) == _value(csv, metric, loop=loop)
    assert _value(table, "seq_create_per_s", loop="2") == 213
    # bon_csv2txt prints a +++++ rate as "0k" with "+++" CPU: too fast, not 0
    assert _status(table, "seq_output_rewrite_KiBps", loop="1") == "too_fast"
    assert _value(table, "seq_output_rewrite_KiBps", loop="2") == pytest.approx(109 * 1024)


# fio: failed jobs ---------------------------------------------------------------------------

def test_fio_enospc_job_keeps_its_statistics_partial() -> None:
    parsed = _read("fio", "fio3.33-enospc-write-json-normal.txt")
    assert parsed.partial
    assert _value(parsed, "seqwrite_bandwidth_KiBps") == 409600
    assert any("ended with error 28 (No space left on device)" in w for w in parsed.warnings)


def test_fio_verify_failure_keeps_latencies_and_no_rate_over_zero_time() -> None:
    parsed = _read("fio", "fio3.33-verify-failed-json-normal.txt")
    assert parsed.partial
    assert any("error 84" in w for w in parsed.warnings)
    assert any(w.startswith("fio printed: verify: bad magic header") for w in parsed.warnings)
    # verify_only: writes counted over a run time of 0 — fio's bw 0 is no measurement
    assert _status(parsed, "seqwrite_bandwidth_KiBps") == NOT_MEASURED
    assert _status(parsed, "seqwrite_iops") == NOT_MEASURED
    assert _value(parsed, "seqwrite_clat_mean_us") == pytest.approx(113261.442, abs=1e-3)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_fio_job_that_failed_before_any_io_is_refused_with_the_reason(name: str) -> None:
    with pytest.raises(ParseError) as caught:
        _read("fio", name)
    message = str(caught.value)
    assert "failed with error 2 (No such file or directory) before doing any I/O" in message
    assert "func=open" in message  # fio's own line
    assert "no results" not in message


# the promise, on every format: no measured 0 where the output has no figure ---------------

@pytest.mark.parametrize("path", sorted(
    p for p in (DATA / "iperf3").glob("*server-side*")) + sorted(
    (DATA / "varnishstat").glob("varnishstat7.1-filtered-*")), ids=lambda p: Path(p).name)
def test_no_zero_is_reported_where_the_output_has_a_placeholder(path: Path) -> None:
    tool = path.parent.name
    parsed = get_parser(tool).read(path.read_bytes())
    zeros = {m.metric for m in parsed.measurements if m.value == 0}
    # the only zeros left are counters the output states (udp lost packets, LRU nukes ...)
    assert zeros <= {"udp_lost_packets", "udp_loss_pct", "lru_nuked_total", "cache_hits",
                     "cache_misses", "backend_fetches"}, zeros
