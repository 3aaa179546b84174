"""One build step from an experiment to what a run executes: the plan.

``build_plan`` takes an experiment (loaded from a file, its plugins already resolved with file
lines, or built in code) and returns an immutable Plan: the workloads constructed once from
their validated parameters, each (variant, workload)'s realisation computed once, each
workload's time limit, and the lab's class and parameters. Knobs are judged once, by
``spec.resolve``, never again here. ``check_plan`` adds what depends on where the run happens
(the target, the lab's tools, the workloads' tools). `run --check`, `run`, `--resume`,
`calibrate`, fleet hosts and `assess` all go through these two. No store, facts or preflight:
checking an experiment imports none of them."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from virtbench.labs.lab_contract import Lab
from virtbench.model import VirtbenchError
from virtbench.runner.deadline import time_limits
from virtbench.runner.schedule import Pair
from virtbench.runner.search import searched
from virtbench.runner.service_check import service_problems
from virtbench.spec.models import Adaptive, Experiment
from virtbench.spec.resolve import ResolvedExperiment, SpecError, resolve
from virtbench.targets.factory import make_target
from virtbench.targets.target_contract import Target
from virtbench.workloads.workload_contract import Realisation, Workload

if TYPE_CHECKING:
    from virtbench.profiling import Profiler

__all__ = ["Plan", "build_plan", "check_experiment", "check_plan", "make_profiler"]


@dataclass(frozen=True)
class Plan:
    """What a run of one experiment executes, built once (``build_plan``)."""

    resolved: ResolvedExperiment
    workloads: Mapping[str, Workload]
    """By workload id, in the experiment's order."""
    variants: Mapping[str, Mapping[str, Any]]
    """Each variant's knobs, in the experiment's order (generated variants included)."""
    realisations: Mapping[Pair, Realisation]
    unrealisable: tuple[str, ...]
    """Knobs a workload cannot realise, one message each: the run refuses to start."""
    time_limits: Mapping[str, float] = field(default_factory=dict)

    @property
    def experiment(self) -> Experiment:
        return self.resolved.experiment

    @property
    def baseline(self) -> str:
        return self.experiment.baseline_name

    def make_lab(self, workdir: Path, target: Target) -> Lab:
        return self.resolved.lab_class(self.resolved.lab_params, workdir, target)

    @property
    def adaptive(self) -> Adaptive | None:
        """The adaptive stopping rule, or None for a fixed number of repetitions."""
        rule = self.experiment.repetitions
        return rule if isinstance(rule, Adaptive) else None

    @property
    def max_repetitions(self) -> int:
        """The most repetitions (warm-up not counted) each non-searched pair gets."""
        rule = self.experiment.repetitions
        return rule.max if isinstance(rule, Adaptive) else rule

    def trials_per_pair(self) -> tuple[int, int]:
        """(fewest, most) trials each non-searched (variant, workload) gets, warm-up included."""
        warmup = self.experiment.warmup
        fewest = self.adaptive.min if self.adaptive else self.max_repetitions
        return fewest + warmup, self.max_repetitions + warmup


def build_plan(source: Experiment | ResolvedExperiment) -> Plan:
    """The experiment's plan; raises SpecError (or VirtbenchError) naming every problem."""
    resolved = source if isinstance(source, ResolvedExperiment) else resolve(source)
    workloads: dict[str, Workload] = {}
    for item in resolved.workloads:
        workload = item.cls(item.params)
        workloads[item.spec.workload_id] = (searched(workload, item.spec.search)
                                            if item.spec.search else workload)
    variants = {v.name: MappingProxyType(dict(v.knobs))
                for v in resolved.experiment.all_variants()}
    realisations: dict[Pair, Realisation] = {}
    problems: list[str] = []
    for workload_id, workload in workloads.items():
        for variant, knobs in variants.items():
            try:
                realisations[(variant, workload_id)] = workload.realise(knobs)
            except VirtbenchError as exc:
                problems.append(f"variant {variant}: {exc}")
    return Plan(resolved, MappingProxyType(workloads), MappingProxyType(variants),
                MappingProxyType(realisations), tuple(problems),
                MappingProxyType(time_limits(resolved.experiment.workloads, workloads)))


def check_plan(plan: Plan, target: Target, lab: Lab | None = None) -> list[str]:
    """Every problem that would stop the plan's run on ``target``, found before anything runs.

    ``lab``: the run's own lab (a runner builds it once); without one, the lab is built here to
    check its tools, with a temporary work folder it never writes to.
    """
    problems = target.check()
    if problems:  # nothing else can be checked on a target that cannot be reached
        return problems
    if lab is None:
        lab = plan.make_lab(Path(tempfile.gettempdir()), target)
    problems += lab.check()
    for variant, knobs in plan.variants.items():
        problems += lab.check_variant(variant, lab.own_knobs(knobs))
    for workload in plan.workloads.values():
        if not lab.workloads_in_own_guests():  # else checked in the guest (runner.trial)
            problems += workload.check(target)
    problems += service_problems(lab, plan.workloads.values())
    return problems + list(plan.unrealisable)


def check_experiment(source: Experiment | ResolvedExperiment | Plan,
                     target: Target | None = None) -> list[str]:
    """``check_plan`` for an experiment (planned here unless a Plan is given) on its own target
    or on ``target`` (a fleet host; not closed). An experiment built in code with bad plugins,
    parameters or knobs gives those problems, one per line, as a file would at load time."""
    try:
        plan = source if isinstance(source, Plan) else build_plan(source)
    except SpecError as exc:
        return exc.problems
    if target is not None:
        return check_plan(plan, target)
    own = make_target(plan.experiment.target)
    try:
        return check_plan(plan, own)
    finally:
        own.close()


def make_profiler(exp: Experiment, target: Target, time_limits: Mapping[str, float]) -> Profiler:
    """The profiler of a run: the workloads with ``profile:``, recorded from the host (this
    machine when the experiment's target is a libvirt guest: perf sees it from outside).
    Imported here, by a run: `run --check` needs none of it."""
    from virtbench.profiling import Profiler, ProfileSettings
    from virtbench.targets.libvirt_guest import LibvirtGuestTarget
    from virtbench.targets.local import LocalTarget

    settings = {w.workload_id: ProfileSettings(frequency_hz=w.profile.frequency_hz,
                                               trials=w.profile.trials, scope=w.profile.scope)
                for w in exp.workloads if w.profile is not None}
    host = LocalTarget() if isinstance(target, LibvirtGuestTarget) else target
    return Profiler(host, settings, time_limits)
