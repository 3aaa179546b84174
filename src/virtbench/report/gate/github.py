"""The gate for GitHub Actions: workflow commands on stdout (``::error`` for each row that fails
the gate, ``::notice`` for the others: annotations on the run) and a Markdown job summary.

Stored text is safetext.visible and then escaped as GitHub's runner reads commands
(actions/toolkit, command.ts): in the message ``%``, CR and LF; in a property also ``:`` and
``,``. A name can then neither end the command's line (and start a command of its own) nor add
a property."""

from __future__ import annotations

from typing import TYPE_CHECKING

from virtbench import safetext
from virtbench.report.gate import comparison_rows as gate_rows
from virtbench.report.gate.markdown import render_markdown

if TYPE_CHECKING:
    from virtbench.decide.compare import Comparison

__all__ = ["escape_data", "escape_property", "render_commands", "render_summary"]


def escape_data(value: object) -> str:
    return (safetext.visible(value).replace("%", "%25").replace("\r", "%0D")
            .replace("\n", "%0A"))


def escape_property(value: object) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, title: str, message: str) -> str:
    return f"::{kind} title={escape_property(title)}::{escape_data(message)}"


def render_commands(comparison: Comparison, *, allow_unjudged: bool = False) -> str:
    """One command per row, failing rows first, then the gate's outcome as a notice or error."""
    several = gate_rows.several_variants(comparison)
    failing = gate_rows.failing(comparison, allow_unjudged)
    lines = []
    for row in failing:
        what = "regression" if row.regression else "cannot judge"
        lines.append(_command("error", f"virtbench {what}: {gate_rows.title(row, several)}",
                              gate_rows.explanation(comparison, row)))
    failed = {id(row) for row in failing}  # rows holding NaN never compare equal
    for row in comparison.rows:
        if id(row) not in failed:
            lines.append(_command("notice", f"virtbench {gate_rows.verdict_text(row)}: "
                                            f"{gate_rows.title(row, several)}",
                                  gate_rows.explanation(comparison, row)))
    lines.append(_command("error" if failing else "notice", "virtbench regression gate",
                          gate_rows.summary_line(comparison, allow_unjudged)))
    return "\n".join(lines) + "\n"


def render_summary(comparison: Comparison, *, allow_unjudged: bool = False) -> str:
    """The job summary ($GITHUB_STEP_SUMMARY): the Markdown table of `--format markdown`."""
    return render_markdown(comparison, allow_unjudged=allow_unjudged) + "\n"
