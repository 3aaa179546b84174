"""bonnie++ and fio parsers on outputs captured from Debian's bonnie++ 2.00a and fio 3.33."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.parsers.bonnie import BONNIE_METRICS, parse_bonnie
from virtbench.parsers.fio import FIO_METRICS, parse_fio
from virtbench.parsers.parser_contract import ParseError
from virtbench.plugins import get_parser

DATA = Path(__file__).resolve().parents[2] / "data"


def _read(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text()


def _by_name(text: str) -> dict[str, object]:
    return {m.metric: m for m in parse_bonnie(text)}


def test_bonnie_csv_every_field_in_declared_units() -> None:
    got = _by_name(_read("bonnie", "rootdisk-512M-n4.csv"))
    assert set(got) == {m.name for m in BONNIE_METRICS}
    assert got["seq_output_per_char_KiBps"].value == 1235  # type: ignore[attr-defined]
    assert got["seq_output_block_KiBps"].value == 246162  # type: ignore[attr-defined]
    assert got["seq_output_block_cpu_pct"].value == 49  # type: ignore[attr-defined]
    assert got["seq_create_per_s"].value == 7256  # type: ignore[attr-defined]
    assert got["random_create_per_s"].value == 7369  # type: ignore[attr-defined]
    assert got["seq_output_per_char_latency_us"].value == 17250  # type: ignore[attr-defined]
    assert got["random_delete_latency_us"].value == 1013  # type: ignore[attr-defined]


def test_bonnie_plus_signs_are_too_fast_not_zero() -> None:
    got = _by_name(_read("bonnie", "rootdisk-512M-n4.csv"))
    for name in ("seq_input_block_KiBps", "seq_input_block_cpu_pct", "random_seeks_per_s",
                 "seq_read_per_s", "random_delete_per_s"):
        assert got[name].value is None  # type: ignore[attr-defined]
        assert got[name].status == "too_fast"  # type: ignore[attr-defined]


def test_bonnie_fast_mode_skipped_fields() -> None:
    got = _by_name(_read("bonnie", "rootdisk-fast-n8-4096-1024-2.csv"))
    assert got["seq_output_per_char_KiBps"].status == "skipped"  # type: ignore[attr-defined]
    assert got["seq_input_per_char_latency_us"].status == "skipped"  # type: ignore[attr-defined]
    assert got["random_seeks_per_s"].value == 13821  # type: ignore[attr-defined]
    assert got["seq_delete_per_s"].value == 3311  # type: ignore[attr-defined]


def test_bonnie_several_loops_with_header_are_labelled() -> None:
    ms = parse_bonnie(_read("bonnie", "ext4loop-512M-n16-x3.csv"))
    block = [m for m in ms if m.metric == "seq_output_block_KiBps"]
    assert [(m.labels["loop"], m.value) for m in block] == [
        ("1", 180346.0), ("2", 181494.0), ("3", 191365.0)]
    create = [m for m in ms if m.metric == "seq_create_per_s"]
    assert [m.status for m in create] == ["too_fast", "too_fast", "ok"]


@pytest.mark.parametrize("name", ["rootdisk-512M-n4-table.txt", "rootdisk-512M-n4-bon_csv2txt.txt"])
def test_bonnie_human_table_matches_csv_within_rounding(name: str) -> None:
    table = _by_name(_read("bonnie", name))
    csv = _by_name(_read("bonnie", "rootdisk-512M-n4.csv"))
    assert set(table) == set(csv)
    # "240m" in the table is 240 MiB/s; the CSV has the exact KiB/s.
    assert table["seq_output_block_KiBps"].value == 240 * 1024  # type: ignore[attr-defined]
    assert abs(table["seq_output_block_KiBps"].value  # type: ignore[attr-defined]
               - csv["seq_output_block_KiBps"].value) < 1024  # type: ignore[attr-defined]
    for metric in csv:
        if metric.endswith(("_latency_us", "_cpu_pct")):
            assert table[metric].value == csv[metric].value, metric  # type: ignore[attr-defined]
        assert table[metric].status == csv[metric].status, metric  # type: ignore[attr-defined]


def test_bonnie_table_blank_cells_for_skipped_tests() -> None:
    got = _by_name(_read("bonnie", "rootdisk-fast-n8-4096-1024-2-table.txt"))
    assert got["seq_output_per_char_KiBps"].status == "skipped"  # type: ignore[attr-defined]
    assert got["random_seeks_per_s"].value == 13821  # type: ignore[attr-defined]
    assert got["random_seeks_latency_us"].value == 16887  # type: ignore[attr-defined]


def test_bonnie_stdout_with_table_and_csv_prefers_csv() -> None:
    got = _by_name(_read("bonnie", "rootdisk-512M-n4-stdout.txt"))
    assert got["seq_create_per_s"].value == 7256  # type: ignore[attr-defined]


def test_bonnie_latency_units_normalised() -> None:
    line = _read("bonnie", "rootdisk-512M-n4.csv").strip()
    fields = line.split(",")
    fields[38], fields[39], fields[40] = "2ms", "1s", "1500ns"
    got = _by_name(",".join(fields))
    assert got["seq_output_per_char_latency_us"].value == 2000  # type: ignore[attr-defined]
    assert got["seq_output_block_latency_us"].value == 1_000_000  # type: ignore[attr-defined]
    assert got["seq_output_rewrite_latency_us"].value == 1.5  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["", "hello", "1.98,2.00a,short,1"])
def test_bonnie_rejects_other_text(text: str) -> None:
    with pytest.raises(ParseError):
        parse_bonnie(text)


def test_fio_four_patterns() -> None:
    expected = {"read": "seqread", "write": "seqwrite", "randread": "randread",
                "randwrite": "randwrite"}
    declared = {m.name for m in FIO_METRICS}
    for rw, series in expected.items():
        ms = parse_fio(_read("fio", f"ext4loop-libaio-direct-{rw}.json"))
        names = {m.metric for m in ms}
        assert names == {f"{series}_{s}" for s in (
            "bandwidth_KiBps", "iops", "clat_mean_us", "clat_p50_us", "clat_p99_us",
            "clat_p99_9_us", "cpu_usr_pct", "cpu_sys_pct")}
        assert names <= declared


def test_fio_values_and_units() -> None:
    text = _read("fio", "ext4loop-libaio-direct-randread.json")
    got = {m.metric: m.value for m in parse_fio(text)}
    assert got["randread_bandwidth_KiBps"] == 833096
    assert got["randread_iops"] == pytest.approx(208274.241919)
    assert got["randread_cpu_sys_pct"] == pytest.approx(72.933333)
    p50, p99, p99_9 = (got[f"randread_clat_{p}_us"] for p in ("p50", "p99", "p99_9"))
    assert p50 is not None and p99 is not None and p99_9 is not None
    assert p50 < p99 < p99_9


def test_fio_mixed_job_gives_both_directions() -> None:
    names = {m.metric for m in parse_fio(_read("fio", "ext4loop-psync-buffered-randrw.json"))}
    assert "randrw_read_iops" in names and "randrw_write_iops" in names
    assert "randrw_cpu_usr_pct" in names


def test_fio_rejects_non_json() -> None:
    with pytest.raises(ParseError):
        parse_fio("fio: no such file")
    with pytest.raises(ParseError):
        parse_fio('{"fio version": "fio-3.33"}')


def test_registered_for_virtbench_parse() -> None:
    assert get_parser("bonnie++").parse is parse_bonnie
    assert get_parser("fio").parse is parse_fio
