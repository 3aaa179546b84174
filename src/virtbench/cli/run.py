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
    exp = resolved.experiment
    if hosts is not None or host:
        from virtbench.cli.reporting import show_report
        from virtbench.fleet.cli import check_fleet, fleet_hosts, run_fleet

        fleet_members = fleet_hosts(hosts, host or [])  # a bad inventory fails here (exit 2)
        if check:  # --check with --hosts checks the hosts, never this machine
            raise typer.Exit(0 if check_fleet(resolved, str(experiment), store, fleet_members,
                                              known_hosts=known_hosts, netns=netns,
                                              out=consoles.console) else 1)
        fleet = run_fleet(resolved, text, str(experiment), store, fleet_members,
                          resume=resume, known_hosts=known_hosts, netns=netns, quiet=quiet)
        st = open_store(store, create=True)
        measured = [r for r in fleet.run_ids if st.sample_count(r)]  # hosts that never started
        if measured:
            show_report(measured, st, "table", None)
        if report is not None and measured:
            show_report(measured, st, "html", report)
        if any(h.status != "complete" for h in fleet.hosts):
            raise typer.Exit(1)
        return
    from virtbench.runner import build_plan

    plan = build_plan(resolved)
    if check:
        from virtbench.cli.plan import print_plan
        from virtbench.runner import check_experiment

        problems = check_experiment(plan)
        print_plan(plan, consoles.console)
        for problem in problems:
            consoles.console.print(f"[red]problem:[/] {safetext.markup(problem)}")
        raise typer.Exit(1 if problems else 0)
    st = open_store(store, create=True)
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
    from virtbench.cli.reporting import show_report
    from virtbench.preflight import NoiseWatch
    from virtbench.runner import Runner

    err = consoles.err
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
    show_report([outcome.run_id], st, "table", None)
    if report is not None:
        show_report([outcome.run_id], st, "html", report)


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
