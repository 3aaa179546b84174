"""The `virtbench` app: its global options and its commands, each known here by its name and
help alone and imported from its module when it is used (virtbench.cli.lazy).

| command | module |
|---|---|
| assess | virtbench.assess.cli |
| run | virtbench.cli.run |
| preflight, facts | virtbench.cli.host_commands |
| report, runs, export, import | virtbench.cli.results |
| workloads, labs | virtbench.cli.catalog |
| parse | virtbench.cli.parse (what it does: virtbench.cli.parsing) |
| compare, history | virtbench.cli.decide |
| calibrate | virtbench.cli.calibrate |
| serve | virtbench.cli.serve |
| lab ... | virtbench.cli.lab_commands |
| kvm ... | virtbench.kvm.cli |
| hosts ... | virtbench.fleet.cli |

A command's help here is the first paragraph of its docstring, which is what the top-level help
shows (tests/unit/cli/test_root.py compares them).
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any

import typer

from virtbench.cli.lazy import LazyCommand, LazyGroup, LazyRootGroup
from virtbench.targets.signals import keep_ignoring_sigint_but_not_in_children

__all__ = ["app", "main"]


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Deprecation notices (e.g. a renamed lab kind) as one line, not Python's source dump."""
    from virtbench import safetext
    from virtbench.cli import consoles

    consoles.err.print(f"[yellow]warning:[/] {safetext.markup(message)}", highlight=False)


warnings.showwarning = _show_warning


# Each loader imports one module, statically (the layer check sees the edge), when it is used.
def _assess() -> typer.Typer:
    from virtbench.assess.cli import assess

    commands = typer.Typer()
    commands.command("assess")(assess)
    return commands


def _run() -> typer.Typer:
    from virtbench.cli.run import app as commands

    return commands


def _host() -> typer.Typer:
    from virtbench.cli.host_commands import app as commands

    return commands


def _results() -> typer.Typer:
    from virtbench.cli.results import app as commands

    return commands


def _catalog() -> typer.Typer:
    from virtbench.cli.catalog import app as commands

    return commands


def _parse() -> typer.Typer:
    from virtbench.cli.parse import app as commands

    return commands


def _decide() -> typer.Typer:
    from virtbench.cli.decide import app as commands

    return commands


def _calibrate() -> typer.Typer:
    from virtbench.cli.calibrate import app as commands

    return commands


def _serve() -> typer.Typer:
    from virtbench.cli.serve import app as commands

    return commands


def _lab() -> typer.Typer:
    from virtbench.cli.lab_commands import app as commands

    return commands


def _kvm() -> typer.Typer:
    # The kvm commands import the optional libvirt binding only when they run: without it,
    # `virtbench kvm ...` says how to install it (LIBVIRT_MISSING), and any other import error
    # of the group is a bug that must surface, not a silently missing command.
    from virtbench.kvm.cli import app as commands

    return commands


def _hosts() -> typer.Typer:
    from virtbench.fleet.cli import hosts_app

    return hosts_app


class _Root(LazyRootGroup):
    """The commands in the order the top-level help lists them."""

    lazy = (
        LazyCommand("assess", "What is misconfigured here (or in DOMAIN), what fixing it buys — "
                              "measured where\npossible, with CIs — and the exact change.",
                    _assess),
        LazyCommand("run", "Run an experiment: variants × workloads × repetitions, every sample "
                           "stored at once.", _run),
        LazyCommand("preflight", "Check this host for what spoils benchmarks; exit 1 if any "
                                 "check fails.", _host),
        LazyCommand("report", "Statistics per variant × workload × metric; several runs are "
                              "compared side by side.", _results),
        LazyCommand("runs", "List the runs in the store.", _results),
        LazyCommand("facts", "CPU model and flags, hypervisor, kernel, memory and tool versions "
                             "of this machine.", _host),
        LazyCommand("workloads", "Every workload: metrics (unit, better), parameters and "
                                 "defaults, tools and packages.", _catalog),
        LazyCommand("labs", "Every lab: the variant knobs it understands, its parameters and "
                            "defaults, its tools.", _catalog),
        LazyCommand("parse", "Turn a saved tool output (or a pcap/pcapng capture, per flow) into "
                             "normalised metrics.", _parse),
        LazyCommand("export", "Write one run to a portable file, or its means as OpenMetrics "
                              "text.", _results),
        LazyCommand("import", "Add a run exported elsewhere (another host) to this store.",
                    _results),
        LazyCommand("compare", "Compare BASE and NEW: better / worse / equivalent / "
                               "inconclusive per workload · metric,\nwith a regression gate for "
                               "CI pipelines (exit 1). Several runs: a side-by-side report, "
                               "or\nwith BASE... -- NEW... a verdict on run means.", _decide),
        LazyCommand("history", "Every stored run of one experiment on one host over time, per "
                               "metric: run means with\nCIs, a sparkline and change points with "
                               "their step size.", _decide),
        LazyCommand("calibrate", "A/A calibration: run the experiment's baseline variant as K "
                                 "separate stored runs,\ninterleaved in blocks, estimate per "
                                 "workload · metric how much results vary within a run\nand "
                                 "drift between runs, store that noise profile for this host "
                                 "and experiment file\n(`compare` uses it), and show the "
                                 "smallest regression the gate can detect.", _calibrate),
        LazyCommand("serve", "A read-only web app over the store: runs, live progress, reports, "
                             "downloads.", _serve),
        LazyGroup("lab", "Labs: the testbeds experiments build.", _lab),
        LazyGroup("kvm", "Guest CPU flags of libvirt/KVM domains: inventory, tune, rollback.",
                  _kvm),
        LazyGroup("hosts", "Fleet hosts: check them against an experiment, write a playbook.",
                  _hosts),
    )


app = typer.Typer(help="virtbench: reproducible, statistically rigorous experiments on "
                       "virtualised infrastructure.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False, cls=_Root,
                  epilog="Exit codes: 0 success, 1 the run or check failed, 2 bad input or "
                         "usage, 3 a bug in virtbench, 130 interrupted (docs/cli.md).")


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option(
        "--debug", envvar="VIRTBENCH_DEBUG",
        help="on an error, also print the Python traceback")] = False,
) -> None:
    """Options of every command (the app's help text is set above)."""


def main() -> None:
    keep_ignoring_sigint_but_not_in_children()
    # Every failure of a command is reported by ErrorReportingGroup (virtbench.cli.failures).
    app()


if __name__ == "__main__":
    main()
