"""The ``search:`` block of a workload: which parameter is the load, what a passing trial is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field, model_validator

from virtbench.contract import NumbersNotBooleans
from virtbench.model import VirtbenchError
from virtbench.search import SearchPlan

if TYPE_CHECKING:  # the search's own modules load when a search is planned (virtbench.search)
    from virtbench.search.goals import Goal
    from virtbench.search.multi import MultiPlan

__all__ = ["Criterion", "GoalSpec", "SearchSpec"]


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


class GoalSpec(NumbersNotBooleans):
    """One RFC 9971 Search Goal, in the RFC's parameter names (docs/capacity.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,30}$", description="names the goal's "
                      "results (ndr_lower, pdr_upper...): lower-case letters, digits, _")
    loss_ratio: float = Field(0.0, description="Goal Loss Ratio: a trial whose loss ratio "
                              "exceeds it is a high-loss trial; in [0, 1)")
    exceed_ratio: float = Field(0.5, description="Goal Exceed Ratio: the share of the "
                                "duration sum that may be high-loss at a lower bound; in [0, 1)")
    final_trial_duration: float = Field(1.0, description="Goal Final Trial Duration (s)")
    duration_sum: float = Field(21.0, description="Goal Duration Sum (s): full-length trial "
                                "time that decides a load; at least final_trial_duration")
    width: float = Field(0.005, description="Goal Width: the search ends when (upper - "
                         "lower) / upper is at most this; in (0, 1), not below loss_ratio")
    initial_trial_duration: float = Field(1.0, description="Goal Initial Trial Duration (s): "
                                          "the shortest trials; at most final_trial_duration")

    @model_validator(mode="after")
    def _rfc_constraints(self) -> GoalSpec:
        for field, why in self.goal().problems():
            raise ValueError(f"goal '{self.name}': {field}: {why}")
        return self

    def goal(self) -> Goal:
        from virtbench.search.goals import Goal

        return Goal(self.name, self.loss_ratio, self.exceed_ratio, self.final_trial_duration,
                    self.duration_sum, self.width, self.initial_trial_duration)


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
    pass_if: list[Criterion] = Field(default_factory=list, description="every criterion must "
                                     "hold (the phased bisection; or give goals)")
    goals: list[GoalSpec] = Field(default_factory=list, description="RFC 9971 Search Goals, "
                                  "searched at once (instead of pass_if, precision and "
                                  "durations_s)")
    loss: str = Field("loss_ratio", description="with goals: the metric that is a trial's "
                      "loss ratio")
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
        if self.goals:
            given = {"pass_if", "precision", "durations_s", "latency_at"} & self.model_fields_set
            if given:
                raise ValueError(f"{', '.join(sorted(given))}: not with goals (a goal has its "
                                 "own loss_ratio, width and durations; latency_at is not "
                                 "supported with goals yet)")
            names = [g.name for g in self.goals]
            if len(set(names)) != len(names):
                raise ValueError(f"goals: two goals have one name ({', '.join(names)})")
        elif not self.pass_if:
            raise ValueError("pass_if or goals: a search needs one of them")
        try:
            if self.goals:
                self.multi_plan()
            self.plan()  # bounds, precision and durations, in the plan's own words
        except VirtbenchError as exc:
            raise ValueError(str(exc)) from None
        return self

    def search_goals(self) -> tuple[Goal, ...]:
        """The RFC 9971 goals this block searches. Without ``goals``, ``pass_if`` /
        ``precision`` / ``durations_s`` are one goal ``pass`` (a trial's loss ratio 0 when
        every criterion holds, else 1): loss ratio 0, exceed ratio 0, final trial duration and
        duration sum the last of durations_s, initial trial duration the first, width
        precision / (1 + precision) (precision is relative to the lower bound, the RFC's
        width to the upper)."""
        from virtbench.search.goals import Goal

        if self.goals:
            return tuple(g.goal() for g in self.goals)
        final = self.durations_s[-1]
        return (Goal("pass", 0.0, 0.0, final, final, self.precision / (1 + self.precision),
                     self.durations_s[0]),)

    def multi_plan(self) -> MultiPlan:
        from virtbench.search.multi import MultiPlan

        return MultiPlan(self.lower, self.upper, self.search_goals(), self.integer)

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
