"""What a run is built from, before anything runs: the workloads and the lab an experiment
names, constructed from their validated parameters, each variant's realisation, and the
problems that would stop the run (``run --check``). No store, facts or preflight: checking an
experiment imports none of them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from virtbench.labs.base import Lab
from virtbench.model import VirtbenchError
from virtbench.plugins import get_lab, get_workload
from virtbench.profiling import Profiler, ProfileSettings
from virtbench.runner.schedule import Pair
from virtbench.runner.search import searched
from virtbench.spec.knobs import Declarer, knob_problems
from virtbench.spec.models import Experiment
from virtbench.targets.base import Target
from virtbench.targets.factory import make_target
from virtbench.targets.libvirt_guest import LibvirtGuestTarget
from virtbench.targets.local import LocalTarget
from virtbench.workloads.base import Realisation, Workload

__all__ = ["check_experiment", "instantiate_workloads", "make_lab", "make_profiler",
           "realise_all"]


def instantiate_workloads(exp: Experiment) -> dict[str, Workload]:
    workloads: dict[str, Workload] = {}
    for index, spec in enumerate(exp.workloads):
        cls = get_workload(spec.name)
        try:
            params = cls.Params.model_validate(spec.params)
        except Exception as exc:  # pydantic's ValidationError, reworded with the location
            raise VirtbenchError(f"workloads[{index}] ({spec.name}) params: {exc}") from exc
        workload = cls(params)
        workloads[spec.workload_id] = searched(workload, spec.search) if spec.search else workload
    return workloads


def make_lab(exp: Experiment, workdir: Path, target: Target) -> Lab:
    cls = get_lab(exp.lab.kind)
    try:
        params = cls.Params.model_validate(exp.lab.params)
    except Exception as exc:
        raise VirtbenchError(f"lab ({exp.lab.kind}) params: {exc}") from exc
    return cls(params, workdir, target)


def realise_all(workloads: Mapping[str, Workload], variants: Mapping[str, Mapping[str, Any]],
                ) -> tuple[dict[Pair, Realisation], list[str]]:
    """Each (variant, workload)'s realisation, computed once; and the knobs it cannot realise."""
    realisations: dict[Pair, Realisation] = {}
    problems: list[str] = []
    for workload_id, workload in workloads.items():
        for variant, knobs in variants.items():
            try:
                realisations[(variant, workload_id)] = workload.realise(knobs)
            except VirtbenchError as exc:
                problems.append(f"variant {variant}: {exc}")
    return realisations, problems


def check_experiment(exp: Experiment, *, realise: bool = True,
                     target: Target | None = None) -> list[str]:
    """Every problem that would stop the run, found before anything runs.

    ``realise=False``: the caller (the runner) realises the variants itself, once.
    ``target``: check there instead of the experiment's own target (a fleet host); not closed.
    """
    own_target = target is None
    target = target or make_target(exp.target)
    problems = target.check()
    if problems:  # nothing else can be checked on a target that cannot be reached
        if own_target:
            target.close()
        return problems
    try:
        lab = make_lab(exp, Path("/tmp"), target)
        workloads = instantiate_workloads(exp)
        # The spec loader did this with file lines; an Experiment built in code gets it here.
        problems += knob_problems(exp, [Declarer(f"lab {lab.name}", lab.knobs)] + [
            Declarer(f"workload {w.name}", w.knobs) for w in workloads.values()], lambda _: "")
        problems += lab.check()
        for workload in workloads.values():
            problems += workload.check(target)
        if realise:
            problems += realise_all(workloads, {v.name: v.knobs for v in exp.all_variants()})[1]
    finally:
        if own_target:
            target.close()
    return problems


def make_profiler(exp: Experiment, target: Target, time_limits: Mapping[str, float]) -> Profiler:
    """The profiler of a run: the workloads with ``profile:``, recorded from the host (this
    machine when the experiment's target is a libvirt guest: perf sees it from outside)."""
    settings = {w.workload_id: ProfileSettings(frequency_hz=w.profile.frequency_hz,
                                               trials=w.profile.trials, scope=w.profile.scope)
                for w in exp.workloads if w.profile is not None}
    host = LocalTarget() if isinstance(target, LibvirtGuestTarget) else target
    return Profiler(host, settings, time_limits)
