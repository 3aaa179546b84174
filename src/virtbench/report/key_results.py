"""Which metrics Key results leads with, and which it folds away.

A report of the vswitch study measures 28 metrics per variant; a reader wants the few that
answer the study's question first. Key results leads, per workload, with its primary metrics
and its study metrics (those a study section reports: ``Section.metrics``, when they have a
direction), in that order; the rest (counts that describe the trial, secondary percentiles,
the tool's other figures) are folded:
an HTML ``<details>``, one terminal line naming them (``report --all`` shows their tables),
and a ``key`` flag on every metric in JSON. A workload that declares neither primary nor study
metrics leads with all of its metrics: there is nothing to fold them behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from virtbench.analysis import Analysis
from virtbench.model import Metric
from virtbench.report.sections import Section

__all__ = ["KeyMetrics", "key_metrics"]


@dataclass(frozen=True)
class KeyMetrics:
    """(workload id, metric) pairs in display order: ``lead`` first, then ``folded``."""

    lead: list[tuple[str, Metric]]
    folded: list[tuple[str, Metric]]

    def is_key(self, workload_id: str, name: str) -> bool:
        return any(wid == workload_id and m.name == name for wid, m in self.lead)

    def folded_names(self) -> list[str]:
        """'workload_id · metric' of each folded metric (stored text: escape it to show)."""
        return [f"{wid} · {m.name}" for wid, m in self.folded]


def _workload_ids(analysis: Analysis) -> list[str]:
    known = [w[0] for w in analysis.workloads]
    return [*known, *sorted({r.workload_id for r in analysis.rows} - set(known))]


def key_metrics(analysis: Analysis, sections: Sequence[Section]) -> KeyMetrics:
    """Each workload's measured metrics split into those Key results leads with (primary,
    then study metrics in the order the sections name them) and the rest (by name)."""
    study: dict[tuple[str, str], int] = {}
    for section in sections:
        for pair in section.metrics:
            study.setdefault((pair[0], pair[1]), len(study))
    lead: list[tuple[str, Metric]] = []
    folded: list[tuple[str, Metric]] = []
    for wid in _workload_ids(analysis):
        metrics = analysis.metrics_of(wid)  # primary first, then by name
        chosen = [m for m in metrics if m.primary or (m.directed and (wid, m.name) in study)]
        if not chosen:
            lead += [(wid, m) for m in metrics]
            continue
        chosen.sort(key=lambda m: (not m.primary, study.get((wid, m.name), 0), m.name))
        lead += [(wid, m) for m in chosen]
        folded += [(wid, m) for m in metrics if m not in chosen]
    return KeyMetrics(lead, folded)
