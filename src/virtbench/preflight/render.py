"""The checks as a terminal table that fits 80 columns (long values and advice wrap)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

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
        table.add_row(c.name, Text(c.status.value, style=_STYLE[c.status]), Text(c.value),
                      Text(c.threshold), Text(c.advice if c.status != Status.OK else ""))
    return table
