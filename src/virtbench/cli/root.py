"""Command line: parse options, then hand over to spec → runner → store → report."""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from virtbench import safetext
from virtbench.assess.cli import assess as assess_cmd
from virtbench.cli.lazy import LazyGroup, LazyRootGroup
from virtbench.cli.options import (
    DEFAULT_SERVE_PORT,
    DEFAULT_STORE,
    JsonOpt,
    OutputOpt,
    PortOpt,
    StoreOpt,
    number_parser,
)
from virtbench.model import VirtbenchError
from virtbench.targets.signals import keep_ignoring_sigint_but_not_in_children

if TYPE_CHECKING:
    from pydantic import BaseModel

    from virtbench.contract import Knob, Tool
    from virtbench.preflight import Check, NoiseWatch

app = typer.Typer(help="virtbench: reproducible, statistically rigorous experiments on "
                       "virtualised infrastructure.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False,
                  cls=LazyRootGroup,
                  epilog="Exit codes: 0 success, 1 the run or check failed, 2 bad input or "
                         "usage, 3 a bug in virtbench, 130 interrupted (docs/cli.md).")
lab_app = typer.Typer(help="Labs: the testbeds experiments build.", no_args_is_help=True)
app.add_typer(lab_app, name="lab")
# Stored and user text reaches these consoles only through virtbench.safetext (markup() in a
# markup string, text() for a cell or a line): shown as written, control characters as escapes.
console = safetext.console()
err = safetext.console(stderr=True)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Deprecation notices (e.g. a renamed lab kind) as one line, not Python's source dump."""
    err.print(f"[yellow]warning:[/] {safetext.markup(message)}", highlight=False)


warnings.showwarning = _show_warning

FORMATS = ("table", "json", "csv", "markdown", "html")

app.command("assess")(assess_cmd)



def _kvm_app() -> typer.Typer:
    # The kvm commands import the optional libvirt binding only when they run: without it,
    # `virtbench kvm ...` says how to install it (LIBVIRT_MISSING), and any other import error
    # of the group is a bug that must surface, not a silently missing command.
    from virtbench.kvm.cli import app as kvm_app

    return kvm_app


def _hosts_app() -> typer.Typer:
    from virtbench.fleet.cli import hosts_app

    return hosts_app


# Loaded when used (virtbench.cli.lazy); their help here is the groups' own (a test compares).
LazyRootGroup.lazy_groups = (
    LazyGroup("kvm", "Guest CPU flags of libvirt/KVM domains: inventory, tune, rollback.",
              _kvm_app),
    LazyGroup("hosts", "Fleet hosts: check them against an experiment, write a playbook.",
              _hosts_app),
)


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option(
        "--debug", envvar="VIRTBENCH_DEBUG",
        help="on an error, also print the Python traceback")] = False,
) -> None:
    """Options of every command (the app's help text is set above)."""


def _store(location: str, *, create: bool = False) -> Any:
    """The store of a command; only `run` and `import` create one that does not exist."""
    from virtbench.store import Store

    return Store(location, create=create)


