"""One search for several RFC 9971 goals at once, sharing every trial between them.

The next trial is a pure function of the trials so far (``MultiSearch.next``), so a stored
trace resumes exactly: replaying it asks for the same loads again. Goals are served in their
listed order; each searches two coarser targets first (``Goal.targets``), then the goal itself,
each target starting from the bounds the one before found (its hint). For a target, in order:
an undecided load within the hint while a bound is missing (more trials there); a missing upper
bound at the hint's upper end (outward from the lower bound in steps whose logarithm doubles
once the hint is passed); a missing lower bound likewise downward; the hint's bounds inside
the relevant bounds; then a load inside them (one width below the upper bound when they are
within twice the width, else their geometric middle, or an undecided load near it) until they
are within the width. A load within twice the width of the bound it comes from is chosen one
width from it, so that it ends the target if it holds. Every trial informs every goal.
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


@dataclass(frozen=True)
class _Context:
    """One target's choice: the target, the coarser target's bounds (or the plan's), the
    classes of the loads so far."""

    target: Target
    lo: float
    hi: float
    classes: dict[float, Bound]

    @property
    def step(self) -> float:
        """The first outward step of a bound the hint did not find."""
        return max(self.hi / self.lo, 1.0 / (1.0 - self.target.width))


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
        ctx = _Context(target, plan.lower if hint[0] is None else hint[0],
                       plan.upper if hint[1] is None else hint[1], classes)
        between = [load for load, c in classes.items() if c is Bound.UNDECIDED
                   and (lo is None or load > lo) and (hi is None or load < hi)]
        # A bound missing: an undecided load within the hint gets more trials first, the one
        # likeliest to be that bound (the highest for an upper bound, which is looked for
        # first; the lowest for a lower one): if it is not, the loads beyond it matter no more.
        hinted = [u for u in between if ctx.lo * (1 - 1e-9) <= u <= ctx.hi * (1 + 1e-9)]
        if hinted and hi is None:
            return max(hinted)
        if hinted and lo is None:
            return min(hinted)
        if hi is None:
            return self._upper_missing(ctx, lo)
        if lo is None:
            return self._lower_missing(ctx, hi)
        return self._inside(ctx, lo, hi, between)

    def _upper_missing(self, ctx: _Context, lo: float | None) -> float | _Done:
        plan, keep = self.plan, 1.0 - ctx.target.width
        if lo is not None and lo >= plan.upper * (1 - 1e-12):
            return lo, None
        if lo is None and ctx.hi - ctx.lo <= 2 * ctx.target.width * ctx.hi:
            # A narrow hint: one width below its top ends the target with one more bound.
            return plan._round(max(ctx.lo, ctx.hi * keep))
        if lo is None:
            return plan._round(ctx.hi)
        if ctx.hi > lo * (1 + 1e-9):
            return self._up_to(ctx, lo, ctx.hi)
        moves = sum(1 for load, c in ctx.classes.items()
                    if c is Bound.LOWER and load >= ctx.hi * (1 - 1e-9))
        return self._away(lo, ctx.step ** (2 ** moves))

    def _lower_missing(self, ctx: _Context, hi: float) -> float | _Done:
        if hi <= self.plan.lower * (1 + 1e-12):
            return None, hi
        if ctx.lo < hi * (1 - 1e-9):
            return self._down_to(ctx, hi, ctx.lo)
        moves = sum(1 for load, c in ctx.classes.items()
                    if c is Bound.UPPER and load <= ctx.lo * (1 + 1e-9))
        return self._away(hi, 1.0 / ctx.step ** (2 ** moves))

    def _inside(self, ctx: _Context, lo: float, hi: float, between: list[float]
                ) -> float | _Done:
        width = ctx.target.width
        if hi - lo <= width * hi * (1 + 1e-9):
            return lo, hi
        # The coarser target's bounds inside these ones: confirm them at this target first.
        if lo * (1 + 1e-9) < ctx.hi < hi * (1 - 1e-9):
            return self._up_to(ctx, lo, ctx.hi)
        if lo * (1 + 1e-9) < ctx.lo < hi * (1 - 1e-9):
            return self._down_to(ctx, hi, ctx.lo)
        # Within twice the width: the load one width below the upper bound ends the target if
        # it is a lower bound, and leaves about one width if not; wider: the geometric middle.
        middle = (self._toward(hi, hi * (1.0 - width)) if hi - lo <= 2 * width * hi
                  else self.plan._round(math.sqrt(lo * hi)))
        if not lo < middle < hi:  # whole-number loads: nothing left between them
            return lo, hi
        # An undecided load near that one is as good, and has trials already.
        near = [u for u in between if abs(math.log(u / middle)) <= math.log(hi / lo) / 4]
        return min(near, key=lambda u: abs(math.log(u / middle))) if near else middle

    def _up_to(self, ctx: _Context, lo: float, load: float) -> float:
        """Up from ``lo`` to ``load``, or, when that is within twice the width, only as far as
        still ends the target if it holds."""
        near = load - lo <= 2 * ctx.target.width * load
        return self._toward(lo, min(load, lo / (1.0 - ctx.target.width)) if near else load)

    def _down_to(self, ctx: _Context, hi: float, load: float) -> float:
        """Down from ``hi`` to ``load``, likewise."""
        near = hi - load <= 2 * ctx.target.width * hi
        return self._toward(hi, max(load, hi * (1.0 - ctx.target.width)) if near else load)

    def _toward(self, bound: float, load: float) -> float:
        """``load`` rounded toward ``bound`` (whole-number loads), never ``bound`` itself."""
        if not self.plan.integer:
            return load
        rounded = float(math.floor(load) if load > bound else math.ceil(load))
        if rounded == bound:
            rounded = bound + (1.0 if load > bound else -1.0)
        return self.plan._round(rounded)

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
