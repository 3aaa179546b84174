"""Where the HTML report's charts are drawn: in this process, or in chart workers forked before
the analysis (targets.forked_worker), which import matplotlib while this process reads the
store and then draw the charts while it reads and analyses the rest and builds the page.

The analysis hands each (workload, metric) family over as soon as it is analysed, and the
report sends that family's charts to the workers then (ChartPool.prefetch, while the next
family is read); the page, as it builds its context, asks for each of its charts
(ChartJobs.add): one prefetched from the same arguments is taken as drawn, any other is sent
then, and all are collected at the end (ChartJobs.draw). A worker that fails or does not
answer in time is said in one warning, and the charts it owed are drawn here: the report is
the same either way.
"""

from __future__ import annotations

import gc
import io
import itertools
import logging
import os
import pickle
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
_YOUNG_COLLECTION_EVERY = 20_000
"""A worker's collector threshold (allocations less deallocations between collections of
the youngest generation; Python's default 700)."""
_log = logging.getLogger(__name__)
_session = ExitStack()
"""A worker's chart_style, entered once for its life (the child ends with os._exit)."""


def _prepare() -> None:
    from virtbench.report import charts

    _session.enter_context(charts.chart_style())
    # what is loaded now lives as long as the worker: out of the collector's sight, each
    # collection of a chart's cyclic garbage is shorter (charts' CPU time -8% over 18 charts)
    gc.freeze()
    # and fewer collections: a chart allocates tens of thousands of artists, transforms and
    # dicts, most alive until the figure is drawn, which the default (a collection every 700
    # allocations) scanned again and again; a chart's garbage is still collected within the
    # next chart or two (charts' CPU time -9% over 18 charts, a 10^6-sample report's)
    gc.set_threshold(_YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])


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
        self._early: dict[int, tuple[str, bytes, tuple[str, int]]] = {}
        self._early_keys = itertools.count()
        self._sent: dict[int, tuple[Any, str, tuple[Any, ...]]] = {}
        self._failed: set[int] = set()
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

    def prefetch(self, number: int, chart: str, args: tuple[Any, ...]) -> None:
        """Have the page's chart ``number`` drawn now, from ``args`` as they are (while the
        analysis goes on); ``send`` takes that drawing if the page's chart ``number`` is the
        same chart of arguments of the same _fingerprint, and has it drawn anew otherwise."""
        fingerprint = _fingerprint(args)
        if fingerprint is not None:
            key = ("early", next(self._early_keys))  # a page's chart not taken stays unread
            self._early[number] = (chart, fingerprint, key)
            self._worker(number).submit(key, (chart, number, args))

    def send(self, number: int, chart: str, args: tuple[Any, ...]) -> bool:
        """The page's chart ``number``: a prefetched drawing of it (True), or sent to its
        worker now."""
        early = self._early.pop(number, None)
        if early is not None and early[:2] == (chart, _fingerprint(args)):
            self._sent[number] = (early[2], chart, args)
            return True
        self._sent[number] = (number, chart, args)
        self._worker(number).submit(number, (chart, number, args))
        return False

    def collect(self) -> list[str | None]:
        """Every chart sent, in its number's order (each worker's failure said once, its
        charts drawn here)."""
        drawn: list[str | None] = []
        for number in sorted(self._sent):
            key, chart, args = self._sent[number]
            index = number % len(self.workers)
            if index not in self._failed:
                try:
                    drawn.append(self.workers[index].answer(key, CHART_WAIT_S))
                    continue
                except WorkerFailed as exc:
                    self._failed.add(index)
                    _log.warning("%s; its charts are drawn in the report's own process", exc)
            drawn.append(_draw_here(chart, number, args))
        self._sent.clear()
        self._early.clear()  # prefetched for a chart the page did not have: not the next page's
        return drawn

    def draw(self, jobs: list[tuple[str, tuple[Any, ...]]]) -> list[str | None]:
        """Each job's chart, in order: the jobs dealt to the workers in turn."""
        for number, (chart, args) in enumerate(jobs):
            self.send(number, chart, args)
        return self.collect()

    def _worker(self, number: int) -> ForkedWorker:
        return self.workers[number % len(self.workers)]

    def close(self, now: bool = False) -> None:
        for worker in self.workers:
            worker.close(now=now)

    def __enter__(self) -> ChartPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(now=kind is not None)


def _fingerprint(args: tuple[Any, ...]) -> bytes | None:
    """``args`` pickled without the pickle's memo: every shared object written out in full,
    so equal values give the same bytes whichever of them are one object (a view's workload
    id and its rows' are the same string or equal ones); None for what this cannot pickle
    (a cycle)."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
    pickler.fast = True  # no memo
    try:
        pickler.dump(args)
    except (ValueError, RecursionError, pickle.PicklingError):
        return None
    return out.getvalue()


def _draw_here(chart: str, number: int, args: tuple[Any, ...]) -> str | None:
    from virtbench.report import charts

    with charts.chart_style():
        return charts.draw_numbered(chart, number, args)


class ChartJobs:
    """The charts of one page, asked for while its context is built: ``add`` appends a
    figure ({"svg", "caption"}) to a figure list and sends its chart to the pool's workers at
    once (drawn while the rest of the page is built), ``draw`` fills in each SVG, or removes
    the figure from its list when its chart has nothing to draw."""

    def __init__(self, pool: ChartPool | None = None) -> None:
        self._pool = pool
        self._jobs: list[tuple[str, tuple[Any, ...], dict[str, Any], list[dict[str, Any]]]] = []

    def add(self, figures: list[dict[str, Any]], chart: str, args: tuple[Any, ...],
            caption: str) -> None:
        figure: dict[str, Any] = {"svg": None, "caption": caption}
        figures.append(figure)
        if self._pool is not None:
            self._pool.send(len(self._jobs), chart, args)
        self._jobs.append((chart, args, figure, figures))

    def draw(self) -> None:
        """Draw every chart asked for: collected from the pool's workers, or drawn here
        without a pool."""
        if self._pool is None:
            from virtbench.report import charts

            # here: the numbers of this process's own counter, as every chart drawn here
            with charts.chart_style():
                svgs = [charts.draw(chart, args) for chart, args, _fig, _figs in self._jobs]
        else:
            svgs = self._pool.collect()
        for (_chart, _args, figure, figures), svg in zip(self._jobs, svgs, strict=True):
            if svg:
                figure["svg"] = Markup(svg)  # our own SVG: trusted markup
            else:
                figures.remove(figure)
        self._jobs.clear()