@app.command()
def run(
    experiment: Annotated[Path, typer.Argument(help="experiment YAML file")],
    store: StoreOpt = DEFAULT_STORE,
    resume: Annotated[str | None, typer.Option(
        help="continue an interrupted run (its id, or 'latest')")] = None,
    report: Annotated[Path | None, typer.Option(help="also write an HTML report here")] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="validate and list problems, run nothing")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="refuse to start while a noise preflight check fails")] = False,
    hosts: Annotated[Path | None, typer.Option(
        "--hosts", help="run on every host of this Ansible-style inventory (YAML or INI) at "
                        "once; --resume then takes the fleet id")] = None,
    host: Annotated[list[str] | None, typer.Option(
        "--host", help="ssh://user@host:port, repeatable (with or without --hosts)")] = None,
    known_hosts: Annotated[str | None, typer.Option(
        help="known_hosts file for the fleet's host keys (default: ~/.ssh/known_hosts)")]
    = None,
    netns: Annotated[str | None, typer.Option(
        help="run the fleet's ssh clients inside this network namespace")] = None,
    profile: Annotated[bool, typer.Option(
        "--profile", help="record CPU profiles (perf, 99 Hz) and counters during every measured "
                          "trial of every workload without a profile: of its own "
                          "(docs/explain.md)")] = False,
) -> None:
    """Run an experiment: variants × workloads × repetitions, every sample stored at once."""
    from virtbench.spec import load_resolved

    resolved, text = load_resolved(experiment)  # plugins, parameters and knobs judged once
    if profile:  # what is profiled changes no plugin, parameter or knob: judged already
        resolved = dataclasses.replace(resolved,
                                       experiment=resolved.experiment.profiled_everywhere())
    exp = resolved.experiment
    if hosts is not None or host:
        from virtbench.fleet.cli import check_fleet, fleet_hosts, run_fleet

        fleet_members = fleet_hosts(hosts, host or [])  # a bad inventory fails here (exit 2)
        if check:  # --check with --hosts checks the hosts, never this machine
            raise typer.Exit(0 if check_fleet(resolved, str(experiment), store, fleet_members,
                                              known_hosts=known_hosts, netns=netns,
                                              out=console) else 1)
        fleet = run_fleet(resolved, text, str(experiment), store, fleet_members,
                          resume=resume, known_hosts=known_hosts, netns=netns, quiet=quiet)
        st = _store(store, create=True)
        measured = [r for r in fleet.run_ids if st.sample_count(r)]  # hosts that never started
        if measured:
            _report(measured, st, "table", None)
        if report is not None and measured:
            _report(measured, st, "html", report)
        if any(h.status != "complete" for h in fleet.hosts):
            raise typer.Exit(1)
        return
    from virtbench.runner import build_plan

    plan = build_plan(resolved)
    if check:
        from virtbench.cli.plan import print_plan
        from virtbench.runner import check_experiment

        problems = check_experiment(plan)
        print_plan(plan, console)
        for problem in problems:
            console.print(f"[red]problem:[/] {safetext.markup(problem)}")
        raise typer.Exit(1 if problems else 0)
    st = _store(store, create=True)
    if resume == "latest":
        candidates = [r for r in st.runs() if r.experiment == exp.name
                      and r.status != "complete" and r.calibration is None]
        if not candidates:
            raise VirtbenchError(f"no unfinished run of {exp.name} in {store}")
        resume = candidates[-1].id
    if resume is not None:  # an unknown or still running one fails here, before the checks
        from virtbench.runner.engine import refuse_if_running
        from virtbench.store.ids import check_run_id

        info = st.run(resume)
        check_run_id(info.id, "run id")  # an older store's odd id is read, never resumed
        if info.calibration is not None:  # its experiment is the baseline alone, not the file
            raise VirtbenchError(f"run {info.id} is a calibration run; `virtbench calibrate "
                                 f"{experiment} --resume {info.calibration}` continues it")
        refuse_if_running(info)
        resume = info.id
    from virtbench.cli.progress import RichProgress
    from virtbench.preflight import NoiseWatch
    from virtbench.runner import Runner

    noise = NoiseWatch()
    # Target, tools, params and knobs are checked first: bad input fails before the noise
    # checks spend their window (and before their table is printed).
    runner = Runner(st, plan, text, str(experiment), progress=RichProgress(err, quiet),
                    noise=noise)
    runner.check()
    noise.initial = _preflight_gate(noise, strict, quiet)
    try:
        with noise.registered(exp.name):
            outcome = runner.run(resume_run_id=resume)
    except KeyboardInterrupt as exc:
        # typer turns KeyboardInterrupt into a silent exit 130: say what happened first.
        err.print(f"[yellow]interrupted[/] ({safetext.markup(exc) or 'SIGINT'}): the samples "
                  f"measured so far are stored in {safetext.markup(store)}; continue with "
                  f"`virtbench run {safetext.markup(experiment)} --resume latest`",
                  highlight=False)
        raise typer.Exit(130) from exc
    err.print(safetext.text(f"run {outcome.run_id}: {outcome.status} — {outcome.stop_reason}; "
                            f"{outcome.trials} trials, {outcome.failures} failed; store {store}"),
              highlight=False)
    _report([outcome.run_id], st, "table", None)
    if report is not None:
        _report([outcome.run_id], st, "html", report)


