"""The fleet's commands: ``run --hosts`` (handed over by virtbench.cli.run) and ``hosts ...``."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from virtbench import safetext
from virtbench.fleet.inventory import FleetHost, host_from_url, load_inventory
from virtbench.model import VirtbenchError

if TYPE_CHECKING:
    from virtbench.fleet.drive import FleetOutcome
    from virtbench.spec.models import Experiment
    from virtbench.spec.resolve import ResolvedExperiment

__all__ = ["check_fleet", "fleet_hosts", "hosts_app", "run_fleet"]

# Host names, remote errors and facts are text from elsewhere: printed through safetext.
err = safetext.console(stderr=True)


def fleet_hosts(inventory: Path | None, urls: Sequence[str]) -> list[FleetHost]:
    """The hosts of ``--hosts INVENTORY`` and every ``--host ssh://...``, in that order."""
    hosts = load_inventory(inventory) if inventory is not None else []
    hosts += [host_from_url(url) for url in urls]
    if not hosts:
        raise VirtbenchError("give --hosts INVENTORY or at least one --host ssh://user@host")
    return hosts


def check_fleet(resolved: Experiment | ResolvedExperiment, spec_path: str, store: str,
                hosts: Sequence[FleetHost], *,
                known_hosts: str | None, netns: str | None, out: Console) -> bool:
    """``run --hosts INVENTORY --check``: what the run would do on each host of the (already
    validated) inventory, then each host checked as ``hosts check`` does (reachable, the tools
    the experiment needs there). True when every host is ready; nothing is run or stored."""
    from virtbench.fleet.drive import FleetRunner
    from virtbench.fleet.hostcheck import check_hosts

    plan = FleetRunner(store, resolved, "", spec_path, hosts, known_hosts=known_hosts,
                       netns=netns)
    exp = plan.exp
    variants = exp.all_variants()

    def say(line: str) -> None:  # names from the file and the inventory: shown literally
        out.print(safetext.text(line))

    say(f"{exp.name}: {len(variants)} variants × {len(exp.workloads)} workloads; baseline "
        f"{exp.baseline_name}; repetitions {exp.repetitions}; on {len(plan.hosts)} hosts at once")
    for h in plan.hosts:
        say(f"host {h.name} ({h.describe()}): a run of {exp.name}, lab {exp.lab.kind}")
    checked = list(plan.hosts)
    if plan.server is not None:
        say(f"host {plan.server.name} ({plan.server.describe()}): the server role of lab "
            f"{exp.lab.kind}, peer of {plan.hosts[0].name}")
        checked.append(plan.server)
    checks = check_hosts(plan.resolved, checked, known_hosts=known_hosts, netns=netns)
    for c in checks:
        for problem in c.problems:
            out.print(Text.assemble(("problem:", "red"), " ",
                                    safetext.text(f"{c.host}: {problem}")))
        if c.ok:
            say(f"host {c.host}: ready")
    return all(c.ok for c in checks)


def run_fleet(resolved: Experiment | ResolvedExperiment, spec_yaml: str, spec_path: str,
              store: str, hosts: Sequence[FleetHost], *, resume: str | None,
              known_hosts: str | None, netns: str | None, quiet: bool) -> FleetOutcome:
    """Run on every host at once, print one line per host, return the outcome."""
    from virtbench.fleet.drive import FleetRunner, latest_fleet
    from virtbench.spec.resolve import ResolvedExperiment
    from virtbench.store import Store
    from virtbench.store.redaction import shown

    exp = resolved.experiment if isinstance(resolved, ResolvedExperiment) else resolved
    lock = threading.Lock()

    def say(host: str, text: str) -> None:
        if not quiet:
            with lock:
                err.print(f"[bold]{safetext.markup(host)}[/]: {safetext.markup(text)}",
                          highlight=False)

    if resume == "latest":
        st = Store(store)
        try:
            resume = latest_fleet(st, exp.name)
        finally:
            st.close()
    fleet = FleetRunner(store, resolved, spec_yaml, spec_path, hosts, known_hosts=known_hosts,
                        netns=netns, say=say)
    err.print(safetext.text(f"fleet run on {len(hosts)} hosts"
                            + (f" (resuming {resume})" if resume else "")
                            + f"; store {shown(store)}"))
    outcome = fleet.run(resume_fleet_id=resume)
    table = Table(title=safetext.markup(f"fleet {outcome.fleet_id}: {exp.name}, "
                                        f"{outcome.wall_s:.1f} s"))
    for column in ("host", "run", "status", "trials", "failed", "reason"):
        table.add_column(column)
    for h in outcome.hosts:
        colour = "green" if h.status == "complete" else "red"
        table.add_row(safetext.text(h.host), safetext.text(h.run_id),
                      safetext.text(h.status, style=colour), str(h.trials), str(h.failures),
                      safetext.text(h.reason))
    err.print(table)
    err.print(safetext.text(f"fleet id {outcome.fleet_id} (`virtbench hosts runs "
                            f"{outcome.fleet_id}` lists its runs)"), highlight=False)
    if any(h.status != "complete" for h in outcome.hosts):
        err.print(safetext.text(f"continue the unfinished hosts with `virtbench run {spec_path} "
                                f"--hosts ... --resume {outcome.fleet_id}`"), highlight=False)
    return outcome


