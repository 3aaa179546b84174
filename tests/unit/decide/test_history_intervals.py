"""history's per-run intervals follow the report's rule: none below MIN_INTERVAL_VALUES values
(n = 2 gave a success rate of [93.3, 106.1] % and a 0-1 % ratio up to 164,894 %), never outside
the metric's domain, and for proportions the report's own Wilson interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import add_run

from virtbench.decide.history import build_history
from virtbench.model import Better, Domain, Metric
from virtbench.stats.intervals import MIN_INTERVAL_VALUES, mean_interval
from virtbench.store import Store

_SUCCESS = Metric("time_s", "%", Better.HIGHER, "requests that succeeded, %")
_SMALL_RATIO = Metric("time_s", "%", Better.LOWER, "a small 0-1 % ratio")
_SECONDS = Metric("time_s", "s", Better.LOWER, "seconds")


def _point(st: Store, values: list[float], metric: Metric):  # type: ignore[no-untyped-def]
    add_run(st, {"default": values}, metrics=[metric])
    (series,) = build_history(st).series
    (point,) = series.points
    return point


@pytest.mark.parametrize(("metric", "values"), [
    (_SUCCESS, [100.0, 99.4]),  # the reported [93.3, 106.1] %
    (_SMALL_RATIO, [0.001, 0.9]),  # the reported 0-1 % ratio up to 164,894 %
    (_SECONDS, [1.0, 3.0]),
])
def test_two_values_give_no_interval_as_in_the_report(sqlite_store: Store, metric: Metric,
                                                      values: list[float]) -> None:
    point = _point(sqlite_store, values, metric)
    assert point.n == 2 and point.mean == pytest.approx(np.mean(values))
    assert math.isnan(point.ci_low) and math.isnan(point.ci_high)
    report = mean_interval(np.array(values), 0.95, metric.value_domain)
    assert math.isnan(report.low) and report.why_none  # the report shows none either
    assert point.no_ci_reason == report.why_none == "2 values: an interval needs at least 3"


def test_proportion_interval_is_the_reports_wilson(sqlite_store: Store) -> None:
    values = [100.0, 99.4, 98.8, 100.0]
    point = _point(sqlite_store, values, _SUCCESS)
    report = mean_interval(np.array(values), 0.95, Domain.PROPORTION)
    assert report.method.startswith("Wilson")
    assert (point.ci_low, point.ci_high) == pytest.approx((report.low, report.high), rel=1e-9)
    assert point.ci_high <= 100.0


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(min_value=1e-9, max_value=100.0), min_size=1, max_size=8),
       percent=st.booleans())
def test_history_intervals_stay_in_the_domain(tmp_path_factory: pytest.TempPathFactory,
                                              values: list[float], percent: bool) -> None:
    metric = _SMALL_RATIO if percent else _SECONDS
    # (values > 0: the synthetic run also stores rate = 1 / value)
    st_ = Store(str(tmp_path_factory.mktemp("h") / "h.db"))
    try:
        point = _point(st_, values, metric)
    finally:
        st_.close()
    if len(values) < MIN_INTERVAL_VALUES:
        assert math.isnan(point.ci_low) and math.isnan(point.ci_high)
        return
    assert 0.0 <= point.ci_low <= point.ci_high
    assert point.ci_low <= point.mean * (1 + 1e-9) and point.ci_high >= point.mean * (1 - 1e-9)
    if percent:
        assert point.ci_high <= 100.0
