"""The web app: Starlette routes over a read-only store. Pages render the report's templates."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import virtbench
from virtbench import safetext
from virtbench.decide.compare import Comparison
from virtbench.decide.history import History
from virtbench.model import VirtbenchError
from virtbench.report.flamegraph import search_script
from virtbench.report.html import report_environment
from virtbench.serve import decided, downloads
from virtbench.serve.cache import VersionedCache
from virtbench.serve.guard import MAX_COMPARE, SECURITY_HEADERS, RequestGuard
from virtbench.serve.listing import PAGE_SIZE, RunFilter, filter_runs
from virtbench.serve.query import QueryError, flag, once, page_number
from virtbench.serve.views import RunReports, progress, run_row
from virtbench.store import RunInfo, Store

__all__ = ["create_app"]

STATIC = Path(__file__).with_name("static")
MAX_REF = 200
"""Longest run reference looked up (an id is 12 characters; an experiment name is short)."""


class _Canonical(Exception):  # not an error: the answer is a redirect
    """The request named a run by prefix or experiment: the answer is its canonical URL."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class _Site:
    """The app's state: the store, the report cache, the templates."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.reports = RunReports(store)
        self.env = report_environment(jinja2.PackageLoader("virtbench.serve", "templates"))
        self.env.globals["version"] = virtbench.__version__
        self.env.globals["history_enabled"] = True
        # a run id in a link is one path segment, whatever it holds ("?", "#", "%", spaces)
        self.env.filters["segment"] = lambda text: quote(str(text), safe="")
        self.env.filters["exact"] = _exact_attribute
        self.verdicts: VersionedCache[list[Comparison | str]] = VersionedCache()
        self.explained: VersionedCache[list[list[dict[str, Any]]]] = VersionedCache()
        self.finished_counts: dict[str, int] = {}  # a finished run's sample count never changes
        self._runs: tuple[tuple[object, ...], list[RunInfo]] | None = None

    def page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})

    def all_runs(self) -> list[RunInfo]:
        """The runs table, re-read only when a run was added, removed, started or ended."""
        version = self.store.runs_version()
        if self._runs is None or self._runs[0] != version:
            self._runs = (version, self.store.runs())
        return self._runs[1]

    def run(self, ref: str) -> RunInfo:
        if not ref or len(ref) > MAX_REF or "\x00" in ref:  # no such id: not worth a query
            raise HTTPException(404, f"no run matches {ref[:40]!r}")
        try:
            return self.store.run(ref)
        except VirtbenchError as exc:
            raise HTTPException(404, str(exc)) from exc

    def canonical_run(self, request: Request) -> RunInfo:
        """The run the path names; a prefix, experiment name or 'latest' redirects to the
        same URL with the full run id (one URL per run, as bookmarks and links use)."""
        ref = request.path_params["run_id"]
        run = self.run(ref)
        if run.id != ref:
            suffix = request.scope["path"][len("/runs/") + len(ref):]
            raise _Canonical(_url(f"/runs/{quote(run.id, safe='')}{suffix}",
                                  request.query_params.multi_items()))
        return run

    def comparisons(self, runs: list[RunInfo]) -> list[Comparison | str]:
        """decide's verdicts for the selection, cached like the reports (by trials)."""
        version = tuple((r.id, r.status, self.store.trial_progress(r.id)) for r in runs)
        return self.verdicts.get(tuple(r.id for r in runs), version,
                                 lambda: decided.comparisons(self.store, runs))

    def explanations(self, runs: list[RunInfo], items: list[Comparison | str]
                     ) -> list[list[dict[str, Any]]]:
        """The comparisons' explanations (profiles, flame graphs), cached as the verdicts."""
        version = tuple((r.id, r.status, self.store.trial_progress(r.id)) for r in runs)
        return self.explained.get(tuple(r.id for r in runs), version,
                                  lambda: decided.explanation_views(self.store, items))

    def history(self, request: Request) -> History | None:
        """The history the page asks for (None before an experiment is chosen)."""
        query = request.query_params
        try:
            once(query, "experiment", "host")
            any_spec, any_host = flag(query, "any_spec"), flag(query, "any_host")
            experiment = query.get("experiment", "")
            if not experiment:
                return None
            return decided.history(self.store, experiment, query.get("host", ""), any_spec,
                                   any_host)
        except VirtbenchError as exc:
            raise HTTPException(400, str(exc)) from exc

    def selected(self, request: Request) -> list[RunInfo]:
        """The runs to compare: two to MAX_COMPARE, each named by its full id (a prefix or an
        experiment name redirects)."""
        refs = [r for r in request.query_params.getlist("run") if r]
        if len(refs) > MAX_COMPARE:
            raise HTTPException(400, f"run: compare at most {MAX_COMPARE} runs at once "
                                     f"({len(refs)} asked for)")
        runs = list({run.id: run for run in (self.run(r) for r in refs)}.values())
        if len(runs) < 2:
            raise HTTPException(400, "select two or more runs to compare")
        if [r.id for r in runs] != refs:
            others = [(k, v) for k, v in request.query_params.multi_items() if k != "run"]
            raise _Canonical(_url(request.scope["path"], [("run", r.id) for r in runs] + others))
        return runs

    def counts(self, runs: list[RunInfo]) -> dict[str, int]:
        wanted = [r.id for r in runs if r.id not in self.finished_counts]
        fresh = self.store.sample_counts(wanted) if wanted else {}
        for run in runs:
            if run.status != "running" and run.id in wanted:
                self.finished_counts[run.id] = fresh.get(run.id, 0)
        return {r.id: self.finished_counts.get(r.id, fresh.get(r.id, 0)) for r in runs}


