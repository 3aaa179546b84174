"""One assessment: run the rules, measure what can be measured within the budget, attach the
measured gains to their findings, rank, and keep the findings with the run."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from virtbench.assess.domain_rules import DOMAIN_RULES
from virtbench.assess.domain_view import read_domain_view
from virtbench.assess.findings import Change, Evidence, Finding
from virtbench.assess.guest_disk import (
    GUEST_WORKLOAD,
    guest_disk_for,
    guest_problems,
    run_guest_disk,
)
from virtbench.assess.guest_nic import (
    NIC_WORKLOADS,
    guest_nic_for,
    nic_guest_problems,
    nic_measure,
    run_guest_nic,
)
from virtbench.assess.measure import Effect, Plan, WhatIf, plan_whatif, run_plan
from virtbench.assess.probes import probe_for, probe_problems, probes_for
from virtbench.assess.remote_tree import fetch_system_tree
from virtbench.assess.rules import run_rules
from virtbench.assess.system_rules import SYSTEM_RULES, SystemView
from virtbench.kvm.domxml import CpuChange
from virtbench.kvm.tuning_plan import make_plan
from virtbench.model import VirtbenchError
from virtbench.runner.engine import ProgressHook
from virtbench.store import Store
from virtbench.targets.libvirt_connection import is_local, open_connection
from virtbench.targets.target_contract import Target

__all__ = ["Assessment", "assess_domain", "assess_machine", "measurement_budget"]

STATE_PREFIX = "assess:"


@dataclass
class Assessment:
    subject: str
    budget_s: float
    findings: list[Finding] = field(default_factory=list)
    run_id: str | None = None
    guest_run_id: str | None = None
    """The run of the disk what-if in a scratch guest (docs/assess.md), if one was made."""
    guest_nic_run_id: str | None = None
    """The run of the NIC what-ifs in a scratch guest, if one was made."""
    effects: list[Effect] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "budget_s": self.budget_s, "run_id": self.run_id,
                "guest_run_id": self.guest_run_id, "guest_nic_run_id": self.guest_nic_run_id,
                "elapsed_s": round(self.elapsed_s, 2), "notes": self.notes,
                "effects": [e.as_dict() for e in self.effects],
                "findings": [f.as_dict() for f in self.findings]}


RESERVE_S = 12.0
"""Seconds an assessment needs around its trials here: facts before and after, the lab's
loop device and namespaces up and down, the analysis and the output."""


def measurement_budget(budget_s: float, spent_s: float = 0.0, round_s: float = 0.0) -> float:
    """Seconds the runner may spend on trials (warm-up and minimum repetitions included): the
    budget less what the checks spent, :data:`RESERVE_S` and 5 % for what runs around the
    trials, and one round that may start just before the runner's time is up."""
    return max(0.0, budget_s - spent_s - RESERVE_S - 0.05 * budget_s - round_s)


def _fitting(assessment: Assessment, whatif: WhatIf | None, spent_s: float,
             in_guest: Iterable[str] = ()) -> Plan:
    """The CPU what-if and every probe that can run here and whose minimum repetitions still
    fit in the budget; a note for each probe left out. Probes of the findings ``in_guest``
    (measured in a scratch guest already) are left out."""
    plan = Plan(whatif)
    for probe in probes_for(assessment.findings):
        if probe.measure in in_guest:
            continue
        problems = probe_problems(probe)
        if problems:
            assessment.notes.append(f"probe {probe.id} not measured: {'; '.join(problems)}")
            continue
        candidate = Plan(whatif, (*plan.probes, probe))
        room = measurement_budget(assessment.budget_s, spent_s, candidate.round_s())
        if candidate.min_cost_s() > 0.75 * room:
            assessment.notes.append(
                f"probe {probe.id} not measured: its minimum repetitions do not fit in the "
                f"budget beside the others' (about {candidate.min_cost_s():.0f} s of "
                f"{room:.0f} s); give a longer --budget")
            continue
        plan = candidate
    return plan


