"""The checks as a terminal table that fits 80 columns (long values and advice wrap)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from virtbench import safetext
from virtbench.preflight.checks import Check, Status

__all__ = ["checks_table"]

_STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "bold red"}


def checks_table(checks: list[Check], title: str = "noise preflight") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("found", overflow="fold", ratio=2)
    table.add_column("threshold", overflow="fold", ratio=1)
    table.add_column("advice", overflow="fold", ratio=2)
    for c in checks:
        # What /proc, /sys and other processes report: shown as written (safetext).
        table.add_row(safetext.text(c.name), Text(c.status.value, style=_STYLE[c.status]),
                      safetext.text(c.value), safetext.text(c.threshold),
                      safetext.text(c.advice if c.status != Status.OK else ""))
    return table