def _exact_attribute(value: object) -> Markup:
    """A value a script or a form sends back (a run id in ``data-run`` or a checkbox), for a
    quoted attribute: the exact text, HTML-escaped, not shown as escapes like the page's text
    (safetext.visible would name another run). A CR is a character reference: an HTML
    parser turns a raw CR into LF (other control characters reach the DOM as they are)."""
    return Markup(str(escape(str(value))).replace("\r", "&#13;"))


def _url(path: str, query: list[tuple[str, str]]) -> str:
    """A same-site URL: the path percent-encoded, the query rebuilt (header-safe ASCII)."""
    location = quote(path, safe="/%")
    return f"{location}?{urlencode(query)}" if query else location


def _filtered(site: _Site, request: Request) -> tuple[RunFilter, list[RunInfo], list[RunInfo]]:
    try:
        chosen = RunFilter.from_query(request.query_params)
    except VirtbenchError as exc:
        raise HTTPException(400, str(exc)) from exc
    everything = site.all_runs()
    return chosen, everything, filter_runs(everything, chosen)


def create_app(store: Store, allowed_hosts: Iterable[str] = (),
               bind_host: str | None = None) -> Starlette:
    """The ASGI app over ``store`` (open it read-only: the app never writes). It answers
    requests for loopback names, ``bind_host`` and ``allowed_hosts`` (docs/serve.md)."""
    site = _Site(store)
    routes = [
        Route("/", lambda _request: RedirectResponse("/runs")),
        *_runs_routes(site), *_run_routes(site), *_compare_routes(site),
        *_history_routes(site), *_static_routes(site),
    ]
    hosts = [*allowed_hosts, *([bind_host] if bind_host else [])]
    app = Starlette(routes=routes, exception_handlers=_error_handlers(site),
                    middleware=[Middleware(RequestGuard, allowed_hosts=hosts)])
    app.state.reports = site.reports  # tests read its cache counters
    return app


