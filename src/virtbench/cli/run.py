"""`virtbench run`: an experiment file → its plan (`--check`: the plan and its problems, nothing
run) → the noise checks → the runner, every sample stored at once → the report of the run. With
``--hosts``/``--host`` the fleet runs it on many hosts at once (virtbench.fleet.cli).

Its libraries load as the command goes: the spec and the plan first; the store, the runner's
engine, the preflight checks and the progress bar only when something runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.options import DEFAULT_STORE, StoreOpt, open_store
from virtbench.model import VirtbenchError

if TYPE_CHECKING:
    from virtbench.preflight import Check, NoiseWatch
    from virtbench.runner import Plan, RunRecord
    from virtbench.spec.resolve import ResolvedExperiment
    from virtbench.store import Store

__all__ = ["app", "run"]

app = typer.Typer()


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
    outputs: list[tuple[str, Path | None]] = [("table", None)]
    if report is not None:
        outputs.append(("html", report))
    if hosts is not None or host:
        _run_fleet(resolved, text, experiment, store, outputs, resume=resume, check=check,
                   hosts=hosts, host=host or [], known_hosts=known_hosts, netns=netns,
                   quiet=quiet)
        return
    from virtbench.runner import build_plan

    plan = build_plan(resolved)
    if check:
        raise typer.Exit(_check_here(plan))
    st = open_store(store, create=True)
    record = _record(st, resume, plan.experiment.name, text, str(experiment))
    run_id = _run_here(plan, record, store, experiment, strict=strict, quiet=quiet)
    from virtbench.cli.reporting import show_reports

    show_reports([run_id], st, outputs)


def _run_fleet(resolved: ResolvedExperiment, text: str, experiment: Path, store: str,
               outputs: list[tuple[str, Path | None]], *, resume: str | None, check: bool,
               hosts: Path | None, host: list[str], known_hosts: str | None,
               netns: str | None, quiet: bool) -> None:
    """`run --hosts/--host`: on every host at once (virtbench.fleet.cli), then the report."""
    from virtbench.cli.reporting import show_reports
    from virtbench.fleet.cli import check_fleet, fleet_hosts, run_fleet

    fleet_members = fleet_hosts(hosts, host)  # a bad inventory fails here (exit 2)
    if check:  # --check with --hosts checks the hosts, never this machine
        raise typer.Exit(0 if check_fleet(resolved, str(experiment), store, fleet_members,
                                          known_hosts=known_hosts, netns=netns,
                                          out=consoles.console) else 1)
    fleet = run_fleet(resolved, text, str(experiment), store, fleet_members,
                      resume=resume, known_hosts=known_hosts, netns=netns, quiet=quiet)
    st = open_store(store, create=True)
    measured = [r for r in fleet.run_ids if st.sample_count(r)]  # hosts that never started
    if measured:
        show_reports(measured, st, outputs)
    if any(h.status != "complete" for h in fleet.hosts):
        raise typer.Exit(1)


def _check_here(plan: Plan) -> int:
    """`run --check`: the plan and its problems; the exit code."""
    from virtbench.cli.check_report import print_plan
    from virtbench.runner import check_experiment

    problems = check_experiment(plan)
    print_plan(plan, problems)
    return 1 if problems else 0


def _record(st: Store, resume: str | None, name: str, text: str, spec_path: str) -> RunRecord:
    """The run to make: a new one, or ``resume`` (an id, or 'latest': the last unfinished run
    of experiment ``name``), validated here — an unknown or still running one fails before
    the checks."""
    from virtbench.runner import RunRecord

    if resume is None:
        return RunRecord.new(st, text, spec_path)
    if resume == "latest":
        candidates = [r for r in st.runs() if r.experiment == name
                      and r.status != "complete" and r.calibration is None]
        if not candidates:
            raise VirtbenchError(f"no unfinished run of {name} in {st.shown}")
        resume = candidates[-1].id
    return RunRecord.resume(st, resume, text, spec_path)


def _run_here(plan: Plan, record: RunRecord, store: str, experiment: Path, *, strict: bool,
              quiet: bool) -> str:
    """The run on this machine, after its checks and the noise checks; its id."""
    from virtbench.cli.progress import RichProgress
    from virtbench.preflight import NoiseWatch
    from virtbench.runner import Runner
    from virtbench.store.redaction import shown

    err = consoles.err
    noise = NoiseWatch()
    # Target, tools, params and knobs are checked first: bad input fails before the noise
    # checks spend their window (and before their table is printed).
    runner = Runner(plan, record, progress=RichProgress(err, quiet), noise=noise)
    runner.check()
    noise.initial = _preflight_gate(noise, strict, quiet)
    try:
        with noise.registered(plan.experiment.name):
            outcome = runner.run()
    except KeyboardInterrupt as exc:
        # typer turns KeyboardInterrupt into a silent exit 130: say what happened first.
        err.print(f"[yellow]interrupted[/] ({safetext.markup(exc) or 'SIGINT'}): the samples "
                  f"measured so far are stored in {safetext.markup(shown(store))}; continue with "
                  f"`virtbench run {safetext.markup(experiment)} --resume latest`",
                  highlight=False)
        raise typer.Exit(130) from exc
    err.print(safetext.text(f"run {outcome.run_id}: {outcome.status} — {outcome.stop_reason}; "
                            f"{outcome.trials} trials, {outcome.failures} failed; "
                            f"store {shown(store)}"),
              highlight=False)
    return outcome.run_id


def _preflight_gate(noise: NoiseWatch, strict: bool, quiet: bool) -> list[Check]:
    """Run the noise checks before a run; with ``strict``, refuse to start while one fails."""
    from virtbench.preflight import Status, failed, summary_line
    from virtbench.preflight.render import checks_table

    err = consoles.err
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
