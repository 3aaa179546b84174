"""One assessment: run the rules, measure what can be measured within the budget, attach the
measured gains to their findings, rank, and keep the findings with the run."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from virtbench.assess.domain_rules import DOMAIN_RULES
from virtbench.assess.domain_view import read_domain_view
from virtbench.assess.findings import Change, Evidence, Finding
from virtbench.assess.measure import FlagEffect, plan_whatif, run_whatif
from virtbench.assess.remote_tree import fetch_system_tree
from virtbench.assess.rules import run_rules
from virtbench.assess.system_rules import SYSTEM_RULES, SystemView
from virtbench.kvm.domxml import CpuChange
from virtbench.kvm.plan import make_plan
from virtbench.model import VirtbenchError
from virtbench.runner.engine import ProgressHook
from virtbench.store import Store
from virtbench.targets.base import Target
from virtbench.targets.libvirt_connection import is_local, open_connection

__all__ = ["Assessment", "assess_domain", "assess_machine", "measurement_budget"]

STATE_PREFIX = "assess:"


@dataclass
class Assessment:
    subject: str
    budget_s: float
    findings: list[Finding] = field(default_factory=list)
    run_id: str | None = None
    effects: list[FlagEffect] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "budget_s": self.budget_s, "run_id": self.run_id,
                "elapsed_s": round(self.elapsed_s, 2), "notes": self.notes,
                "effects": [{"workload": e.workload, "metric": e.metric, "speedup": e.speedup,
                             "ci_low": e.ci_low, "ci_high": e.ci_high, "n": e.n,
                             "ci_half_width_rel": e.half_width} for e in self.effects],
                "findings": [f.as_dict() for f in self.findings]}


def measurement_budget(budget_s: float) -> float:
    """Seconds the runner may keep adding repetitions: the rest of the budget goes to facts
    before and after, the minimum repetitions, the last round and the analysis."""
    return max(0.0, 0.8 * budget_s - 10.0)


def _measure(assessment: Assessment, store: Store, granted: Iterable[str],
             added: Iterable[str] | None, progress: ProgressHook | None) -> None:
    budget = measurement_budget(assessment.budget_s)
    whatif = plan_whatif(granted, added, budget)
    if whatif is None:
        assessment.notes.append("no measurable workload uses the flags in question")
        return
    if budget <= 0:
        assessment.notes.append(f"budget {assessment.budget_s:g} s too small to measure; "
                                "gains are cited")
        return
    assessment.notes += whatif.skipped
    assessment.run_id, assessment.effects = run_whatif(store, whatif, budget, progress)


def _attach(findings: list[Finding], effects: list[FlagEffect], measure: str) -> None:
    if not effects:
        return
    best = max(effects, key=lambda e: e.speedup)
    for finding in findings:
        if finding.measure != measure:
            continue
        finding.gain = best.gain()
        finding.evidence += [Evidence("measured (this host's masks, this run)", e.gain().summary)
                             for e in sorted(effects, key=lambda e: -e.speedup)]


def _finish(assessment: Assessment, store: Store, started: float) -> Assessment:
    assessment.findings.sort(key=Finding.rank_key)
    assessment.elapsed_s = time.monotonic() - started
    if assessment.run_id is not None:
        store.save_state(STATE_PREFIX + assessment.run_id, assessment.as_dict())
    return assessment


def assess_machine(store: Store, budget_s: float, root: Path = Path("/"),
                   progress: ProgressHook | None = None) -> Assessment:
    """This machine (a host or a guest): system rules, then the CPU-flag what-if measured with
    this host's masks: a qemu64-like CPU (none of the studied flags) against this CPU."""
    started = time.monotonic()
    view = SystemView(root)
    where = "guest" if view.in_guest() else "host"
    assessment = Assessment(f"this machine ({where})", budget_s,
                            run_rules(SYSTEM_RULES, view))
    if any(f.measure == "cpu-flags" and f.rule == "cpu-flags-present"
           for f in assessment.findings):
        _measure(assessment, store, [], None, progress)
        _attach(assessment.findings, assessment.effects, "cpu-flags")
    else:
        assessment.notes.append("this CPU lacks the flags in question, so masking cannot show "
                                "what they would buy here; gains are cited")
    return _finish(assessment, store, started)


def _cpu_changes(finding: Finding, conn: Any, name: str, base_xml: str, host: Any,
                 catalog: Any) -> None:
    """The exact XML diff and cloud settings of the tune the finding proposes."""
    plan = make_plan(name, base_xml, CpuChange(require=tuple(finding.extra["require"])),
                     host, catalog)
    finding.changes += [Change("libvirt-xml", plan.diff),
                        Change("cloudstack", plan.cloudstack()),
                        Change("openstack", plan.nova())]
    finding.evidence += [Evidence("kvm tune", w) for w in plan.warnings]


def _prefixed(findings: list[Finding], where: str) -> list[Finding]:
    """Host or guest findings beside a domain's; its CPU flags are the domain rule's job."""
    kept = [f for f in findings if f.measure != "cpu-flags"]
    for finding in kept:
        finding.title = f"{where}: {finding.title}"
    return kept


def _guest_findings(guest: Target) -> list[Finding]:
    with tempfile.TemporaryDirectory(prefix="vb-assess-guest-") as tmp:
        return _prefixed(run_rules(SYSTEM_RULES, fetch_system_tree(guest, Path(tmp))), "guest")


def assess_domain(store: Store, name: str, uri: str | None, budget_s: float,
                  progress: ProgressHook | None = None,
                  guest: Target | None = None) -> Assessment:
    """A libvirt domain: domain rules; inside the guest (``guest``: its SSH target) the
    guest rules; where libvirt runs on this machine, the host's own rules and the CPU-flag
    what-if for exactly the flags the finding proposes to add."""
    started = time.monotonic()
    conn = open_connection(uri)
    try:
        view, host, catalog, base_xml = read_domain_view(conn, name)
        assessment = Assessment(f"domain {name} on {view.uri}", budget_s,
                                run_rules(DOMAIN_RULES, view), notes=list(view.notes))
        if guest is not None:
            assessment.findings += _guest_findings(guest)
        cpu = next((f for f in assessment.findings if f.rule == "cpu-flags"), None)
        if cpu is not None:
            try:
                _cpu_changes(cpu, conn, name, base_xml, host, catalog)
            except VirtbenchError as exc:
                assessment.notes.append(f"kvm tune would refuse this change: {exc}")
    finally:
        conn.close()
    if not is_local(view.uri):
        assessment.notes.append("libvirt is remote: host rules and measurements skipped")
        return _finish(assessment, store, started)
    local = SystemView()
    assessment.findings += _prefixed(run_rules(SYSTEM_RULES, local), "host")
    if cpu is not None:
        added = cpu.extra["require"]
        if set(added) <= local.flags():
            _measure(assessment, store, view.guest_flags, added, progress)
            _attach(assessment.findings, assessment.effects, "cpu-flags")
            if view.virttype == "qemu" and assessment.effects:
                assessment.notes.append("the guest runs under TCG: the gains are measured on "
                                        "this host with its masks, i.e. what a KVM guest gets")
        else:
            assessment.notes.append("this host lacks some of the flags: the gain is cited")
    return _finish(assessment, store, started)
