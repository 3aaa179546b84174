"""The history chart's x axis is time: each run stands at its start date, not its rank."""

from __future__ import annotations

import datetime as dt
import re

from virtbench.decide.history import MetricHistory, RunPoint, Step
from virtbench.model import Better, Metric
from virtbench.report.charts import chart_style
from virtbench.report.history_html import history_chart

DAY = 86_400.0
START = dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp()


def _series(days: list[float], steps: list[Step] | None = None) -> MetricHistory:
    points = [RunPoint(f"run{i}", START + d * DAY, 4, 1.0 + i / 100, 0.99 + i / 100,
                       1.01 + i / 100) for i, d in enumerate(days)]
    return MetricHistory("base", "cpu.demo", "cpu.demo",
                         Metric("time", "s", Better.LOWER, "Wall time.", True), points,
                         steps or [])


def _marker_xs(svg: str) -> list[float]:
    """The x of each run's marker (matplotlib draws a marker as a <use> of one path; the
    markers are the filled ones, tick marks are strokes)."""
    return [float(x) for x in re.findall(r'<use xlink:href="#[^"]+" x="([0-9.]+)" '
                                         r'y="[0-9.]+" style="fill:', svg)]


def test_runs_stand_at_their_dates_not_their_rank() -> None:
    # runs on day 0, 1 and 10: the third stands nine times further from the second than the
    # second from the first (by rank they would be evenly spaced)
    with chart_style():
        svg = history_chart(_series([0.0, 1.0, 10.0]))
    assert svg is not None
    xs = _marker_xs(svg)
    assert len(xs) == 3
    first_gap, second_gap = xs[1] - xs[0], xs[2] - xs[1]
    assert abs(second_gap / first_gap - 9.0) < 0.05
    assert "run start (UTC)" in svg and "oldest first" not in svg
    assert "Mar" in svg  # the tick labels are dates (ConciseDateFormatter: "Mar 03", ...)


def test_a_change_point_stands_between_its_two_runs() -> None:
    step = Step(index=2, last_before="run1", first_after="run2", runs_before=2, runs_after=2,
                ratio=2.0, ci_low=1.9, ci_high=2.1, p_value=1e-6)
    with chart_style():
        svg = history_chart(_series([0.0, 1.0, 3.0, 4.0], [step]))
    assert svg is not None
    xs = _marker_xs(svg)
    # the dashed line (a path from M x y to L x y', dashed) is halfway between the markers of
    # run1 and run2 (by rank it would be halfway between positions 2 and 3 of an even axis)
    dashed = [float(a) for a, b in re.findall(
        r'<path d="M ([0-9.]+) [0-9.]+\s+L ([0-9.]+) [0-9.]+\s+"[^>]*stroke-dasharray', svg)
        if a == b]
    assert len(dashed) == 1
    assert abs(dashed[0] - (xs[1] + xs[2]) / 2) < 0.5
    assert "+100.0 %" in svg


def test_runs_at_one_instant_still_draw() -> None:
    with chart_style():
        svg = history_chart(_series([0.0]))
    assert svg is not None and len(_marker_xs(svg)) == 1
