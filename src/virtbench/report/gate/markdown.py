"""The gate as a GitHub-flavoured Markdown table for a pull-request comment or a job summary:
workload · metric, BASE and NEW means, NEW/BASE with its interval, verdict, gate; then each
metric's definition. Every piece of stored text goes through safetext.markdown_text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from virtbench.model import NOT_JUDGED
from virtbench.report.formatting import fmt_value
from virtbench.report.gate import comparison_rows as gate_rows
from virtbench.safetext import markdown_text as md

if TYPE_CHECKING:
    from virtbench.decide.compare import Comparison

__all__ = ["render_markdown"]

_GATE = {"regression": "**FAIL**", "unjudged": "**FAIL** (cannot judge)",
         "allowed": "passed (cannot judge)", "ok": "ok", "no gate": "–"}


def render_markdown(comparison: Comparison, *, allow_unjudged: bool = False) -> str:
    several = gate_rows.several_variants(comparison)
    base, new = comparison.base, comparison.new
    base_ids = ", ".join(md(i) for i in gate_rows.run_ids(comparison, "base"))
    new_ids = ", ".join(md(i) for i in gate_rows.run_ids(comparison, "new"))
    lines = ["### virtbench compare", "",
             f"BASE {base_ids} ({md(base.experiment)} on {md(base.host or '?')}) → "
             f"NEW {new_ids} ({md(new.experiment)} on {md(new.host or '?')})", "",
             gate_rows.summary_line(comparison, allow_unjudged), "",  # no stored text
             f"NEW/BASE = ratio of means with its 95 % CI; equivalent = within "
             f"±{comparison.equivalence_pct:g} % (TOST).", "",
             "| workload · metric | " + ("variant | " if several else "")
             + "BASE mean | NEW mean | NEW/BASE [95 % CI] | verdict | gate |",
             "|---|" + ("---|" if several else "") + "---:|---:|---|---|---|"]
    for row in comparison.rows:
        r, unit = row.result, row.metric.unit
        cells = [f"{md(row.workload_id)} · {md(row.metric.name)}"]
        if several:
            cells.append(md(row.variant))
        cells += [md(fmt_value(r.mean_base, unit)), md(fmt_value(r.mean_new, unit)),
                  gate_rows.ratio_text(row), gate_rows.verdict_text(row),
                  _GATE[gate_rows.outcome(comparison, row, allow_unjudged)]]
        lines.append("| " + " | ".join(cells) + " |")
    if comparison.not_judged:
        lines += ["", f"Left out, {NOT_JUDGED}: "
                  + ", ".join(md(name) for name in comparison.not_judged) + "."]
    lines += ["", "Metrics:", ""]
    seen: set[tuple[str, str]] = set()
    for row in comparison.rows:
        if (row.workload_id, row.metric.name) not in seen:
            seen.add((row.workload_id, row.metric.name))
            lines.append(f"- {md(row.workload_id)} · {md(row.metric.name)}: "
                         f"{gate_rows.definition(row.metric, md)}; "
                         f"{gate_rows.threshold_text(comparison, row.metric)}")
    return "\n".join(lines) + "\n"
