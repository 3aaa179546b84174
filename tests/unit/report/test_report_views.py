"""Derived views of an Analysis (analysis/derived_views.py) and chart helpers (report/charts.py)."""

from __future__ import annotations

import numpy as np
from report_fill import fill_factorial, fill_matrix, fill_series

from virtbench.analysis import analyse
from virtbench.analysis.derived_views import (
    downsample_minmax,
    facts_views,
    knob_grid,
    metric_views,
    series_groups,
)
from virtbench.report.charts import axis_scale, timeseries_chart
from virtbench.store import Store


def test_metric_views_follow_workload_and_variant_order(store: Store) -> None:
    analysis = analyse(store, [fill_factorial(store, reps=3)])
    views = metric_views(analysis)
    assert [(v.workload_id, v.metric.name) for v in views] == [
        ("cpu.crc32c", "time"), ("cpu.crc32c", "throughput"), ("media.x265", "encode_time"),
        ("media.x265", "fps"), ("disk.bonnie", "seq_create")]
    assert [r.variant for r in views[0].rows][:3] == ["default", "ssse3", "sse4.1"]
    assert views[0].best is not None and "sse4.2" in views[0].best[0]
    assert {e.factor for e in views[0].effects} == {"ssse3", "sse4.1", "sse4.2", "aes"}


def test_knob_grid_on_matrix_and_none_on_factorial(store: Store) -> None:
    grid = knob_grid(analyse(store, [fill_matrix(store, reps=2)]))
    assert grid is not None
    assert grid.x_knob == "background_mbps" and grid.line_knobs == ["switch"]
    assert sorted(line.label for line in grid.lines) == ["switch=linux-bridge", "switch=ovs"]
    assert [x for x, _ in grid.lines[0].points] == [0.0, 100.0, 150.0, 200.0]
    assert knob_grid(analyse(store, [fill_factorial(store, reps=2)])) is None


def test_series_groups_split_by_series_label(store: Store) -> None:
    groups = series_groups(analyse(store, [fill_series(store, reps=2, requests=300)]))
    assert [(g.metric, g.label) for g in groups] == [("hit_ratio", "interval"), ("latency", "")]
    hit, latency = groups
    assert list(hit.by_variant) == ["memory", "san", "iscsi"]
    assert not hit.per_request and latency.per_request
    assert latency.points == 3 * 2 * 300


def test_downsample_keeps_extremes_and_limit() -> None:
    rng = np.random.default_rng(0)
    t = np.arange(100_000, dtype=float)
    v = rng.normal(0, 1, t.size)
    v[54_321] = 50.0
    v[7] = -40.0
    tt, vv = downsample_minmax(t[::-1], v[::-1], 2000)  # unsorted input gets sorted
    assert tt.size <= 2000
    assert np.all(np.diff(tt) > 0)
    assert vv.max() == 50.0 and vv.min() == -40.0
    small_t, small_v = downsample_minmax([3.0, 1.0, 2.0], [30.0, 10.0, 20.0])
    assert small_t.tolist() == [1.0, 2.0, 3.0] and small_v.tolist() == [10.0, 20.0, 30.0]


def test_facts_views_mark_changes(store: Store) -> None:
    views = facts_views(analyse(store, [fill_factorial(store, reps=2)]))
    assert len(views) == 1 and views[0].phases == ["before", "after"]
    rows = {r.key: r for r in views[0].rows}
    flags = rows["cpu.flags"]
    assert flags.long and flags.changed
    assert flags.added == ["x2apic"] and flags.removed == ["sha_ni"]
    assert not rows["cpu.model"].changed
    assert "GiB" in rows["memory.MemTotal"].values[0]


def test_axis_scale_picks_si_prefix() -> None:
    assert axis_scale([4.16e-3, 0.55e-3], "s") == (1e-3, "ms")
    assert axis_scale([5.6e8], "bit/s") == (1e6, "Mbit/s")
    assert axis_scale([99.0], "%") == (1.0, "%")
    assert axis_scale([], "s") == (1.0, "s")


def test_timeseries_chart_draws_at_most_max_points_per_line(store: Store) -> None:
    groups = series_groups(analyse(store, [fill_series(store, reps=1, requests=5000)]))
    latency = next(g for g in groups if g.metric == "latency")
    svg = timeseries_chart(latency)
    assert svg is not None and svg.startswith(("<svg", "<img"))
