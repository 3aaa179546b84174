"""What `virtbench parse TOOL FILE` does: a saved tool output (or a capture) as normalised
measurements, printed as a table or as JSON.

Called by the command of the full app (virtbench.cli.parse, which declares the options) and
straight from the entry point (virtbench.cli.entry), which skips the app for a plain call. So
only what a parse needs is imported here (no typer); rich only for a table or a warning.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from virtbench import safetext

__all__ = ["measurement_json", "parse_command", "print_notes"]


def parse_command(tool: str, file: Path, as_json: bool, flow: str | None) -> None:
    """``virtbench parse TOOL FILE [--json] [--flow SPEC]`` (options: virtbench.cli.parse)."""
    if tool == "pcap":
        from virtbench.cli.parse_pcap import parse_pcap_command

        parse_pcap_command(file, flow, as_json)
        return
    from virtbench.cli.input import parse_input, read_input_bytes
    from virtbench.plugins import get_parser

    parser = get_parser(tool)
    parsed = parse_input(parser.read, read_input_bytes(file, f"{tool} output"), tool, file)
    units = {m.name: m for m in parser.metrics}
    notes = [("warning", w) for w in parsed.warnings] + (
        [("partial", "the tool's run was cut short; values cover part of it")]
        if parsed.partial else [])
    print_notes(notes)

    def unit(metric: str) -> str:
        return units[metric].unit if metric in units else ""

    if as_json:
        document: dict[str, Any] = {
            "tool": tool, "format": parsed.format, "partial": parsed.partial,
            "warnings": parsed.warnings,
            "measurements": [measurement_json(m.metric, m.value, unit(m.metric), m.status, m.t,
                                              m.labels) for m in parsed.measurements]}
        sys.stdout.write(safetext.dumps(document, indent=2) + "\n")
        return
    from rich.table import Table

    table = Table("metric", "value", "unit", "status", "labels",
                  title=safetext.markup(parsed.format))
    for m in parsed.measurements:  # labels and statuses are the tool's text: never markup
        table.add_row(*map(safetext.text, (
            m.metric, "–" if m.value is None else f"{m.value:.6g}", unit(m.metric), m.status,
            ",".join(f"{k}={v}" for k, v in m.labels.items()))))
    safetext.console().print(table)


def measurement_json(metric: str, value: float | None, unit: str, status: str,
                     t: float | None, labels: dict[str, str]) -> dict[str, Any]:
    """One measurement as ``parse --json`` prints it: a NaN or infinite value is null and its
    status says why (``not_finite`` where the parser said ok)."""
    value, status = safetext.finite_or_reason(value, status)
    return {"metric": metric, "value": value, "unit": unit, "status": status, "t": t,
            "labels": labels}


def print_notes(notes: list[tuple[str, str]]) -> None:
    """(kind, text) notes on stderr: in colour for a person, as plain unwrapped lines (no rich
    to import) for a log or a pipe."""
    if not sys.stderr.isatty():  # the tool's text, shown as written (safetext.visible)
        sys.stderr.write("".join(f"{kind}: {safetext.visible(text)}\n" for kind, text in notes))
        return
    from rich.text import Text

    err = safetext.console(stderr=True)
    for kind, text in notes:
        err.print(Text.assemble((f"{kind}:", "yellow"), " ", safetext.text(text)))
