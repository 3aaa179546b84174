"""Simulated devices under test for the RFC 9971 conformance tests: each maps (load, trial
duration, trial index) to a loss ratio, and knows the true conditional throughput of a goal
where the simulation has one."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from virtbench.search.goals import Goal, Target, Trial
from virtbench.search.multi import GoalResult, MultiPlan, MultiSearch


@dataclass
class Dut:
    """``loss(load, duration, index)``; ``truth(goal)`` the load at which the goal's loss
    ratio is first exceeded by a full-length trial (None: no single such value)."""

    name: str
    loss: Callable[[float, float, int], float]
    truth: Callable[[Goal], float | None]


def threshold(capacity: float) -> Dut:
    """Nothing lost up to ``capacity``, everything above it."""
    return Dut(f"threshold {capacity:g}", lambda load, _d, _i: 0.0 if load <= capacity else 1.0,
               lambda _g: capacity)


def growing(capacity: float, slope: float) -> Dut:
    """Loss ratio ``slope × (load − capacity) / capacity`` above ``capacity``."""
    def loss(load: float, _d: float, _i: int) -> float:
        return min(1.0, max(0.0, slope * (load - capacity) / capacity))
    return Dut(f"growing {capacity:g} × {slope:g}", loss,
               lambda g: capacity * (1 + g.loss_ratio / slope))


def inversion(capacity: float) -> Dut:
    """Lossless below ``capacity``, 2 % lost up to 1.2 × it, lossless again up to 1.5 × it,
    then everything above lost: the loss inverts."""
    def loss(load: float, _d: float, _i: int) -> float:
        if load <= capacity or 1.2 * capacity <= load <= 1.5 * capacity:
            return 0.0
        return 0.02 if load < 1.2 * capacity else 1.0
    return Dut(f"inversion {capacity:g}", loss, lambda _g: None)


def flips(capacity: float, p: float, seed: int) -> Dut:
    """A threshold whose trials each come out the other way with probability ``p``."""
    rng = random.Random(seed)

    def loss(load: float, _d: float, _i: int) -> float:
        bad = load > capacity
        return 1.0 if bad != (rng.random() < p) else 0.0
    return Dut(f"flips {capacity:g} p={p:g}", loss, lambda _g: capacity)


def buffer(capacity: float, frames: float) -> Dut:
    """A queue of ``frames`` hides the excess of short trials: lost = (load − capacity) ×
    duration − frames, when positive."""
    def loss(load: float, duration: float, _i: int) -> float:
        lost = (load - capacity) * duration - frames
        return min(1.0, max(0.0, lost / (load * duration)))

    def truth(goal: Goal) -> float:
        d = goal.final_trial_duration
        return (capacity * d + frames) / (d * (1 - goal.loss_ratio))
    return Dut(f"buffer {capacity:g} / {frames:g}", loss, truth)


def run_ours(plan: MultiPlan, dut: Dut) -> tuple[MultiSearch, list[GoalResult]]:
    search = MultiSearch(plan)
    while (step := search.next()) is not None:
        search.record(dut.loss(step.load, step.duration_s, len(search.trace)))
    return search, search.results()


def run_reference(plan: MultiPlan, dut: Dut, tried: list[Trial] | None = None
                  ) -> tuple[int, float, list[tuple[float | None, float | None]]]:
    """The RFC authors' MLRsearch on ``dut``: (trials, trial-seconds, per goal (lower, upper));
    each of its trials is appended to ``tried`` when given."""
    from MLRsearch import (
        AbstractMeasurer,
        Config,
        MeasurementResult,
        MultipleLossRatioSearch,
        SearchGoal,
    )

    class Measurer(AbstractMeasurer):  # type: ignore[misc]
        trials = 0
        seconds = 0.0

        def measure(self, intended_duration: float, intended_load: float) -> Any:
            ratio = dut.loss(intended_load, intended_duration, self.trials)
            if tried is not None:
                tried.append(Trial(intended_load, intended_duration, ratio))
            self.trials += 1
            self.seconds += intended_duration
            offered = 10 ** 9
            return MeasurementResult(intended_duration=intended_duration,
                                     intended_load=intended_load, offered_count=offered,
                                     loss_count=round(ratio * offered))

    goals = [SearchGoal(loss_ratio=g.loss_ratio, exceed_ratio=g.exceed_ratio,
                        relative_width=g.width, initial_trial_duration=g.initial_trial_duration,
                        final_trial_duration=g.final_trial_duration,
                        duration_sum=g.duration_sum, fail_fast=False) for g in plan.goals]
    config = Config()
    config.min_load, config.max_load = plan.lower, plan.upper
    config.goals = goals
    config.search_duration_max = 1e12
    measurer = Measurer()
    results = MultipleLossRatioSearch(config).search(measurer, debug=lambda _m: None)

    def value(bound: Any) -> float | None:
        return None if bound is None else float(bound)
    return measurer.trials, measurer.seconds, [
        (value(results[g].relevant_lower_bound), value(results[g].relevant_upper_bound))
        for g in goals]


def _reference_stat(trials: Sequence[Trial], target: Target) -> Any:
    """MLRsearch's per-load statistics of ``trials`` for ``target``."""
    from MLRsearch.target_spec import TargetSpec
    from MLRsearch.target_stat import TargetStat

    spec = TargetSpec(loss_ratio=target.loss_ratio, exceed_ratio=target.exceed_ratio,
                      discrete_width=None, trial_duration=target.trial_duration,
                      duration_sum=target.duration_sum, expansion_coefficient=2,
                      fail_fast=False, preceding=None)
    stat = TargetStat(spec)
    for t in trials:
        stat.add(SimpleNamespace(duration_with_overheads=t.duration_s, loss_ratio=t.loss_ratio,
                                 intended_duration=t.duration_s))
    return stat


def reference_class(trials: Sequence[Trial], target: Target) -> tuple[bool, bool]:
    """MLRsearch's (optimistic, pessimistic) 'is a lower bound' for the trials at one load."""
    optimistic, pessimistic = _reference_stat(trials, target).estimates()
    return bool(optimistic), bool(pessimistic)


def reference_conditional_loss(trials: Sequence[Trial], target: Target) -> float:
    """MLRsearch's loss ratio for the conditional throughput at one load."""
    return float(_reference_stat(trials, target).pessimistic_loss_ratio)
