"""The HTML report's charts drawn by chart workers: the same page as drawn here, also when
they are drawn while the analysis goes on; a failing worker's charts drawn here with a
warning; a chart drawn early from other arguments than the page's drawn anew."""

from __future__ import annotations

import copy
import dataclasses
import gc
import logging
import re
import threading
from typing import Any

import pytest
from report_fill import fill_factorial, fill_series

from virtbench.analysis import Analysis, analyse
from virtbench.analysis.derived_views import metric_views
from virtbench.plugins import build_sections
from virtbench.report import charts
from virtbench.report.chart_pool import _YOUNG_COLLECTION_EVERY, ChartPool
from virtbench.report.html import chart_prefetch, render_html
from virtbench.store import Store


def _same_page(html: str) -> str:
    """The page without what differs between two renderings: the ids' hash salts (each
    figure's number: unique in either page) and the time it was generated."""
    html = re.sub(r"[0-9a-f]{10,}", "H", html)
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "T", html)


def _analysis(store: Store) -> Analysis:
    run_id = fill_factorial(store)
    return analyse(store, [run_id])


def _page(analysis: Analysis, pool: ChartPool | None) -> str:
    return render_html(analysis, sections=build_sections(analysis), chart_pool=pool)


def test_charts_drawn_by_workers_make_the_same_page(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = fill_factorial(store)
    series_run = fill_series(store, requests=300)
    with ChartPool(2) as pool:
        taken: list[bool] = []
        send = pool.send

        def recorded(number: int, chart: str, args: tuple[Any, ...]) -> bool:
            taken.append(send(number, chart, args))
            return taken[-1]

        monkeypatch.setattr(pool, "send", recorded)
        # as the report command does: each family's charts drawn as soon as it is analysed
        analysis = analyse(store, [run_id], on_family=chart_prefetch(pool))
        there = [_page(analysis, pool)]
        # every chart of its five metric sections drawn then, none drawn again
        assert taken == [True] * 5 * 3
        series = analyse(store, [series_run])
        there.append(_page(series, pool))  # the charts sent as the page asks for them
        assert len(taken) > 15 and not any(taken[15:])
    for what, page in zip((analysis, series), there, strict=True):
        here = _page(what, None)
        assert page.count("<svg") == here.count("<svg") > 0
        assert _same_page(page) == _same_page(here)
        # the salted ids (clip paths, markers) as distinct as when drawn here
        assert len(set(_salted(page))) == len(set(_salted(here))) > 0


def _salted(html: str) -> list[str]:
    return re.findall(r'id="(\w+_[0-9a-f]{10})"', html)


def _fails(request: Any) -> str | None:
    raise RuntimeError("the chart worker broke")


def test_a_failing_worker_s_charts_are_drawn_here_with_a_warning(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    analysis = _analysis(store)
    here = _page(analysis, None)
    with caplog.at_level(logging.WARNING), ChartPool(1, draw=_fails) as pool:
        there = _page(analysis, pool)
    assert _same_page(there) == _same_page(here)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1  # once for the worker, not once per chart
    assert "RuntimeError: the chart worker broke" in warned[0]
    assert "drawn in the report's own process" in warned[0]


def _collector(request: Any) -> str:
    return f"{gc.get_threshold()[0]} frozen={gc.get_freeze_count() > 0}"


def test_a_worker_collects_its_garbage_less_often_than_this_process() -> None:
    before = gc.get_threshold()
    with ChartPool(1, draw=_collector) as pool:
        assert pool.draw([("mean", ())]) == [f"{_YOUNG_COLLECTION_EVERY} frozen=True"]
    assert gc.get_threshold() == before and before[0] < _YOUNG_COLLECTION_EVERY


def test_no_workers_are_forked_while_another_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(60,))
    thread.start()
    try:
        assert ChartPool.for_this_machine() is None
    finally:
        stop.set()
        thread.join(60)


def test_a_chart_prefetched_from_other_arguments_is_drawn_anew(store: Store) -> None:
    analysis = _analysis(store)
    view = metric_views(analysis)[0]
    # equal arguments in other objects: a workload id equal to the rows' but not the same str
    equal = dataclasses.replace(copy.deepcopy(view), workload_id="".join(view.workload_id))
    assert equal.workload_id is not view.workload_id
    other_baseline = view.rows[-1].variant
    with ChartPool(1) as pool:
        pool.prefetch(0, "mean", (view, analysis.baseline))
        pool.prefetch(1, "mean", (view, analysis.baseline))
        assert pool.send(0, "mean", (equal, analysis.baseline))
        assert not pool.send(1, "mean", (view, other_baseline))
        drawn = pool.collect()
    with charts.chart_style():
        expected = [charts.draw_numbered("mean", 0, (view, analysis.baseline)),
                    charts.draw_numbered("mean", 1, (view, other_baseline))]
    assert drawn == expected
    assert drawn[0] != drawn[1]  # the baseline's bar is grey: another picture
