"""The workload plugin contract: declared metrics, tools, parameters, setup/run/teardown."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from virtbench.model import Artifact, Measurement, Metric
from virtbench.targets.base import Target

__all__ = [
    "NoParams",
    "Realisation",
    "Tool",
    "TrialContext",
    "TrialResult",
    "Workload",
    "missing_tools",
]


@dataclass(frozen=True)
class Tool:
    """An external program a workload needs, and the Debian package that provides it."""

    binary: str
    package: str
    purpose: str = ""


def missing_tools(owner: str, which: Callable[[str], str | None], tools: Iterable[Tool],
                  where: str = "") -> list[str]:
    """One problem per tool ``which`` cannot find, naming the Debian package to install."""
    return [f"{owner}: '{tool.binary}' not found{where}; install the Debian package "
            f"'{tool.package}' (apt-get install {tool.package})"
            for tool in tools if which(tool.binary) is None]


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class Realisation:
    """How a variant's knobs were realised for one workload, and what could not be expressed."""

    mechanism: str
    env: dict[str, str | None] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    limitations: list[str] = field(default_factory=list)


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
    services: dict[str, Any] = field(default_factory=dict)
    """What the lab provides (addresses, namespaces, URLs), keyed by name."""


@dataclass
class TrialResult:
    measurements: list[Measurement]
    artifacts: list[Artifact] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)


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

    def trial_time_limit_s(self) -> float:
        """This configuration's default time limit of one trial, s."""
        duration = getattr(self.params, "duration_s", None)
        return self.timeout_s + (float(duration) if isinstance(duration, int | float) else 0.0)

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        """Translate variant knobs into this workload's mechanism (env vars, settings)."""
        return Realisation(mechanism="none (the workload runs unchanged)")

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
