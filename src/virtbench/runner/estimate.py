"""How many trials a plan runs and about how long that takes, before anything starts.

Each (variant, workload) pair's trial time is, in order of preference: the median of the
durations measured on this host for the same workload, parameters and variant knobs
(runner.trial_times); the same for any variant; the workload's own word
(``Workload.typical_trial_s``, a range with its source). Pairs with none of these are counted
as unknown and named. A capacity search's trial count is not known in advance: named too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from virtbench.runner.plan import Plan
from virtbench.runner.search import SearchedWorkload
from virtbench.runner.trial_times import TrialTimes, configuration_key, trial_key

if TYPE_CHECKING:  # the search's modules load for an experiment with goals (_goal_lines)
    from virtbench.search.multi import MultiPlan

__all__ = ["Estimate", "WorkloadEstimate", "estimate", "human_duration"]


@dataclass
class WorkloadEstimate:
    workload_id: str
    name: str
    trials_low: int = 0
    trials_high: int = 0
    low_s: float = 0.0
    high_s: float = 0.0
    sources: set[str] = field(default_factory=set)
    unknown_pairs: int = 0
    searched: bool = False
    goals: list[str] = field(default_factory=list)
    """A multi-goal search: each goal's settings, then the predicted trials per variant."""


@dataclass
class Estimate:
    variants: int
    workloads: list[WorkloadEstimate]

    @property
    def trials(self) -> tuple[int, int]:
        return (sum(w.trials_low for w in self.workloads),
                sum(w.trials_high for w in self.workloads))

    @property
    def seconds(self) -> tuple[float, float]:
        return (sum(w.low_s for w in self.workloads), sum(w.high_s for w in self.workloads))

    @property
    def complete(self) -> bool:
        """True when every pair's time is known (else the seconds are a lower bound)."""
        return not any(w.unknown_pairs or w.searched for w in self.workloads)


def estimate(plan: Plan, times: TrialTimes) -> Estimate:
    fewest, most = plan.trials_per_pair()
    result = Estimate(len(plan.variants), [])
    for workload_id, workload in plan.workloads.items():
        item = WorkloadEstimate(workload_id, workload.name)
        result.workloads.append(item)
        if isinstance(workload, SearchedWorkload):
            item.searched = True
            if workload.spec.goals:
                item.goals = _goal_lines(workload.spec.multi_plan())
            continue
        params = workload.params.model_dump(mode="json")
        declared = workload.typical_trial_s()
        any_variant = times.median_any_variant(configuration_key(workload.name, params))
        for knobs in plan.variants.values():
            item.trials_low += fewest
            item.trials_high += most
            measured = times.median(trial_key(workload.name, params, knobs))
            if measured is not None:
                low = high = measured
                item.sources.add("measured on this host")
            elif any_variant is not None:
                low = high = any_variant
                item.sources.add("measured on this host (other variants)")
            elif declared is not None:
                low, high = declared.low_s, declared.high_s
                item.sources.add(f"declared: {declared.source}")
            else:
                item.unknown_pairs += 1
                continue
            item.low_s += fewest * low
            item.high_s += most * high
    return result


def _goal_lines(plan: MultiPlan) -> list[str]:
    from virtbench.search.multi import predicted

    lines = [f"goal {g.name}: loss_ratio {g.loss_ratio:g}, exceed_ratio {g.exceed_ratio:g}, "
             f"final_trial_duration {g.final_trial_duration:g} s, duration_sum "
             f"{g.duration_sum:g} s, width {g.width:g}, initial_trial_duration "
             f"{g.initial_trial_duration:g} s" for g in plan.goals]
    trials, seconds = predicted(plan)
    lines.append(f"predicted per variant: {trials} trials, {seconds:g} trial-seconds (on a "
                 "path whose loss does not depend on the trial duration)")
    return lines


def human_duration(seconds: float) -> str:
    """A duration as a person says it: ``40 s``, ``12 min``, ``3.5 h``, ``44 h``, ``6 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    hours = seconds / 3600
    if hours < 10:
        return f"{hours:.1f} h"
    if hours < 72:
        return f"{hours:.0f} h"
    return f"{hours / 24:.1f} days"
