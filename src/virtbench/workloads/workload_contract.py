"""The workload plugin contract: declared metrics, tools, parameters, knobs, setup/run/teardown.

``Tool``, ``missing_tools``, ``NoParams`` and ``Realisation`` live in ``virtbench.contract`` (every
kind of plugin shares them); they are re-exported here for plugins written against this module.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from virtbench.contract import Knob, NoParams, Realisation, Tool, missing_tools
from virtbench.model import Artifact, Measurement, Metric
from virtbench.service_base import Service, Services
from virtbench.targets.target_contract import Target

__all__ = [
    "Knob",
    "NoParams",
    "Realisation",
    "Tool",
    "TrialContext",
    "TrialResult",
    "TypicalTime",
    "Workload",
    "missing_tools",
]


@dataclass
class TrialContext:
    """Everything a workload sees for one trial."""

    target: Target
    variant: str
    knobs: Mapping[str, Any]
    workdir: Path
    repetition: int
    seed: int
    env: dict[str, str | None] = field(default_factory=dict)
    """Environment set by the lab for this variant (e.g. CPU-feature masks)."""
    services: Services = field(default_factory=Services)
    """What the lab provides (a filesystem, a network path, a web stack), found by kind:
    ``services.get(FilesystemService)``."""
    realisation: Realisation = field(default_factory=Realisation)
    """How the runner realised this variant's knobs for this workload (computed once)."""


@dataclass
class TrialResult:
    measurements: list[Measurement]
    artifacts: list[Artifact] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    window: tuple[float, float] | None = None
    """The measured section (start, end) on CLOCK_MONOTONIC of the machine the trial ran on,
    when the workload times a part of its run (a probe's timed loop): a profile of a trial
    that ran on the profiling machine keeps only that section's stacks (docs/explain.md)."""


@dataclass(frozen=True)
class TypicalTime:
    """A workload's own word on one trial's duration (s): a range and where it comes from."""

    low_s: float
    high_s: float
    source: str


class Workload(abc.ABC):
    """A measurable task. Subclasses declare class attributes and implement ``run``.

    ``run`` must only return measurements of declared metrics; the runner rejects anything else.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    metrics: ClassVar[tuple[Metric, ...]]
    tools: ClassVar[tuple[Tool, ...]] = ()
    python_modules: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(import name, pip package) pairs the workload's probe needs on the target."""
    Params: ClassVar[type[BaseModel]] = NoParams
    knobs: ClassVar[tuple[Knob, ...]] = ()
    """Variant knobs this workload realises (``realise``); undeclared knobs are refused."""
    needs: ClassVar[tuple[type[Service], ...]] = ()
    """Kinds of lab service (``virtbench.services``) this workload cannot run without; a lab
    that does not provide one is refused before the run. Services it can do without it reads
    with ``ctx.services.find``."""
    timeout_s: ClassVar[float] = 3600.0
    """Default time limit of one trial, s, beyond the trial's own ``duration_s`` parameter (if
    any); an experiment overrides it per workload (``timeout_s:``)."""

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params: Any = params if params is not None else self.Params()

    def metric(self, name: str) -> Metric:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(name)

    def primary_metrics(self) -> list[Metric]:
        """Metrics that adaptive stopping and the headline speedup use (may depend on params)."""
        return [m for m in self.metrics if m.primary]

    def active_metrics(self) -> list[Metric]:
        """Metrics this configuration will produce (a subset of the declared ones)."""
        return list(self.metrics)

    def needed_services(self) -> tuple[type[Service], ...]:
        """What this configuration needs (default ``needs``; params may make one unneeded,
        e.g. URLs given instead of the lab's)."""
        return self.needs

    def trial_time_limit_s(self) -> float:
        """This configuration's default time limit of one trial, s."""
        duration = getattr(self.params, "duration_s", None)
        return self.timeout_s + (float(duration) if isinstance(duration, int | float) else 0.0)

    def typical_trial_s(self) -> TypicalTime | None:
        """How long one trial of this configuration usually takes, when the workload can say
        before anything ran (``run --check``'s estimate; a time measured on this host wins).
        The default: a trial that lasts its ``duration_s`` parameter."""
        duration = getattr(self.params, "duration_s", None)
        if isinstance(duration, int | float) and duration > 0:
            return TypicalTime(float(duration), float(duration), "its duration_s parameter")
        return None

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        """Translate variant knobs into this workload's mechanism (env vars, settings).

        Called once per (variant, workload) by the runner; ``run`` reads the result from
        ``ctx.realisation`` instead of calling this again.
        """
        return Realisation()

    def check(self, target: Target) -> list[str]:
        """Problems that would stop this workload, each naming the package to install."""
        return missing_tools(self.name, target.which, self.tools, f" on {target.describe()}")

    def setup(self, ctx: TrialContext) -> None:  # noqa: B027 - optional hook
        """Prepare inputs once per (variant, workload) before the first trial."""

    @abc.abstractmethod
    def run(self, ctx: TrialContext) -> TrialResult:
        """Run one trial and return its measurements."""

    def teardown(self, ctx: TrialContext) -> None:  # noqa: B027 - optional hook
        """Remove what setup created; called also after failures."""