def _preflight_gate(noise: NoiseWatch, strict: bool, quiet: bool) -> list[Check]:
    """Run the noise checks before a run; with ``strict``, refuse to start while one fails."""
    from virtbench.preflight import Status, failed, summary_line
    from virtbench.preflight.render import checks_table

    checks = noise.checks()
    noteworthy = [c for c in checks if c.status != Status.OK]
    if not quiet and noteworthy:  # all ok: the run's progress messages say so in one line
        err.print(checks_table(noteworthy, "noise preflight: checks that warn or fail"))
    elif not quiet:
        err.print(safetext.text(summary_line("before the run", checks)), highlight=False)
    bad = failed(checks)
    if strict and bad:
        err.print("[red]refusing to start (--strict):[/] "
                  + "; ".join(f"{c.name} failed: {safetext.markup(c.value)}" for c in bad),
                  highlight=False)
        raise typer.Exit(1)
    return checks


@app.command()
def preflight(
    as_json: Annotated[bool, typer.Option("--json", help="print the checks as JSON")] = False,
    window: Annotated[float, typer.Option(
        parser=number_parser(0, 3600, low_open=True), metavar="SECONDS",
        help="seconds (above 0, at most 3600) over which steal, foreign load and swapping are "
             "measured")] = 1.0,
) -> None:
    """Check this host for what spoils benchmarks; exit 1 if any check fails."""
    from virtbench.preflight import NoiseWatch, failed
    from virtbench.preflight.render import checks_table

    checks = NoiseWatch().checks(window)
    if as_json:
        sys.stdout.write(safetext.dumps([c.as_dict() for c in checks], indent=2) + "\n")
    else:
        console.print(checks_table(checks))
    raise typer.Exit(1 if failed(checks) else 0)


def _report(run_ids: list[str], st: Any, fmt: str, output: Path | None,
            baseline: str | None = None, details: bool = False,
            compare_by: str | None = None) -> None:
    from virtbench.analysis import analyse
    from virtbench.plugins import build_sections
    from virtbench.report import text

    run_ids = _distinct_runs(st, run_ids)
    analysis = analyse(st, run_ids, baseline=baseline, compare_by=compare_by)
    if len(run_ids) > 1:
        from virtbench.cli.decide import warn_if_not_comparable

        warn_if_not_comparable(st, run_ids, err)
    sections = [] if fmt == "csv" else build_sections(analysis)  # CSV: the result table only
    if fmt == "table" and output is None:
        text.render_terminal(analysis, console, details, sections=sections)
        return
    if fmt == "html":
        from virtbench.report.html import render_html

        rendered = render_html(analysis, sections=sections,
                               explain=_explained(st, run_ids, analysis))
    elif fmt == "table":
        file_console = safetext.console(record=True, width=160,
                                        file=open(os.devnull, "w"))  # noqa: SIM115
        text.render_terminal(analysis, file_console, details, sections=sections)
        rendered = file_console.export_text()
    elif fmt == "csv":
        rendered = text.render_csv(analysis)
    else:
        render = text.render_json if fmt == "json" else text.render_markdown
        rendered = render(analysis, sections=sections)
    if output is None:
        sys.stdout.write(rendered)
    else:
        output.write_text(rendered)
        err.print(f"wrote {safetext.markup(output)}")


def _explained(st: Any, run_ids: list[str], analysis: Any) -> list[Any]:
    """The Explain section's profiles: one run's (a side-by-side report of several runs has
    none; `compare BASE NEW --explain` explains two runs)."""
    if len(run_ids) != 1:
        return []
    from virtbench.decide.explain import explain_run

    return explain_run(st, run_ids[0], [v.name for v in analysis.variants], analysis.baseline)


def _distinct_runs(st: Any, refs: list[str]) -> list[str]:
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
) -> None:
    """Statistics per variant × workload × metric; several runs are compared side by side."""
    if format not in FORMATS:
        raise VirtbenchError(f"--format must be one of {', '.join(FORMATS)}")
    if format == "html" and output is None:
        output = Path("report.html")
    _report(runs or ["latest"], _store(store), format, output, baseline, details, compare_by)


@app.command("runs")
def list_runs(store: StoreOpt = DEFAULT_STORE) -> None:
    """List the runs in the store."""
    import datetime as dt

    st = _store(store)
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
    console.print(table)
    for line in abandoned:
        console.print(safetext.text(line), soft_wrap=True)


