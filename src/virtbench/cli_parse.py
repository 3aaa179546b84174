"""What `virtbench parse TOOL FILE` does: a saved tool output (or a capture) as normalised
measurements, printed as a table or as JSON.

Called by the command of the full app (virtbench.cli.parse, which declares the options) and
straight from the entry point (virtbench.cli_entry), which skips the app for a plain call. So
only what a parse needs is imported here; rich only for a table or a warning.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["parse_command", "print_notes", "shown"]

# C0 controls but tab, DEL, C1 controls: an escape sequence from a file would drive the terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """Text from a file as it may reach a terminal: control characters made visible
    (``\x1b``), so a job name or a warning cannot retitle the window or hide text. (Rich
    markup is not interpreted either: callers print it as a ``rich.text.Text``.)"""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def parse_command(tool: str, file: Path, as_json: bool, flow: str | None) -> None:
    """``virtbench parse TOOL FILE [--json] [--flow SPEC]`` (its options: virtbench.cli.parse)."""
    if tool == "pcap":
        from virtbench.cli_pcap import parse_pcap_command

        parse_pcap_command(file, flow, as_json)
        return
    from virtbench.cli_input import parse_input, read_input_bytes
    from virtbench.parsers.registry import get_parser

    parser = get_parser(tool)
    parsed = parse_input(parser.read, read_input_bytes(file), tool, file)
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
            "measurements": [{"metric": m.metric, "value": m.value, "unit": unit(m.metric),
                              "status": m.status, "t": m.t, "labels": m.labels}
                             for m in parsed.measurements]}
        # Strict JSON: parsers never leave a non-finite value ok (parsers.base.check_figures).
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
                         + "\n")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Every cell is Text: names and labels come from the file ('[/]' is no markup here).
    table = Table("metric", "value", "unit", "status", "labels",
                  title=Text(shown(parsed.format)))
    for m in parsed.measurements:
        table.add_row(Text(shown(m.metric)), "–" if m.value is None else f"{m.value:.6g}",
                      unit(m.metric), m.status,
                      Text(shown(",".join(f"{k}={v}" for k, v in m.labels.items()))))
    Console().print(table)


def print_notes(notes: list[tuple[str, str]]) -> None:
    """(kind, text) notes on stderr: in colour for a person, as plain unwrapped lines (no rich
    to import) for a log or a pipe."""
    if not sys.stderr.isatty():
        sys.stderr.write("".join(f"{kind}: {shown(text)}\n" for kind, text in notes))
        return
    from rich.console import Console
    from rich.text import Text

    err = Console(stderr=True)
    for kind, text in notes:
        err.print(Text.assemble((f"{kind}:", "yellow"), f" {shown(text)}"))
