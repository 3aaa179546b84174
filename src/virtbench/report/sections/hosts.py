"""Hosts side by side: one column per host (study 002's table), and what differs between them.

Applies when the analysis holds runs of the same experiment on two or more distinct hosts (a
fleet run, or runs imported from several machines): each variant's mean with its CI per host,
then the comparability diff of the hosts' facts (decide.comparability, each host against the
first).
"""

from __future__ import annotations

import math
from typing import Any

from virtbench.analysis.report_model import Analysis, MetricRow
from virtbench.decide.comparability import differences_many
from virtbench.decide.runs import RunData
from virtbench.report.sections import Section, SectionPlugin
from virtbench.stats.summary import Summary

__all__ = ["SECTIONS", "build_hosts"]


def _cell(summary: Summary | None, unit: str) -> str:
    if summary is None or summary.n == 0:
        return "–"
    if math.isnan(summary.ci_half_width_rel):
        return f"{summary.mean:.4g} {unit} (n={summary.n})"
    return f"{summary.mean:.4g} {unit} ±{summary.ci_half_width_rel:.1%} (n={summary.n})"


def _run_data(analysis: Analysis) -> list[RunData]:
    before: dict[str, dict[str, Any]] = {}
    for run_id, phase, data in analysis.facts:
        if phase == "before":
            before.setdefault(run_id, data)
    return [RunData(id=r.id, experiment=r.experiment, host=r.host, started_at=r.started_at,
                    status=r.status, spec_yaml=r.spec_yaml, source="store", variants={},
                    baseline=r.baseline, workloads={}, metrics={}, facts=before.get(r.id, {}))
            for r in analysis.runs]


def build_hosts(analysis: Analysis) -> list[Section]:
    runs = analysis.runs
    hosts = [r.host for r in runs]
    if len(runs) < 2 or len(set(hosts)) != len(hosts) or len({r.experiment for r in runs}) != 1:
        return []
    table = Section(
        "hosts", "Hosts side by side",
        paragraphs=["One column per host: the mean of each variant with the relative half-width "
                    "of its 95 % CI and n. Hosts differ in more than the variant (see the facts "
                    "below), so a difference between columns is a difference between machines."],
        columns=["workload · metric", "variant", *hosts])
    by_key: dict[tuple[str, str, str], dict[str, MetricRow]] = {}
    for row in analysis.rows:
        host, _, variant = row.variant.partition("/")
        if host in hosts and variant:
            by_key.setdefault((row.workload_id, row.metric.name, variant), {})[host] = row
    for (wid, metric, variant), cells in by_key.items():
        unit = next(iter(cells.values())).metric.unit
        table.rows.append([f"{wid} · {metric}", variant,
                           *[_cell(cells[h].summary if h in cells else None, unit)
                             for h in hosts]])
    sections = [table]
    diffs = differences_many(_run_data(analysis))
    facts = Section("hosts-facts", f"Facts that differ from {hosts[0]}",
                    columns=["host", "fact", hosts[0], "this host"])
    host_of = {r.id: r.host for r in runs}
    for run_id, items in diffs.items():
        for d in items:
            facts.rows.append([host_of[run_id], d.what + (" (strict)" if d.strict else ""),
                               d.base, d.new])
    if not facts.rows:
        facts.paragraphs.append("The hosts agree on every compared fact (CPU model and flags, "
                                "kernel, OS, hypervisor, memory, tool and package versions).")
    sections.append(facts)
    return sections


SECTIONS = (SectionPlugin("hosts", build_hosts),)