@app.command()
def facts(as_json: JsonOpt = False) -> None:
    """CPU model and flags, hypervisor, kernel, memory and tool versions of this machine."""
    from virtbench.facts import collect_facts
    from virtbench.targets.local import LocalTarget

    data = collect_facts(LocalTarget())
    if as_json:
        sys.stdout.write(safetext.dumps(data, indent=2) + "\n")
        return
    hv = data["hypervisor"]
    lines = [f"CPU        {data['cpu'].get('model')} ({data['cpu'].get('logical_cpus')} "
             "logical CPUs)",
             f"in a VM    {'yes' if hv.get('in_vm') else 'no'}; hypervisor "
             f"{hv.get('cpuid_vendor') or '-'} (CPUID leaf), systemd-detect-virt: "
             f"{hv.get('systemd_detect_virt', 'n/a')}",
             f"kernel     {data['kernel']}",
             f"OS         {data.get('os', '')}",
             f"memory     {data['memory'].get('MemTotal', 0) / 2**30:.1f} GiB",
             f"CPU flags  {' '.join(data['cpu'].get('flags', []))}"]
    lines += [f"{tool:<10} {version}" for tool, version in data["tools"].items()]
    for line in lines:  # what the machine and its tools say: text, never markup
        console.print(safetext.text(line), highlight=False)


@app.command()
def workloads(as_json: JsonOpt = False) -> None:
    """Every workload: metrics (unit, better), parameters and defaults, tools and packages."""
    from virtbench.plugins import all_workloads

    described: list[dict[str, Any]] = []
    for name, cls in all_workloads().items():
        described.append({
            "name": name, "description": cls.description,
            "metrics": [{"name": m.name, "unit": m.unit, "better": m.better.value,
                         "domain": m.value_domain.value,
                         "primary": m.primary, "description": m.description}
                        for m in cls.metrics],
            "knobs": _knobs_of(cls.knobs), "params": _params_of(cls.Params),
            "tools": _tools_of(cls.tools),
            "python_modules": [{"module": m, "pip": p} for m, p in cls.python_modules],
        })
    if as_json:
        sys.stdout.write(safetext.dumps(described, indent=2) + "\n")
        return
    for w in described:  # plugins' text (entry points too): shown as written
        console.print(f"[bold]{safetext.markup(w['name'])}[/] — "
                      f"{safetext.markup(w['description'])}")
        for m in w["metrics"]:
            star = " (primary)" if m["primary"] else ""
            console.print(safetext.text(f"  metric {m['name']} [{m['unit']}, {m['better']} is "
                                        f"better]{star}: {m['description']}"), highlight=False)
        _print_params_and_tools(w)


