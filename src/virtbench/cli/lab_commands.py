"""`virtbench lab ...`: the labs' own commands (`lab clean`)."""

from __future__ import annotations

import typer

from virtbench import safetext
from virtbench.cli import consoles

__all__ = ["app", "lab_clean"]

app = typer.Typer(help="Labs: the testbeds experiments build.", no_args_is_help=True)


@app.command("clean")
def lab_clean() -> None:
    """Remove what crashed runs left behind (namespaces, bridges, daemons, mounts, cgroups)."""
    from virtbench.labs.cleanup import clean_leftovers
    from virtbench.plugins import all_labs

    outcome = clean_leftovers(all_labs())
    # Text: paths and object lists are never read as markup; soft-wrapped: one event a line,
    # its paths whole (copyable, and matched by whoever greps the output)
    for event in outcome.events:
        consoles.console.print(
            safetext.text(event.text, style="yellow" if event.kind == "kept" else ""),
            soft_wrap=True)
    consoles.console.print(outcome.summary(), soft_wrap=True)
    if not outcome.complete:
        raise typer.Exit(1)
