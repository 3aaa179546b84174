"""The varnishstat parser on real `varnishstat -j` outputs (tests/data/varnishstat)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from virtbench.model import Measurement
from virtbench.parsers.parser_contract import ParseError
from virtbench.parsers.varnishstat import parse_snapshots, parse_varnishstat, timeline
from virtbench.plugins import get_parser

DATA = Path(__file__).resolve().parents[2] / "data" / "varnishstat"


def _by_metric(ms: Iterable[Measurement], storage: str | None = None
               ) -> dict[str, Measurement]:
    return {m.metric: m for m in ms if m.labels.get("storage", storage) == storage}


def test_single_snapshot_with_lru_nuking() -> None:
    ms = parse_varnishstat((DATA / "malloc-4M-lru-single.json").read_text())
    plain = _by_metric(ms)
    assert plain["cache_hits"].value == 62
    assert plain["cache_misses"].value == 58
    assert plain["hit_ratio_cumulative"].value == pytest.approx(100 * 62 / 120)
    assert plain["lru_nuked_total"].value == 38
    assert plain["backend_fetches"].value == 58
    s0 = _by_metric(ms, "s0")
    assert s0["storage_used_bytes"].value == 4006880
    assert all(m.t is None for m in ms)


def test_file_storage_counters_are_read() -> None:
    ms = parse_varnishstat((DATA / "file-64M-single.json").read_text())
    s0 = _by_metric(ms, "s0")
    used, free = s0["storage_used_bytes"].value, s0["storage_free_bytes"].value
    assert used is not None and free is not None and used + free == 64 * 1024 * 1024


def test_idle_varnish_has_no_hit_ratio() -> None:
    ms = _by_metric(parse_varnishstat((DATA / "idle-single.json").read_text()))
    assert ms["hit_ratio_cumulative"].value is None
    assert ms["hit_ratio_cumulative"].status == "no_requests"


def test_timeline_from_concatenated_snapshots() -> None:
    text = (DATA / "malloc-4M-lru-timeline.json").read_text()
    snaps = parse_snapshots(text)
    assert len(snaps) == 3
    ms = timeline(snaps)
    interval = [m for m in ms if m.metric == "hit_ratio_interval"]
    cumulative = [m for m in ms if m.metric == "hit_ratio_cumulative"]
    assert [m.t for m in interval] == [2.0, 4.0]  # from the snapshots' own timestamps
    assert interval[0].value == pytest.approx(100 * 32 / 73)
    assert interval[1].value == pytest.approx(100 * 30 / 47)
    assert cumulative[1].value == pytest.approx(100 * 62 / 120)
    nuked = [m.value for m in ms if m.metric == "lru_nuked_interval"]
    assert nuked == [21, 17]


def test_explicit_times_override_timestamps() -> None:
    snaps = parse_snapshots((DATA / "malloc-4M-lru-timeline.json").read_text())
    ms = timeline(snaps, [10.0, 10.5, 11.25])
    assert sorted({m.t for m in ms if m.t is not None}) == [0.5, 1.25]
    assert all(m.t is not None for m in ms)
    with pytest.raises(ValueError):
        timeline(snaps, [1.0])


def test_json_lines_of_the_sampler_are_read() -> None:
    line = '{"timestamp": null, "monotonic": 5.0, "counters": {"MAIN.cache_hit": {"value": 3}, ' \
           '"MAIN.cache_miss": {"value": 1}}}'
    ms = _by_metric(parse_varnishstat(line))
    assert ms["hit_ratio_cumulative"].value == 75.0


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"counters": {}}',
                                  '{"version": 1, "counters": {"MAIN.uptime": {"value": 1}}}'])
def test_bad_input_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_varnishstat(text)


def test_registered_for_the_cli() -> None:
    parser = get_parser("varnishstat")
    names = {m.name for m in parser.metrics}
    assert {"hit_ratio_interval", "hit_ratio_cumulative", "lru_nuked_interval",
            "storage_used_bytes", "backend_fetches_interval"} <= names
    assert all(m.description and m.unit for m in parser.metrics)
