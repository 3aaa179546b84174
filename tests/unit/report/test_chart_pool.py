"""The HTML report's charts drawn by chart workers: the same page as drawn here, a failing
worker's charts drawn here with a warning."""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

import pytest
from report_fill import fill_factorial, fill_series

from virtbench.analysis import Analysis, analyse
from virtbench.plugins import build_sections
from virtbench.report.chart_pool import ChartPool
from virtbench.report.html import render_html
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


def test_charts_drawn_by_workers_make_the_same_page(store: Store) -> None:
    analysis = _analysis(store)
    series = analyse(store, [fill_series(store, requests=300)])
    for what in (analysis, series):
        here = _page(what, None)
        with ChartPool(2) as pool:
            there = _page(what, pool)
        assert there.count("<svg") == here.count("<svg") > 0
        assert _same_page(there) == _same_page(here)
        # the salted ids (clip paths, markers) as distinct as when drawn here
        assert len(set(_salted(there))) == len(set(_salted(here))) > 0


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


def test_no_workers_are_forked_while_another_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(60,))
    thread.start()
    try:
        assert ChartPool.for_this_machine() is None
    finally:
        stop.set()
        thread.join(60)