def _runs_routes(site: _Site) -> list[Route]:
    """/runs: the filtered list of runs, a page at a time, and its downloads."""

    def runs_page(request: Request) -> Response:
        chosen, everything, matched = _filtered(site, request)
        pages = max(1, -(-len(matched) // PAGE_SIZE))
        try:
            page = page_number(request.query_params, pages)
        except QueryError as exc:
            raise HTTPException(400, str(exc)) from exc
        shown = matched[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        counts = site.counts(shown)
        return site.page(
            "runs.html.j2", title="Runs", filter=chosen, query=chosen.query(),
            rows=[run_row(r, counts.get(r.id, 0)) for r in shown], matched=len(matched),
            total=len(everything), page=page, pages=pages,
            experiments=sorted({r.experiment for r in everything}),
            hosts=sorted({r.host for r in everything}),
            statuses=sorted({r.status for r in everything}))

    def runs_download(request: Request) -> Response:
        _chosen, _everything, matched = _filtered(site, request)
        counts = site.counts(matched)
        rows = [run_row(r, counts.get(r.id, 0)) for r in matched]
        return downloads.table(rows, request.path_params["fmt"], "runs")

    return [Route("/runs", runs_page), Route("/runs.{fmt:str}", runs_download)]


def _run_routes(site: _Site) -> list[Route]:
    """/runs/ID: one run's report (live while it runs), its parts, progress and downloads."""

    def run_page(request: Request) -> Response:
        run = site.canonical_run(request)
        parts = site.reports.parts([run])
        samples = parts.samples[run.id]
        return site.page("run.html.j2", title=parts.title, run=run_row(run, samples),
                         progress=progress(site.store, run, samples, time.time()), parts=parts)

    def run_part(request: Request) -> Response:
        """The report body or its table of contents alone: the live page swaps them in."""
        run = site.canonical_run(request)
        parts = site.reports.parts([run])
        part = parts.toc if request.scope["path"].endswith("/toc") else parts.body
        return HTMLResponse(part, headers={"Cache-Control": "no-store"})

    def run_progress(request: Request) -> Response:
        run = site.canonical_run(request)
        shown = progress(site.store, run, site.store.sample_count(run.id), time.time())
        # the page shows these strings as they are: stored text with its control and bidi
        # characters as visible escapes (as every {{ }} of the pages), then strict JSON
        shown = {k: safetext.visible(v) if isinstance(v, str) else v for k, v in shown.items()}
        return Response(safetext.dumps(shown), media_type="application/json",
                        headers={"Cache-Control": "no-store"})

    def run_download(request: Request) -> Response:
        run = site.canonical_run(request)
        fmt = request.path_params["fmt"]
        if fmt == "export":
            return downloads.export(site.store, run.id)
        parts = site.reports.parts([run])
        return downloads.report(parts.analysis, fmt, run.id, parts.explain)

    return [
        Route("/runs/{run_id:str}", run_page),
        Route("/runs/{run_id:str}/body", run_part),
        Route("/runs/{run_id:str}/toc", run_part),
        Route("/runs/{run_id:str}/progress", run_progress),
        Route("/runs/{run_id:str}/download/{fmt:str}", run_download),
    ]


def _compare_routes(site: _Site) -> list[Route]:
    """/compare: the selected runs' report and the verdicts of each against the first."""

    def compare_page(request: Request) -> Response:
        runs = site.selected(request)
        parts = site.reports.parts(runs)
        items = site.comparisons(runs)
        verdicts = [decided.verdict_view(item) | {"explain": explained}
                    for item, explained in zip(items, site.explanations(runs, items),
                                               strict=True)]
        return site.page("compare.html.j2", title="Compare", runs=[run_row(r, None) for r in runs],
                         query=[("run", r.id) for r in runs], parts=parts, verdicts=verdicts)

    def compare_download(request: Request) -> Response:
        runs = site.selected(request)
        name = "compare-" + "-".join(r.id for r in runs)
        fmt = request.path_params["fmt"]
        items = site.comparisons(runs)
        if fmt == "json":
            return downloads.document({"comparisons": [
                {"error": item} if isinstance(item, str) else item.as_dict() for item in items]},
                name)
        if fmt == "csv":
            return downloads.table(decided.comparison_rows(items), fmt, name)
        return downloads.report(site.reports.parts(runs).analysis, fmt, name)

    return [Route("/compare", compare_page), Route("/compare.{fmt:str}", compare_download)]


def _history_routes(site: _Site) -> list[Route]:
    """/history: one experiment's runs over time, and its downloads."""

    def history_page(request: Request) -> Response:
        result = site.history(request)
        everything = site.all_runs()
        query = {k: v for k, v in request.query_params.items() if v}
        return site.page("history.html.j2", title="History", query=query,
                         experiments=sorted({r.experiment for r in everything}),
                         hosts=sorted({r.host for r in everything}),
                         history=decided.history_view(result) if result else None)

    def history_download(request: Request) -> Response:
        result = site.history(request)
        if result is None:
            raise HTTPException(400, "experiment: choose an experiment")
        fmt = request.path_params["fmt"]
        name = f"history-{result.experiment}"
        if fmt == "json":
            return downloads.document(result.as_dict(), name)
        return downloads.table(decided.history_rows(result), fmt, name)

    return [Route("/history", history_page), Route("/history.{fmt:str}", history_download)]


def _static_routes(site: _Site) -> list[Route | Mount]:
    """The stylesheet (rendered once), the flame graphs' script and the static files."""
    stylesheet = site.env.get_template("site.css.j2").render()

    def css(_request: Request) -> Response:
        return Response(stylesheet, media_type="text/css; charset=utf-8")

    flame_script = search_script()  # the report's own file: one copy of the search

    def flame_js(_request: Request) -> Response:
        return Response(flame_script, media_type="text/javascript; charset=utf-8")

    return [
        Route("/static/virtbench.css", css),
        Route("/static/flamegraph.js", flame_js),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]


_Handler = Callable[[Request, Exception], Awaitable[Response]]


def _error_handlers(site: _Site) -> dict[Any, _Handler]:
    """HTTP errors as the site's error page, the redirect to a run's canonical URL, and a
    plain 500 for a bug."""

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return site.page("error.html.j2", status=exc.status_code, title="Error",
                         code=exc.status_code, message=exc.detail)

    async def canonical(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, _Canonical)
        return RedirectResponse(exc.location, status_code=307)

    async def server_error(request: Request, exc: Exception) -> Response:
        # Starlette answers a bug outside every middleware: the headers are added here
        # (the traceback still goes to the log: it is a bug in virtbench)
        return PlainTextResponse("500: internal error (a bug in virtbench; the server log has "
                                 "the details)\n", 500, headers=SECURITY_HEADERS)

    return {HTTPException: http_error, _Canonical: canonical, Exception: server_error}