def _params_of(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    """Each parameter's description and default ("(required)" when it has none)."""
    properties: dict[str, dict[str, Any]] = model.model_json_schema().get("properties", {})
    params: dict[str, dict[str, Any]] = {}
    for key, field in model.model_fields.items():
        if field.is_required():
            default: Any = "(required)"
        elif field.default_factory is not None:  # absent from the JSON schema
            default = field.default_factory()  # type: ignore[call-arg]
        else:
            default = properties.get(key, {}).get("default", field.default)
        params[key] = {"default": default,
                       "description": properties.get(key, {}).get("description", "")}
    return params


def _knobs_of(knobs: Sequence[Knob]) -> dict[str, dict[str, str]]:
    return {k.name: {"meaning": k.meaning, "values": k.accepts} for k in knobs}


def _tools_of(tools: Sequence[Tool]) -> list[dict[str, str]]:
    return [{"binary": t.binary, "debian_package": t.package} for t in tools]


def _print_params_and_tools(entry: dict[str, Any]) -> None:
    lines = [f"  knob   {name} ({knob['values']}): {knob['meaning']}"
             for name, knob in entry["knobs"].items()]
    lines += [f"  param  {key} = {p['default']!r}: {p['description']}"
              for key, p in entry["params"].items()]
    lines += [f"  tool   {t['binary']} (Debian package {t['debian_package']})"
              for t in entry["tools"]]
    for line in lines:
        console.print(safetext.text(line), highlight=False)


@app.command()
def labs(as_json: JsonOpt = False) -> None:
    """Every lab: the variant knobs it understands, its parameters and defaults, its tools."""
    from virtbench.plugins import all_labs

    described: list[dict[str, Any]] = []
    for name, cls in all_labs().items():
        described.append({
            "name": name, "description": cls.description, "switch_cost": cls.switch_cost,
            "knobs": _knobs_of(cls.knobs), "params": _params_of(cls.Params),
            "tools": _tools_of(cls.tools),
        })
    if as_json:
        sys.stdout.write(safetext.dumps(described, indent=2) + "\n")
        return
    for lab in described:
        console.print(f"[bold]{safetext.markup(lab['name'])}[/] — "
                      f"{safetext.markup(lab['description'])} "
                      f"(switch cost: {safetext.markup(lab['switch_cost'])})")
        _print_params_and_tools(lab)


@app.command()
def parse(
    tool: Annotated[str, typer.Argument(help="e.g. iperf3, irtt, fio, bonnie++, varnishstat")],
    file: Annotated[Path, typer.Argument(help="a saved output of the tool, plain or gzip/xz/"
                                         "zstd ('-' for stdin)")],
    as_json: JsonOpt = False,
    flow: Annotated[str | None, typer.Option(
        help="pcap only: udp, tcp, tcp:5201 or PROTO:SRC:SPORT:DST:DPORT")] = None,
) -> None:
    """Turn a saved tool output (or a pcap/pcapng capture, per flow) into normalised metrics."""
    from virtbench.cli.parsing import parse_command

    parse_command(tool, file, as_json, flow)


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
    st = _store(store)
    info = st.run(run_ref)
    if format == "openmetrics":
        from virtbench.analysis import analyse
        from virtbench.report.run_openmetrics import render_run_openmetrics

        rendered = render_run_openmetrics(analyse(st, [info.id]))
        if output is None:
            sys.stdout.write(rendered)
        else:
            output.write_text(rendered, encoding="utf-8")
            err.print(f"wrote {safetext.markup(output)}")
        return
    if output is None:
        raise VirtbenchError("export --format json needs --output FILE (.json or .json.gz)")
    count = export_run(st, info.id, output)
    err.print(f"exported run {safetext.markup(info.id)} ({count} samples) to "
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
    run_id = import_tables(_store(store, create=True), file, tables, replace=replace)
    err.print(f"imported run {safetext.markup(run_id)}")


def _register_decide() -> None:
    from virtbench.cli import calibrate as cli_calibrate
    from virtbench.cli import decide as decide_cli

    app.command(cls=decide_cli.SidesCommand)(decide_cli.compare)
    app.command()(decide_cli.history)
    app.command()(cli_calibrate.calibrate)


_register_decide()


@app.command()
def serve(
    store: StoreOpt = DEFAULT_STORE,
    port: PortOpt = DEFAULT_SERVE_PORT,
    host: Annotated[str, typer.Option(
        help="address to bind; anything but loopback exposes the results to the network")]
    = "127.0.0.1",
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="a host name the pages may be reached by, besides loopback "
                             "names and --host (repeatable)")] = None,
) -> None:
    """A read-only web app over the store: runs, live progress, reports, downloads."""
    from virtbench.serve.guard import allowed_host
    from virtbench.serve.server import run_server

    names = [allowed_host(name) for name in allow_host or []]

    def announce(url: str) -> None:  # called once the socket is bound
        if host not in ("127.0.0.1", "localhost", "::1"):
            err.print(f"[yellow]warning:[/] binding {safetext.markup(host)}: anyone who "
                      "reaches this address can read every result in the store "
                      "(the app has no login)", highlight=False)
        err.print(safetext.text(f"serving {store} at {url} (read-only; Ctrl-C stops)"),
                  highlight=False)

    run_server(store, host, port, announce, names)


@lab_app.command("clean")
def lab_clean() -> None:
    """Remove what crashed runs left behind (namespaces, bridges, daemons, mounts, cgroups)."""
    from virtbench.labs.cleanup import clean_leftovers
    from virtbench.plugins import all_labs

    outcome = clean_leftovers(all_labs())
    # Text: paths and object lists are never read as markup; soft-wrapped: one event a line,
    # its paths whole (copyable, and matched by whoever greps the output)
    for event in outcome.events:
        console.print(safetext.text(event.text, style="yellow" if event.kind == "kept" else ""),
                      soft_wrap=True)
    console.print(outcome.summary(), soft_wrap=True)
    if not outcome.complete:
        raise typer.Exit(1)


def main() -> None:
    keep_ignoring_sigint_but_not_in_children()
    # Every failure of a command is reported by ErrorReportingGroup (cli_errors.py).
    app()


if __name__ == "__main__":
    main()
