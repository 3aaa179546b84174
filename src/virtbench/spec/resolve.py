"""An experiment's plugins resolved and judged once: each workload's and the lab's class and
validated parameters, the target's parameters, and every variant knob against the plugins that
declare it. The file loader calls this with its YAML tree (errors name the line); the runner's
plan (virtbench.runner.plan) calls it for an experiment built in code, and never again for one
that was loaded."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ValidationError

from virtbench.labs.lab_contract import Lab
from virtbench.model import VirtbenchError
from virtbench.spec.knobs import Declarer, knob_problems
from virtbench.spec.models import Experiment, WorkloadSpec
from virtbench.spec.source import SourceMap
from virtbench.workloads.workload_contract import Workload

__all__ = ["ResolvedExperiment", "ResolvedWorkload", "SpecError", "resolve"]


class SpecError(VirtbenchError):
    """An experiment file is invalid; the message lists every problem with its line."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems if problems is not None else [message]


@dataclass(frozen=True)
class ResolvedWorkload:
    spec: WorkloadSpec
    cls: type[Workload]
    params: BaseModel


@dataclass(frozen=True)
class ResolvedExperiment:
    """An experiment whose plugins exist and whose parameters and knobs were accepted."""

    experiment: Experiment
    source: SourceMap
    workloads: tuple[ResolvedWorkload, ...]
    lab_class: type[Lab]
    lab_params: BaseModel


def resolve(experiment: Experiment, source: SourceMap | None = None) -> ResolvedExperiment:
    """The experiment's plugins and parameters, or SpecError listing every problem."""
    from virtbench.plugins import all_labs, all_workloads, get_lab, get_workload

    where = source or SourceMap()
    problems: list[str] = []
    resolved: list[ResolvedWorkload] = []
    for index, spec in enumerate(experiment.workloads):
        try:  # one name, one module: the others' imports are paid only for an unknown name
            cls = get_workload(spec.name)
        except VirtbenchError:
            problems.append(f"{where.where(('workloads', index, 'name'))}: "
                            f"workloads[{index}].name: unknown workload '{spec.name}'; known: "
                            f"{', '.join(all_workloads())}")
            continue
        try:
            resolved.append(ResolvedWorkload(spec, cls, cls.Params.model_validate(spec.params)))
        except ValidationError as exc:
            problems += where.describe(exc, ("workloads", index, "params"), cls.Params)
    problems += _target_problems(experiment, where)
    lab_cls: type[Lab] | None
    try:
        lab_cls = get_lab(experiment.lab.kind)
    except VirtbenchError:
        lab_cls = None
    lab_params: BaseModel | None = None
    if lab_cls is None:
        problems.append(f"{where.where(('lab', 'kind'))}: lab.kind: unknown lab "
                        f"'{experiment.lab.kind}'; known: {', '.join(all_labs())}")
    else:
        try:
            lab_params = lab_cls.Params.model_validate(experiment.lab.params)
        except ValidationError as exc:
            problems += where.describe(exc, ("lab", "params"), lab_cls.Params)
    if lab_cls is not None and len(resolved) == len(experiment.workloads):
        # Knobs are judged only when every plugin exists (an unknown one would make them all
        # look undeclared), and here only: once per experiment, whoever built it.
        declarers = [Declarer(f"lab {lab_cls.name}", lab_cls.knobs)] + [
            Declarer(f"workload {w.cls.name}", w.cls.knobs) for w in resolved]
        problems += knob_problems(experiment, declarers, lambda loc: where.where(loc) + ": ")
    if problems:
        raise SpecError("invalid experiment:\n  " + "\n  ".join(problems), problems)
    assert lab_cls is not None and lab_params is not None
    return ResolvedExperiment(experiment, where, tuple(resolved), lab_cls, lab_params)


def _target_problems(experiment: Experiment, where: SourceMap) -> list[str]:
    """The target kind is known and its parameters are its own (``hots:`` is refused)."""
    from virtbench.targets.factory import TARGET_PARAMS

    kind = experiment.target.kind
    model = TARGET_PARAMS.get(kind)
    if model is None:
        return [f"{where.where(('target', 'kind'))}: target.kind: unknown target "
                f"'{kind}'; known: {', '.join(TARGET_PARAMS)}"]
    try:
        model.model_validate(experiment.target.params)
    except ValidationError as exc:
        return where.describe(exc, ("target", "params"), model)
    return []
