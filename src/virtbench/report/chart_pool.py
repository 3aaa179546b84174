"""Where the HTML report's charts are drawn: in this process, or in chart workers forked before
the analysis (targets.forked_worker), which import matplotlib while this process reads the
store and then draw the charts while it builds the rest of the page.

The report asks for its charts as it builds its context (ChartJobs.add) and has them drawn
at once at the end (ChartJobs.draw). A worker that fails or does not answer in time is said
in one warning, and the charts it owed are drawn here: the report is the same either way.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from markupsafe import Markup

from virtbench.targets.forked_worker import ForkedWorker, WorkerFailed

__all__ = ["CHART_WAIT_S", "ChartJobs", "ChartPool"]

CHART_WAIT_S = 120.0
"""Longest wait for one chart from a worker (a chart takes a tenth of a second; a time series
of a million points a few seconds): a worker still silent then is given up, and the chart is
drawn here."""
_log = logging.getLogger(__name__)
_session = ExitStack()
"""A worker's chart_style, entered once for its life (the child ends with os._exit)."""


def _prepare() -> None:
    from virtbench.report import charts

    _session.enter_context(charts.chart_style())


def _draw(request: tuple[str, int, tuple[Any, ...]]) -> str | None:
    from virtbench.report import charts

    return charts.draw_numbered(*request)


class ChartPool:
    """Chart workers, forked at once (before the analysis starts any thread); a context
    manager that ends them, at once when leaving by an exception (Ctrl-C)."""

    def __init__(self, workers: int = 2,
                 prepare: Callable[[], None] = _prepare,
                 draw: Callable[[tuple[str, int, tuple[Any, ...]]], str | None] = _draw
                 ) -> None:
        self.workers: list[ForkedWorker] = []
        try:
            for index in range(max(1, workers)):
                self.workers.append(ForkedWorker(prepare, draw, name=f"chart worker {index}"))
        except BaseException:
            self.close(now=True)
            raise

    @classmethod
    def for_this_machine(cls) -> ChartPool | None:
        """As many workers as there are CPUs beside this process's, one to two; None (draw
        here) while another thread runs: a fork copies the locks a thread may hold."""
        if threading.active_count() > 1:
            return None
        return cls(min(2, max(1, (os.cpu_count() or 1) - 1)))

    def draw(self, jobs: list[tuple[str, tuple[Any, ...]]]) -> list[str | None]:
        """Each job's chart, in order: the jobs dealt to the workers in turn."""
        for number, (chart, args) in enumerate(jobs):
            self.workers[number % len(self.workers)].submit(number, (chart, number, args))
        drawn: list[str | None] = []
        failed: set[int] = set()
        for number, (chart, args) in enumerate(jobs):
            index = number % len(self.workers)
            if index not in failed:
                try:
                    drawn.append(self.workers[index].answer(number, CHART_WAIT_S))
                    continue
                except WorkerFailed as exc:
                    failed.add(index)
                    _log.warning("%s; its charts are drawn in the report's own process", exc)
            drawn.append(_draw_here(chart, number, args))
        return drawn

    def close(self, now: bool = False) -> None:
        for worker in self.workers:
            worker.close(now=now)

    def __enter__(self) -> ChartPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(now=kind is not None)


def _draw_here(chart: str, number: int, args: tuple[Any, ...]) -> str | None:
    from virtbench.report import charts

    with charts.chart_style():
        return charts.draw_numbered(chart, number, args)


class ChartJobs:
    """The charts of one page, asked for while its context is built and drawn together:
    ``add`` appends a figure ({"svg", "caption"}) to a figure list, ``draw`` fills in its SVG,
    or removes it from that list when its chart has nothing to draw."""

    def __init__(self) -> None:
        self._jobs: list[tuple[str, tuple[Any, ...], dict[str, Any], list[dict[str, Any]]]] = []

    def add(self, figures: list[dict[str, Any]], chart: str, args: tuple[Any, ...],
            caption: str) -> None:
        figure: dict[str, Any] = {"svg": None, "caption": caption}
        figures.append(figure)
        self._jobs.append((chart, args, figure, figures))

    def draw(self, pool: ChartPool | None) -> None:
        """Draw every chart asked for: in ``pool``'s workers, or here when None."""
        jobs = [(chart, args) for chart, args, _figure, _figures in self._jobs]
        if pool is None:
            from virtbench.report import charts

            # here: the numbers of this process's own counter, as every chart drawn here
            with charts.chart_style():
                svgs = [charts.draw(chart, args) for chart, args in jobs]
        else:
            svgs = pool.draw(jobs)
        for (_chart, _args, figure, figures), svg in zip(self._jobs, svgs, strict=True):
            if svg:
                figure["svg"] = Markup(svg)  # our own SVG: trusted markup
            else:
                figures.remove(figure)
        self._jobs.clear()