hosts_app = typer.Typer(help="Fleet hosts: check them against an experiment, write a playbook.",
                        no_args_is_help=True)
out = safetext.console()


@hosts_app.command("check")
def hosts_check(
    inventory: Annotated[Path, typer.Argument(help="Ansible-style inventory (YAML or INI)")],
    experiment: Annotated[Path, typer.Argument(help="experiment YAML file")],
    known_hosts: Annotated[str | None, typer.Option(
        help="known_hosts file (default: the inventory's virtbench_known_hosts, else "
             "~/.ssh/known_hosts)")] = None,
    netns: Annotated[str | None, typer.Option(
        help="run the ssh clients inside this network namespace")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Per host: reachable, the tools the experiment needs (with Debian packages), and the
    facts that differ between hosts (CPU, kernel, tool versions). Exit 1 if a host is not ready."""
    from virtbench.fleet.hostcheck import check_hosts, comparability_diff
    from virtbench.spec import load_resolved

    resolved, _ = load_resolved(experiment)
    exp = resolved.experiment
    checks = check_hosts(resolved, load_inventory(inventory), known_hosts=known_hosts, netns=netns)
    diff = comparability_diff({c.host: c.facts for c in checks if c.reachable})
    if as_json:
        sys.stdout.write(safetext.dumps({"hosts": [{"host": c.host, "reachable": c.reachable,
                                                    "ready": c.ok, "problems": c.problems}
                                                   for c in checks],
                                         "differing_facts": diff}, indent=2) + "\n")
    else:
        table = Table(title=f"hosts for {safetext.markup(exp.name)}")
        for column in ("host", "reachable", "ready", "problems"):
            table.add_column(column)
        for c in checks:
            table.add_row(safetext.text(c.host), "yes" if c.reachable else "[red]no[/]",
                          "yes" if c.ok else "[red]no[/]",
                          safetext.text("\n".join(c.problems) or "–"))
        out.print(table)
        if diff:
            facts = Table(title="facts that differ between hosts (results may not be comparable)")
            facts.add_column("fact")
            for c in checks:
                if c.reachable:
                    facts.add_column(safetext.text(c.host))
            for key, values in diff.items():
                facts.add_row(safetext.text(key), *[safetext.text(values.get(c.host, "–"))
                                                    for c in checks if c.reachable])
            out.print(facts)
        else:
            out.print("hosts agree on every compared fact (CPU model and count, hypervisor, "
                      "kernel, OS, memory, tool versions)")
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


@hosts_app.command("playbook")
def hosts_playbook(
    experiment: Annotated[Path, typer.Argument(help="experiment YAML file")],
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    hosts: Annotated[str, typer.Option(help="the play's hosts pattern")] = "all",
) -> None:
    """Write an Ansible playbook that installs the Debian packages the experiment needs and
    checks every tool is on PATH (run: ansible-playbook -i INVENTORY FILE)."""
    from virtbench.fleet.playbook import playbook_yaml
    from virtbench.spec import load_experiment

    exp, _ = load_experiment(experiment)
    text = playbook_yaml(exp, hosts)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
        err.print(f"wrote {safetext.markup(output)}")


@hosts_app.command("runs")
def hosts_runs(
    fleet: Annotated[str, typer.Argument(help="a fleet id (printed by run --hosts)")],
    store: Annotated[str, typer.Option("--store", "-s", envvar="VIRTBENCH_STORE",
                                       help="SQLite file or postgresql:// URL")]
    = "virtbench.db",
) -> None:
    """Print the run id of every host of a fleet run, one per line (for `virtbench report`)."""
    from virtbench.fleet.drive import fleet_record
    from virtbench.store import Store

    st = Store(store)
    try:
        record = fleet_record(st, fleet)
    finally:
        st.close()
    for name, entry in record["hosts"].items():
        sys.stdout.write(safetext.visible(f"{entry['run_id']}\t{name}\t{entry['target']}")
                         + "\n")
