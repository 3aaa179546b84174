"""The ``search:`` block of a workload: which parameter is the load, what a passing trial is."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ConfigDict, Field, model_validator

from virtbench.contract import NumbersNotBooleans
from virtbench.model import VirtbenchError
from virtbench.search import SearchPlan

__all__ = ["Criterion", "SearchSpec"]


class Criterion(NumbersNotBooleans):
    """A trial passes when the metric is at most ``max`` (and at least ``min``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    metric: str = Field(description="a metric the workload declares (e.g. loss_ratio)")
    max: float | None = Field(None, description="pass when the value is at most this")
    min: float | None = Field(None, description="pass when the value is at least this")

    @model_validator(mode="after")
    def _one_limit(self) -> Criterion:
        if self.max is None and self.min is None:
            raise ValueError(f"criterion on '{self.metric}' needs max or min")
        return self

    def failure(self, values: Mapping[str, float]) -> str | None:
        """Why the trial fails this criterion, or None when it passes."""
        value = values.get(self.metric)
        if value is None:
            return f"{self.metric} was not measured"
        if self.max is not None and value > self.max:
            return f"{self.metric} {value:g} > {self.max:g}"
        if self.min is not None and value < self.min:
            return f"{self.metric} {value:g} < {self.min:g}"
        return None


class SearchSpec(NumbersNotBooleans):
    """Search the highest load the workload sustains (see docs/capacity.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    load: str = Field(description="the workload parameter that sets the offered load")
    duration: str | None = Field(None, description="the workload parameter that sets the "
                                                    "trial duration in seconds")
    unit: str = Field("load/s", description="unit of the load, for the report (pps, req/s)")
    lower: float = Field(gt=0, description="lowest load tried")
    upper: float = Field(gt=0, description="highest load tried")
    precision: float = Field(0.01, gt=0, lt=1,
                             description="relative width (hi - lo) / lo of the final interval")
    durations_s: list[float] = Field(default_factory=lambda: [1.0, 5.0], min_length=1,
                                     description="trial duration per phase, short to long; "
                                                 "the last is the final one")
    integer: bool = Field(False, description="offer whole-number loads only")
    pass_if: list[Criterion] = Field(min_length=1, description="every criterion must hold")
    offered: str | None = Field(None, description="a metric measuring the load really offered "
                                                  "(e.g. offered_pps): a trial whose verdict "
                                                  "it leaves open is repeated")
    offered_tolerance: float = Field(0.01, gt=0, lt=1, description="relative difference of "
                                     "offered and asked load a verdict tolerates")
    latency_at: list[float] = Field(default_factory=list, description="after the search, "
                                    "one final-duration trial at each of these fractions of "
                                    "the found load (e.g. [0.1, 0.5, 0.9]: latency below "
                                    "capacity)")
    retries: int = Field(1, ge=0, le=20, strict=True,
                         description="repeats of an inconclusive trial; still inconclusive, "
                                     "the load counts as failed")

    @model_validator(mode="after")
    def _plan_is_valid(self) -> SearchSpec:
        if any(not 0 < f <= 1 for f in self.latency_at):
            raise ValueError("latency_at: fractions of the found load must be in (0, 1]")
        try:
            self.plan()  # bounds, precision and durations, in the plan's own words
        except VirtbenchError as exc:
            raise ValueError(str(exc)) from None
        return self

    def plan(self) -> SearchPlan:
        return SearchPlan(self.lower, self.upper, self.precision, tuple(self.durations_s),
                          self.integer)

    def conclusive(self, passed: bool, asked: float, values: Mapping[str, float]) -> bool:
        """Whether a verdict holds for the asked load, given the load really offered.

        A pass at more than was asked, or a failure at less, holds for the asked load too (a
        path that passes a load passes every lower one); a pass well below the asked load or
        a failure well above it says nothing about the asked load.
        """
        if self.offered is None:
            return True
        offered = values.get(self.offered)
        if offered is None:
            return False
        if passed:
            return offered >= asked * (1 - self.offered_tolerance)
        return offered <= asked * (1 + self.offered_tolerance)

    def failures(self, values: Mapping[str, float]) -> list[str]:
        """Every criterion the trial's scalar values break (empty: the trial passed)."""
        return [why for c in self.pass_if if (why := c.failure(values)) is not None]
