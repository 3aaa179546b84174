"""One search for several RFC 9971 goals at once, sharing every trial between them.

The next trial is a pure function of the trials so far (``next_step``), so a stored trace
resumes exactly: replaying it asks for the same loads again. Goals are served in their listed
order; each searches first a coarse target of single initial-length trials (when its initial
trial duration is shorter than its final one), then the goal itself. For a target the next load
is, in this order: an undecided load between its relevant bounds (more trials there), a missing
upper bound (the coarse step's, else outward from the lower bound in steps whose logarithm
doubles), a missing lower bound (likewise downward), else the geometric middle of the relevant
bounds until they are within the goal's width. Every trial informs every goal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from virtbench.model import VirtbenchError
from virtbench.search.goals import (
    Bound,
    Goal,
    Target,
    Trial,
    by_load,
    conditional_loss_ratio,
    relevant_bounds,
)

__all__ = ["GoalResult", "MultiPlan", "MultiSearch", "MultiStep", "predicted"]

_MAX_TRIALS = 5000
"""A search that asks for more trials than this has a bug; it stops with an error."""


@dataclass(frozen=True)
class MultiPlan:
    """The load range and the goals of one multi-goal search (loads in the workload's unit)."""

    lower: float
    upper: float
    goals: tuple[Goal, ...]
    integer: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.lower < self.upper:
            raise VirtbenchError(f"search bounds must satisfy 0 < lower < upper; got lower "
                                 f"{self.lower:g}, upper {self.upper:g}")
        if not self.goals:
            raise VirtbenchError("a search needs at least one goal")
        for goal in self.goals:
            for field, why in goal.problems():
                raise VirtbenchError(f"goal '{goal.name}': {field}: {why}")

    def _round(self, load: float) -> float:
        load = min(max(load, self.lower), self.upper)
        return float(round(load)) if self.integer else load


@dataclass(frozen=True)
class MultiStep:
    """The next trial: ``load`` for ``duration_s``; ``goal`` and ``target`` say what asked."""

    load: float
    duration_s: float
    goal: int
    target: int


@dataclass(frozen=True)
class GoalResult:
    """A goal's result (RFC 9971 section 4): relevant bounds and the conditional throughput.

    ``lower`` is None when even the plan's lower load was an upper bound; ``upper`` is None
    when the plan's upper load was a lower bound. Both present: a regular result.
    """

    goal: Goal
    lower: float | None
    upper: float | None
    conditional_throughput: float | None

    @property
    def regular(self) -> bool:
        return self.lower is not None and self.upper is not None

    def reason(self) -> str:
        if self.lower is None:
            return "irregular: even the lowest load was an upper bound"
        if self.upper is None:
            return "irregular: the highest load was a lower bound (the capacity may be higher)"
        return (f"regular: ({self.upper:g} - {self.lower:g}) / {self.upper:g} = "
                f"{(self.upper - self.lower) / self.upper:.3%} (width {self.goal.width:.3%})")


_Done = tuple[float | None, float | None]


class MultiSearch:
    """A multi-goal search in progress; ``trace`` is every trial so far."""

    def __init__(self, plan: MultiPlan) -> None:
        self.plan = plan
        self.trace: list[Trial] = []

    def next(self) -> MultiStep | None:
        """The next trial to run, or None when every goal has its result."""
        if len(self.trace) >= _MAX_TRIALS:
            raise VirtbenchError(f"the search took {_MAX_TRIALS} trials without a result")
        for g, goal in enumerate(self.plan.goals):
            hint: _Done = (self.plan.lower, self.plan.upper)
            for t, target in enumerate(goal.targets()):
                action = self._target_next(target, hint)
                if not isinstance(action, tuple):
                    return MultiStep(action, target.trial_duration, g, t)
                hint = action
        return None

    def record(self, loss_ratio: float) -> None:
        """The loss ratio of the trial ``next()`` asked for."""
        step = self.next()
        if step is None:
            raise VirtbenchError("the search is already finished; no trial was pending")
        self.trace.append(Trial(step.load, step.duration_s, loss_ratio))

    def replay(self, trace: Sequence[Trial]) -> None:
        """Feed a stored trace back in (resume); it must be the trace this plan asks for."""
        for index, entry in enumerate(trace):
            step = self.next()
            if step is None:
                raise VirtbenchError(f"stored search trace has {len(trace)} trials, but the "
                                     f"search ended after {index}")
            if not (math.isclose(step.load, entry.load, rel_tol=1e-9)
                    and math.isclose(step.duration_s, entry.duration_s, rel_tol=1e-9)):
                raise VirtbenchError(
                    f"stored search trial {index} offered {entry.load:g} for "
                    f"{entry.duration_s:g} s, but this plan asks for {step.load:g} for "
                    f"{step.duration_s:g} s there; the experiment's search block changed "
                    "(start a new run)")
            self.record(entry.loss_ratio)

    def results(self) -> list[GoalResult]:
        """Each goal's result from the trials so far (final once ``next()`` is None)."""
        found = []
        groups = by_load(self.trace)
        for goal in self.plan.goals:
            target = goal.final_target()
            lower, upper, _ = relevant_bounds(self.trace, target)
            throughput = None
            if lower is not None:
                throughput = lower * (1.0 - conditional_loss_ratio(groups[lower], target))
            found.append(GoalResult(goal, lower, upper, throughput))
        return found

    def informs(self, trial: Trial) -> list[str]:
        """The goals whose final classification counts this trial as full-length."""
        return [g.name for g in self.plan.goals
                if trial.duration_s >= g.final_trial_duration * (1 - 1e-9)]

    # ---- choosing the next load ------------------------------------------------------------
    def _target_next(self, target: Target, hint: _Done) -> float | _Done:
        plan = self.plan
        lo, hi, classes = relevant_bounds(self.trace, target)
        between = [load for load, c in classes.items() if c is Bound.UNDECIDED
                   and (lo is None or load > lo) and (hi is None or load < hi)]
        if between:  # the one nearest the bound still missing (the lower, when both are)
            return max(between) if lo is None else min(between)
        hint_lo = plan.lower if hint[0] is None else hint[0]
        hint_hi = plan.upper if hint[1] is None else hint[1]
        step = max(hint_hi / hint_lo, 1.0 / (1.0 - target.width))
        if hi is None:
            if lo is not None and lo >= plan.upper * (1 - 1e-12):
                return lo, None
            if lo is None or hint_hi > lo * (1 + 1e-9):
                return plan._round(hint_hi)
            moves = sum(1 for load, c in classes.items()
                        if c is Bound.LOWER and load >= hint_hi * (1 - 1e-9))
            return self._away(lo, step ** (2 ** moves))
        if lo is None:
            if hi <= plan.lower * (1 + 1e-12):
                return None, hi
            if hint_lo < hi * (1 - 1e-9):
                return plan._round(hint_lo)
            moves = sum(1 for load, c in classes.items()
                        if c is Bound.UPPER and load <= hint_lo * (1 + 1e-9))
            return self._away(hi, 1.0 / step ** (2 ** moves))
        if hi - lo <= target.width * hi * (1 + 1e-9):
            return lo, hi
        # Within twice the width: the load one width below the upper bound ends the target if
        # it is a lower bound, and leaves about one width if not; wider: the geometric middle.
        middle = plan._round(hi * (1.0 - target.width) if hi - lo <= 2 * target.width * hi
                             else math.sqrt(lo * hi))
        if not lo < middle < hi:  # whole-number loads: nothing left between them
            return lo, hi
        return middle

    def _away(self, bound: float, factor: float) -> float:
        """A load ``factor`` times ``bound``, rounded, inside the plan, never ``bound`` itself."""
        load = self.plan._round(bound * factor)
        if load == bound and self.plan.integer:
            load = self.plan._round(bound + (1.0 if factor > 1 else -1.0))
        return load


def predicted(plan: MultiPlan) -> tuple[int, float]:
    """(trials, trial-seconds) of the search on a path that loses nothing up to the geometric
    middle of the load range and everything above it, whatever the trial duration."""
    threshold = math.sqrt(plan.lower * plan.upper)
    search = MultiSearch(plan)
    while (step := search.next()) is not None:
        search.record(0.0 if step.load <= threshold else 1.0)
    return len(search.trace), sum(t.duration_s for t in search.trace)