def _guest_run(assessment: Assessment, label: str, fallback: str, problems: list[str],
               cost_s: float, started: float,
               run: Callable[[], tuple[str, list[Effect]]]) -> tuple[str | None, list[Effect]]:
    """One what-if in a scratch guest, where one can be started and fits in the budget: its
    run id and effects (none: a note says why, and ``fallback`` what is used instead)."""
    room = measurement_budget(assessment.budget_s, time.monotonic() - started)
    if problems:
        assessment.notes.append(f"{label} what-if not measured in a guest "
                                f"({'; '.join(problems)}): {fallback}")
        return None, []
    if cost_s > 0.6 * room:
        assessment.notes.append(f"{label} what-if not measured in a guest: a scratch guest "
                                f"needs about {cost_s:.0f} s of {room:.0f} s left (give a "
                                f"longer --budget): {fallback}")
        return None, []
    try:
        run_id, effects = run()
    except VirtbenchError as exc:
        assessment.notes.append(f"{label} what-if in a guest failed ({exc}): {fallback}")
        return None, []
    if not effects:  # the run stopped early (its failures are stored with it)
        assessment.notes.append(f"{label} what-if in a guest measured nothing (run {run_id}: "
                                f"virtbench report {run_id}): {fallback}")
        return run_id, []
    assessment.effects += effects
    assessment.notes.append(f"{label} what-if measured in a scratch guest: run {run_id} "
                            f"(virtbench report {run_id})")
    return run_id, effects


def _in_guest(assessment: Assessment, store: Store, started: float,
              progress: ProgressHook | None, image_cache: str | None) -> tuple[str, ...]:
    """The disk what-ifs measured in a scratch guest, where one can be started and fits in
    the budget: the findings measured (empty: none; the loop-device probe stays)."""
    whatif = guest_disk_for(assessment.findings, image_cache)
    if whatif is None:
        return ()
    fallback = ("the cache mode is measured on a loop device instead"
                if any(f.measure == "disk-cache" for f in assessment.findings)
                else "its gain is cited")
    run_id, effects = _guest_run(assessment, "disk", fallback, guest_problems(whatif),
                                 whatif.cost_s(), started,
                                 lambda: run_guest_disk(store, whatif, progress))
    assessment.guest_run_id = run_id
    return tuple(e.measure for e in effects)


def _nic_in_guest(assessment: Assessment, store: Store, started: float,
                  progress: ProgressHook | None, image_cache: str | None) -> tuple[str, ...]:
    """The NIC what-ifs measured in one scratch guest, where one can be started and fits in
    the budget: the probes' measures it replaces (nic-offloads once the emulated NIC is
    measured in the guest; the veth offload probe stays otherwise)."""
    cache = str(Path(image_cache).with_name("nic-image")) if image_cache else None
    whatif = guest_nic_for(assessment.findings, cache)
    if whatif is None:
        return ()
    fallback = ("the emulated NIC's offloads are measured on a veth pair instead"
                if whatif.found_model else "its gain is cited")
    if whatif.found_model and whatif.queues > 1:
        fallback += "; multiqueue stays cited"
    run_id, effects = _guest_run(assessment, "NIC", fallback, nic_guest_problems(whatif),
                                 whatif.cost_s(), started,
                                 lambda: run_guest_nic(store, whatif, progress))
    assessment.guest_nic_run_id = run_id
    return ("nic-offloads",) if any(e.measure == "nic-model" for e in effects) else ()


def _measure(assessment: Assessment, store: Store, whatif: WhatIf | None, started: float,
             progress: ProgressHook | None, image_cache: str | None = None,
             guest_whatifs: bool = False) -> None:
    in_guest = (*_in_guest(assessment, store, started, progress, image_cache),
                *_nic_in_guest(assessment, store, started, progress, image_cache)) \
        if guest_whatifs else ()
    spent = time.monotonic() - started
    plan = _fitting(assessment, whatif, spent, in_guest)
    try:
        # in_guest: what the probes leave out; effects so far: every what-if a guest measured
        _measure_plan(assessment, store, plan, spent, progress,
                      bool(in_guest or assessment.effects))
    finally:
        if assessment.run_id is None:
            assessment.run_id = assessment.guest_run_id or assessment.guest_nic_run_id
        _attach(assessment.findings, assessment.effects)


