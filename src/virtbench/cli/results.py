"""The stored runs: `report` (statistics per variant × workload × metric, several runs side by
side), `runs` (the list), `export` (a run to a portable file, or OpenMetrics) and `import`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.options import DEFAULT_STORE, OutputOpt, StoreOpt, open_reader, open_store
from virtbench.cli.reporting import report_runs
from virtbench.model import VirtbenchError

__all__ = ["app", "export_cmd", "import_cmd", "list_runs", "report"]

app = typer.Typer()


@app.command()
def report(
    runs: Annotated[list[str] | None, typer.Argument(
        help="run ids, id prefixes or experiment names (default: the latest run)")] = None,
    store: StoreOpt = DEFAULT_STORE,
    format: Annotated[str, typer.Option(
        "--format", "-f", help="table | json | csv | markdown | html")] = "table",
    output: OutputOpt = None,
    baseline: Annotated[str | None, typer.Option(
        help="compare against this variant instead of the experiment's baseline "
             "(e.g. host-passthrough)")] = None,
    details: Annotated[bool, typer.Option(
        "--details", help="also per-repetition tables, first vs later repetitions, notes")]
    = False,
    compare_by: Annotated[str | None, typer.Option(
        help="compare each variant with the one differing only in this knob (e.g. switch)")]
    = None,
    all_metrics: Annotated[bool, typer.Option(
        "--all", help="table format: every metric's tables, not only the primary and study "
                      "metrics (the others are named on one line)")] = False,
) -> None:
    """Statistics per variant × workload × metric; several runs are compared side by side."""
    report_runs(runs or ["latest"], store, format, output, baseline, details, compare_by,
                all_metrics)


@app.command("runs")
def list_runs(store: StoreOpt = DEFAULT_STORE) -> None:
    """List the runs in the store."""
    import datetime as dt

    from rich.table import Table

    st = open_reader(store)
    table = Table("experiment", "kind", "status", "started", "host", "samples", "stop reason")
    table.add_column("id", no_wrap=True, min_width=12)  # must stay copyable for export
    abandoned: list[str] = []
    for r in st.runs():
        started = dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M")
        reason = r.stop_reason[:60]
        if r.status == "abandoned":  # the resume command goes below the table, unwrapped
            abandoned.append(f"run {r.id}: {r.stop_reason}")
            reason = "its process is gone (see below)"
        # Stored text, imported from anywhere: cells as Text (never markup), shown by safetext.
        # A/A runs of `virtbench calibrate` (their stop reason names the calibration's id)
        kind = "run" if r.calibration is None else "calibration"
        table.add_row(*map(safetext.text, (r.experiment, kind, r.status, started, r.host,
                                           st.sample_count(r.id), reason, r.id)))
    consoles.console.print(table)
    for line in abandoned:
        consoles.console.print(safetext.text(line), soft_wrap=True)


@app.command("export")
def export_cmd(
    run_ref: Annotated[str, typer.Argument(help="run id, prefix, experiment name or 'latest'")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="file (.json or .json.gz); openmetrics: default stdout")] = None,
    store: StoreOpt = DEFAULT_STORE,
    format: Annotated[str, typer.Option(
        "--format", "-f", help="json (the portable file `import` and `compare` read) | "
                               "openmetrics (means and CIs for a Prometheus pushgateway)")]
    = "json",
) -> None:
    """Write one run to a portable file, or its means as OpenMetrics text."""
    from virtbench.store.portable import export_run

    if format not in ("json", "openmetrics"):
        raise VirtbenchError("--format must be json or openmetrics")
    st = open_reader(store)  # reads only: also a store on a read-only filesystem
    info = st.run(run_ref)
    if format == "openmetrics":
        from virtbench.analysis import analyse
        from virtbench.report.run_openmetrics import render_run_openmetrics

        rendered = render_run_openmetrics(analyse(st, [info.id]))
        if output is None:
            sys.stdout.write(rendered)
        else:
            output.write_text(rendered, encoding="utf-8")
            consoles.err.print(f"wrote {safetext.markup(output)}")
        return
    if output is None:
        raise VirtbenchError("export --format json needs --output FILE (.json or .json.gz)")
    count = export_run(st, info.id, output)
    consoles.err.print(f"exported run {safetext.markup(info.id)} ({count} samples) to "
                       f"{safetext.markup(output)}")


@app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="a file written by `virtbench export`")],
    store: StoreOpt = DEFAULT_STORE,
    replace: Annotated[bool, typer.Option(help="replace a run with the same id")] = False,
) -> None:
    """Add a run exported elsewhere (another host) to this store."""
    from virtbench.store.portable import import_tables, tables_to_import

    tables = tables_to_import(file)  # a refused file creates no store
    _check_declared_metrics(file, tables)
    run_id = import_tables(open_store(store, create=True), file, tables, replace=replace)
    consoles.err.print(f"imported run {safetext.markup(run_id)}")


def _check_declared_metrics(file: Path, tables: dict[str, list[dict[str, Any]]]) -> None:
    """A metric of a workload plugin this virtbench has must say what the plugin declares:
    which direction is better and its domain (what the report ranks and bounds values by). A
    file that turned "lower is better" around, or made a time's domain "real" so that negative
    times pass, is refused."""
    from virtbench.model import better_text, default_domain
    from virtbench.plugins import declared_metric
    from virtbench.store.rows import ImportInvalid

    plugins = {row["workload_id"]: row["name"] for row in tables["workloads"]}
    for index, row in enumerate(tables["metrics"]):
        declared = declared_metric(plugins[row["workload_id"]], row["name"])
        if declared is None:  # a plugin (or a metric, e.g. a profile's) not declared here
            continue
        said = (row["better"], row["domain"] or default_domain(row["unit"]).value)
        wanted = (better_text(declared.better), declared.value_domain.value)
        if said != wanted:
            raise ImportInvalid(
                f"{file}: metrics[{index}]: {safetext.visible(row['workload_id'])}/"
                f"{safetext.visible(row['name'])} is declared by workload "
                f"{safetext.visible(plugins[row['workload_id']])} with better: {wanted[0]}, "
                f"domain {wanted[1]}; the file says better: {safetext.visible(said[0])}, "
                f"domain {safetext.visible(said[1])}; nothing imported")
