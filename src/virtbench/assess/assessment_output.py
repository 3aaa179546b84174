"""Assessments as text (terminal), JSON, and report sections (HTML: findings on top)."""

from __future__ import annotations

import textwrap

from virtbench import safetext
from virtbench.assess.assessment import Assessment
from virtbench.assess.findings import Finding, Gain
from virtbench.report.sections import Section

__all__ = ["findings_section", "gain_text", "render_json", "render_text"]


def gain_text(gain: Gain | None) -> str:
    if gain is None:
        return "—"
    if gain.basis == "measured" and gain.speedup is not None:
        return f"measured ×{gain.speedup:.2f} (95 % CI {gain.ci_low:.2f}–{gain.ci_high:.2f}): " \
               f"{gain.summary}"
    return f"cited: {gain.summary}" + (f" [{gain.source}]" if gain.source else "")


def _indent(text: str, prefix: str) -> str:
    return textwrap.indent(text.rstrip("\n"), prefix)


def _finding_text(rank: int, finding: Finding) -> list[str]:
    lines = [f"{rank}. [{finding.severity.upper()}] {finding.title}  (rule {finding.rule})",
             f"   gain:   {gain_text(finding.gain)}"]
    lines += [f"   evidence: {e.source}: {e.value}" for e in finding.evidence]
    for change in finding.changes:
        if "\n" in change.text:
            lines.append(f"   change ({change.kind}):")
            lines.append(_indent(change.text, "       "))
        else:
            lines.append(f"   change ({change.kind}): {change.text}")
    lines.append(f"   cost:   {finding.cost}")
    lines.append(f"   source: {finding.source}")
    return lines


def render_text(assessment: Assessment) -> str:
    """The findings as terminal text. Evidence (a guest's domain XML, /proc, a tool's output)
    is text from the machine assessed: control characters show as escapes (safetext)."""
    lines = [f"assessment of {assessment.subject}: {len(assessment.findings)} findings, "
             f"ranked by measured (then cited) gain; {assessment.elapsed_s:.0f} s of a "
             f"{assessment.budget_s:g} s budget"]
    if assessment.run_id:
        lines.append(f"measurements: run {assessment.run_id} (virtbench report "
                     f"{assessment.run_id}; earlier assessments: virtbench history "
                     f"{assessment.run_id})")
    lines += [f"note: {n}" for n in assessment.notes]
    for rank, finding in enumerate(assessment.findings, 1):
        lines.append("")
        lines += _finding_text(rank, finding)
    return safetext.visible("\n".join(lines)) + "\n"


def render_json(assessment: Assessment) -> str:
    """Strict JSON: a gain without a finite figure is null (safetext.dumps)."""
    return safetext.dumps(assessment.as_dict(), indent=1) + "\n"


def findings_section(assessment: Assessment) -> Section:
    """The findings as the report's lead section."""
    rows = [[str(rank), f.severity, f.title, gain_text(f.gain),
             "\n".join(f"{c.kind}: {c.text}" for c in f.changes), f.cost]
            for rank, f in enumerate(assessment.findings, 1)]
    return Section(key="assess-findings", title=f"Assessment of {assessment.subject}",
                   paragraphs=["Findings ranked by measured gain (speedup with its 95 % CI, "
                               "from this run), then by cited gain and severity.",
                               *assessment.notes],
                   columns=["#", "severity", "finding", "expected gain", "change", "cost"],
                   rows=rows)
