"""`compare BASE NEW --explain` in the terminal: per workload, the functions whose share of the
profile samples changed most, then the perf counters that changed. Function names and labels
are stored text: every cell is safetext.text, never markup."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

from virtbench import safetext
from virtbench.report.gate.comparison_rows import ratio_text, verdict_text

if TYPE_CHECKING:
    from virtbench.decide.explain import Estimate, Explanation

__all__ = ["estimate_text", "render_explanations", "share_pair", "unresolved_text"]


def estimate_text(e: Estimate, *, signed: bool = False) -> str:
    """'+83.1 [82.4, 83.8]' (percentage points, or % for a share); no interval: the value."""
    if math.isnan(e.value):
        return "–"
    value = f"{e.value:+.1f}" if signed else f"{e.value:.1f}"
    if not e.has_interval:
        return value
    return f"{value} [{e.low:+.1f}, {e.high:+.1f}]" if signed else \
        f"{value} [{e.low:.1f}, {e.high:.1f}]"


def _two_lines(text: str) -> str:
    """'+83.0 [+80.7, +85.3]' as the value above its interval: the table fits 80 columns."""
    return text.replace(" [", "\n[", 1)


def share_pair(base: Estimate, new: Estimate) -> str:
    return f"{base.value:.1f} → {new.value:.1f}"


def unresolved_text(item: Explanation) -> str:
    """Which frames stayed unresolved and how many samples ran in one, per side."""
    def pct(value: float) -> str:
        return "–" if math.isnan(value) else f"{value:.1f} %"

    names = ", ".join(item.unresolved_frames[:8]) + (
        f" and {len(item.unresolved_frames) - 8} more" if len(item.unresolved_frames) > 8 else "")
    return (f"samples that ran in an unresolved frame: BASE {pct(item.unresolved_base_pct)}, "
            f"NEW {pct(item.unresolved_new_pct)}; unresolved frames: {names or 'none'}")


def render_explanations(items: Sequence[Explanation], console: Console) -> None:
    for item in items:
        console.print()
        console.print(safetext.text(
            f"explain {item.workload_id}: BASE {item.base} ({item.base_trials} profiled "
            f"trials) → NEW {item.new} ({item.new_trials})"), highlight=False)
        if item.functions:
            table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1),
                          title=f"{item.scope_text}, %, mean over trials; Δ NEW − BASE in "
                                "percentage points [95 % CI, Welch]; self: as the leaf, "
                                "total: anywhere on the stack; kind: user unless marked",
                          title_justify="left")
            table.add_column("function [kind]", overflow="fold", min_width=16)
            table.add_column("self %", no_wrap=True, justify="right")
            table.add_column("Δ self pp", no_wrap=True, justify="right")
            table.add_column("total %", no_wrap=True, justify="right")
            table.add_column("Δ total pp", no_wrap=True, justify="right")
            for c in item.functions:
                table.add_row(safetext.text(c.frame.label),
                              share_pair(c.self_base, c.self_new),
                              _two_lines(estimate_text(c.self_diff, signed=True)),
                              share_pair(c.total_base, c.total_new),
                              _two_lines(estimate_text(c.total_diff, signed=True)))
            console.print(table)
        if item.counters:
            counters = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1),
                             title="perf counters that changed (95 % CI of NEW/BASE excludes "
                                   "1)", title_justify="left")
            counters.add_column("counter", overflow="fold")
            counters.add_column("BASE → NEW (mean)", overflow="fold")
            counters.add_column("NEW/BASE [95 % CI]", no_wrap=True)
            counters.add_column("verdict", overflow="fold")
            for row in item.counters:
                r = row.result
                counters.add_row(safetext.text(row.metric.name),
                                 f"{r.mean_base:.4g} → {r.mean_new:.4g} {row.metric.unit}",
                                 ratio_text(row), verdict_text(row))
            console.print(counters)
        else:
            console.print("perf counters: none changed significantly (or none stored)",
                          highlight=False)
        console.print(safetext.text(unresolved_text(item)), highlight=False)
        for note in item.notes:
            console.print(safetext.text(f"note: {note}"), highlight=False)
