"""The report of stored runs, as `report` prints or writes it; also what `run` shows when its
run ends and what `compare` gives for more than two runs (a side-by-side report). And the
warning all of them print when the runs' facts or settings differ."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.options import open_reader
from virtbench.model import VirtbenchError

if TYPE_CHECKING:
    from rich.console import Console

    from virtbench.report.chart_pool import ChartPool
    from virtbench.store import StoreReader

__all__ = ["FORMATS", "differences_from_first", "report_runs", "show_report",
           "show_reports", "warn_if_not_comparable"]

FORMATS = ("table", "json", "csv", "markdown", "html")


def report_runs(runs: list[str], store: str, fmt: str, output_path: Path | None,
                baseline: str | None = None, details: bool = False,
                compare_by: str | None = None, all_metrics: bool = False) -> None:
    """`report RUNS --format FMT --output PATH ...` (an html report goes to report.html unless
    told otherwise)."""
    if fmt not in FORMATS:
        raise VirtbenchError(f"--format must be one of {', '.join(FORMATS)}")
    if fmt == "html" and output_path is None:
        output_path = Path("report.html")
    show_report(runs, open_reader(store), fmt, output_path, baseline, details, compare_by,
                all_metrics)


def show_report(run_ids: list[str], st: StoreReader, fmt: str, output_path: Path | None,
                baseline: str | None = None, details: bool = False,
                compare_by: str | None = None, all_metrics: bool = False) -> None:
    """The report of ``run_ids`` (references: ids, prefixes, names, 'latest') from ``st``."""
    show_reports(run_ids, st, [(fmt, output_path)], baseline, details, compare_by, all_metrics)


def show_reports(run_ids: list[str], st: StoreReader, outputs: list[tuple[str, Path | None]],
                 baseline: str | None = None, details: bool = False,
                 compare_by: str | None = None, all_metrics: bool = False) -> None:
    """The report of ``run_ids`` in each (format, path) of ``outputs``, analysed once
    (`run --report`: the terminal table and the HTML file); ``all_metrics``: the table format
    prints every metric's tables, not only the key ones (report/key_results.py)."""
    run_ids = _distinct_runs(st, run_ids)
    if any(fmt == "html" for fmt, _path in outputs):
        # forked before the analysis: the workers import matplotlib while this process reads;
        # what both sides import (NumPy, the analysis' views the charts draw) is imported
        # first, once, for both: the two processes share two CPUs, so work done twice slows both
        import virtbench.analysis.derived_views  # noqa: F401
        from virtbench.report.chart_pool import ChartPool

        pool = ChartPool.for_this_machine()
        with pool or contextlib.nullcontext():
            _analyse_and_render(st, run_ids, outputs, baseline, details, compare_by,
                                all_metrics, pool)
        return
    _analyse_and_render(st, run_ids, outputs, baseline, details, compare_by, all_metrics, None)


def _analyse_and_render(st: StoreReader, run_ids: list[str],
                        outputs: list[tuple[str, Path | None]], baseline: str | None,
                        details: bool, compare_by: str | None, all_metrics: bool,
                        pool: ChartPool | None) -> None:
    from virtbench.analysis import analyse
    from virtbench.plugins import build_sections

    # CSV is the result table only: the series are read and the sections built when another
    # format needs them
    tables_only = all(f == "csv" for f, _ in outputs)
    on_family = None
    if pool is not None:
        from virtbench.report.html import chart_prefetch

        on_family = chart_prefetch(pool)  # the charts drawn while the analysis goes on
    analysis = analyse(st, run_ids, baseline=baseline, compare_by=compare_by,
                       with_series=not tables_only, on_family=on_family)
    if len(run_ids) > 1:
        warn_if_not_comparable(st, run_ids, consoles.err)
    sections = [] if tables_only else build_sections(analysis)
    for fmt, output_path in outputs:
        _render(st, run_ids, analysis, [] if fmt == "csv" else sections, fmt, output_path,
                details, all_metrics, pool)


def _render(st: StoreReader, run_ids: list[str], analysis: Any, sections: list[Any], fmt: str,
            output_path: Path | None, details: bool, all_metrics: bool = False,
            pool: ChartPool | None = None) -> None:
    from virtbench.report import text

    if fmt == "table" and output_path is None:
        text.render_terminal(analysis, consoles.console, details, sections=sections,
                             all_metrics=all_metrics)
        return
    if fmt == "html":
        from virtbench.report.html import render_html

        rendered = render_html(analysis, sections=sections,
                               explain=_explained(st, run_ids, analysis), chart_pool=pool)
    elif fmt == "table":
        file_console = safetext.console(record=True, width=160,
                                        file=open(os.devnull, "w"))  # noqa: SIM115
        text.render_terminal(analysis, file_console, details, sections=sections,
                             all_metrics=all_metrics)
        rendered = file_console.export_text()
    elif fmt == "csv":
        rendered = text.render_csv(analysis)
    else:
        render = text.render_json if fmt == "json" else text.render_markdown
        rendered = render(analysis, sections=sections)
    if output_path is None:
        sys.stdout.write(rendered)
    else:
        output_path.write_text(rendered)
        consoles.err.print(f"wrote {safetext.markup(output_path)}")


def _explained(st: StoreReader, run_ids: list[str], analysis: Any) -> list[Any]:
    """The Explain section's profiles: one run's (a side-by-side report of several runs has
    none; `compare BASE NEW --explain` explains two runs)."""
    if len(run_ids) != 1:
        return []
    from virtbench.decide.explain import explain_run

    return explain_run(st, run_ids[0], [v.name for v in analysis.variants], analysis.baseline)


def _distinct_runs(st: StoreReader, refs: list[str]) -> list[str]:
    """The run ids of ``refs``; two references to one run (``report RUN RUN``, an id and its
    prefix) are refused: a run compared with itself side by side says nothing."""
    seen: dict[str, str] = {}
    for ref in refs:
        run_id = st.run(ref).id
        if run_id in seen:
            same = f"'{ref}'" if ref == seen[run_id] else f"'{seen[run_id]}' and '{ref}'"
            raise VirtbenchError(f"run {same} given twice (run {run_id}); name each run once")
        seen[run_id] = ref
    return list(seen)


def differences_from_first(store: StoreReader, run_refs: list[str]
                           ) -> tuple[str, dict[str, list[Any]]]:
    """The first run's id and, per other run, how its facts and settings differ from it."""
    from virtbench.decide.comparability import differences_many
    from virtbench.decide.runs import load_run

    runs = [load_run(ref, lambda: store, with_values=False) for ref in run_refs]
    return runs[0].id, differences_many(runs)


def warn_if_not_comparable(store: StoreReader, run_refs: list[str], out: Console) -> None:
    """A short warning block when several runs' facts or settings differ (report, compare)."""
    from virtbench.report.decide_text import render_differences

    if len(run_refs) < 2:
        return
    first, by_run = differences_from_first(store, run_refs)
    for run_id, diffs in by_run.items():
        render_differences(diffs, out, f"warning: run {run_id} is not comparable with {first}")