def _measure_plan(assessment: Assessment, store: Store, plan: Plan, spent: float,
                  progress: ProgressHook | None, in_guest: bool) -> None:
    """The assessment's own run (CPU what-if and probes), when it has anything to measure."""
    if plan.empty():
        if not in_guest:
            assessment.notes.append("nothing measurable here within the budget; gains are "
                                    "cited")
        return
    budget = measurement_budget(assessment.budget_s, spent, plan.round_s())
    if budget <= 0:
        assessment.notes.append(f"budget {assessment.budget_s:g} s too small to measure; "
                                "gains are cited")
        return
    if plan.cpu is not None:
        assessment.notes += plan.cpu.skipped
    assessment.run_id, effects = run_plan(store, plan, budget, progress)
    assessment.effects += effects


def _cpu_whatif(assessment: Assessment, granted: Iterable[str], added: Iterable[str] | None,
                started: float) -> WhatIf | None:
    budget = measurement_budget(assessment.budget_s, time.monotonic() - started)
    whatif = plan_whatif(granted, added, budget)
    if whatif is None:
        assessment.notes.append("no measurable workload uses the flags in question")
    return whatif


def _attach(findings: list[Finding], effects: list[Effect]) -> None:
    """Each finding's measured gain, and what was measured beside what stays cited."""
    cpu = [e for e in effects if e.measure == "cpu-flags"]
    for finding in findings:
        if finding.measure == "cpu-flags" and cpu:
            finding.gain = max(cpu, key=lambda e: e.speedup).gain()
            finding.evidence += [Evidence("measured (this host's masks, this run)",
                                          e.gain().summary)
                                 for e in sorted(cpu, key=lambda e: -e.speedup)]
            continue
        probe = probe_for(finding)
        effect = _guest_effect(finding, effects)
        where = "measured (this run, in a guest)"
        if effect is None:
            effect = next((e for e in effects if probe and e.workload == probe.id), None)
            where = ("measured (this run, on a loop device)" if probe and probe.needs == "disk"
                     else "measured (this run)")
        if effect is None:
            continue
        cited = finding.gain
        finding.gain = effect.gain()
        finding.evidence.append(Evidence(where, effect.what))
        if cited is not None:
            finding.evidence.append(Evidence(
                "cited (not measured)", f"{cited.summary} [{cited.source}]; "
                                        f"{effect.not_measured}"))


def _guest_effect(finding: Finding, effects: list[Effect]) -> Effect | None:
    """The effect measured in a scratch guest that quantifies ``finding``, if any."""
    nic = nic_measure(finding)
    for effect in effects:
        if effect.workload == GUEST_WORKLOAD and effect.measure == finding.measure:
            return effect
        if nic is not None and effect.measure == nic and effect.workload == NIC_WORKLOADS[nic]:
            return effect
    return None


def _finish(assessment: Assessment, store: Store, started: float) -> Assessment:
    assessment.findings.sort(key=Finding.rank_key)
    assessment.elapsed_s = time.monotonic() - started
    for run_id in dict.fromkeys((assessment.run_id, assessment.guest_run_id,
                                 assessment.guest_nic_run_id)):
        if run_id is not None:
            store.save_state(STATE_PREFIX + run_id, assessment.as_dict())
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
    whatif = None
    if any(f.measure == "cpu-flags" and f.rule == "cpu-flags-present"
           for f in assessment.findings):
        whatif = _cpu_whatif(assessment, [], None, started)
    else:
        assessment.notes.append("this CPU lacks the flags in question, so masking cannot show "
                                "what they would buy here; gains are cited")
    _measure(assessment, store, whatif, started, progress)
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
                  guest: Target | None = None,
                  guest_image_cache: str | None = None) -> Assessment:
    """A libvirt domain: domain rules; inside the guest (``guest``: its SSH target) the
    guest rules; where libvirt runs on this machine, the host's own rules and the CPU-flag
    what-if for exactly the flags the finding proposes to add, and the disk what-ifs in a
    scratch guest (``guest_image_cache``: the guest lab's image cache; None: its default)."""
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
    whatif = None
    if cpu is not None:
        added = cpu.extra["require"]
        if set(added) <= local.flags():
            whatif = _cpu_whatif(assessment, view.guest_flags, added, started)
        else:
            assessment.notes.append("this host lacks some of the flags: the gain is cited")
    _measure(assessment, store, whatif, started, progress, guest_image_cache,
             guest_whatifs=True)
    if view.virttype == "qemu" and any(e.measure == "cpu-flags" for e in assessment.effects):
        assessment.notes.append("the guest runs under TCG: the gains are measured on this "
                                "host with its masks, i.e. what a KVM guest gets")
    return _finish(assessment, store, started)
