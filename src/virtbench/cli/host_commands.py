"""This host: `preflight` (what spoils benchmarks here) and `facts` (what it is: CPU, hypervisor,
kernel, memory, tool versions)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from virtbench import safetext
from virtbench.cli import consoles
from virtbench.cli.options import JsonOpt, number_parser

__all__ = ["app", "facts", "preflight"]

app = typer.Typer()


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
        consoles.console.print(checks_table(checks))
    raise typer.Exit(1 if failed(checks) else 0)


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
        consoles.console.print(safetext.text(line), highlight=False)
