"""The search itself: a multi-phase geometric bisection in the spirit of MLRsearch.

Short trials narrow the interval cheaply; each later phase re-tests the inherited bounds at its
longer duration (a bound that no longer holds is pushed outward by doubling steps) and bisects
to its tighter goal. Only the last phase's trials make the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from virtbench.model import VirtbenchError
from virtbench.search.search_limits import SearchPlan

__all__ = ["Search", "SearchResult", "Step", "TraceEntry"]

# Loads equal to this relative tolerance are the same load (a float stored as text and back).
_SAME = 1e-9


@dataclass(frozen=True)
class Step:
    """The next trial to run: offer ``load`` for ``duration_s`` seconds."""

    load: float
    duration_s: float
    phase: int


@dataclass(frozen=True)
class TraceEntry:
    """One judged trial of a search."""

    load: float
    duration_s: float
    phase: int
    passed: bool


@dataclass(frozen=True)
class SearchResult:
    """Where the search ended.

    ``load``: the highest load that passed at the final duration (None: even ``lower`` failed).
    ``upper``: the lowest load above it that failed at the final duration (None: ``upper``
    passed, so the capacity is at least the bound). ``reason`` says which case it is.
    """

    load: float | None
    upper: float | None
    reason: str
    trials: int

    @property
    def bound_reached(self) -> bool:
        return self.load is None or self.upper is None


Verdicts = Generator[Step, bool, tuple[float | None, float | None]]


class Search:
    """A search in progress: ``next()`` is the next step, or the result once it is done."""

    def __init__(self, plan: SearchPlan) -> None:
        self.plan = plan
        self.trace: list[TraceEntry] = []
        self._steps = _search(plan)
        self._pending: Step | None = next(self._steps)
        self._result: SearchResult | None = None

    def next(self) -> Step | SearchResult:
        if self._result is not None:
            return self._result
        assert self._pending is not None
        return self._pending

    def record(self, passed: bool) -> None:
        """The verdict of the trial ``next()`` asked for."""
        step = self._pending
        if step is None:
            raise VirtbenchError("the search is already finished; no trial was pending")
        self.trace.append(TraceEntry(step.load, step.duration_s, step.phase, passed))
        try:
            self._pending = self._steps.send(passed)
        except StopIteration as stop:
            lo, hi = stop.value
            self._pending = None
            self._result = SearchResult(lo, hi, _reason(self.plan, lo, hi), len(self.trace))

    def replay(self, trace: Sequence[TraceEntry]) -> None:
        """Feed a stored trace back in (resume); it must be the trace this plan asks for."""
        for index, entry in enumerate(trace):
            step = self._pending
            if step is None:
                raise VirtbenchError(f"stored search trace has {len(trace)} trials, but the "
                                     f"search ended after {index}")
            if not (_same(step.load, entry.load) and _same(step.duration_s, entry.duration_s)):
                raise VirtbenchError(
                    f"stored search trial {index} offered {entry.load:g} for "
                    f"{entry.duration_s:g} s, but this plan asks for {step.load:g} for "
                    f"{step.duration_s:g} s there; the experiment's search block changed "
                    "(start a new run)")
            self.record(entry.passed)


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_SAME, abs_tol=1e-12)


def _reason(plan: SearchPlan, lo: float | None, hi: float | None) -> str:
    if lo is None:
        return f"lower bound reached: even {plan.lower:g} failed"
    if hi is None:
        return f"upper bound reached: {plan.upper:g} passed (the capacity may be higher)"
    return f"precision reached: ({hi:g} - {lo:g}) / {lo:g} = {(hi - lo) / lo:.2%}"


def _search(plan: SearchPlan) -> Verdicts:
    lo: float | None = plan.lower
    hi: float | None = plan.upper
    for phase, duration in enumerate(plan.durations_s):
        lo, hi = yield from _phase(plan, phase, duration, lo, hi)
        if lo is None or hi is None:  # a bound was reached: longer trials cannot move it back
            if phase == plan.phases - 1:
                return lo, hi
            # Later phases confirm the bound at their own duration.
            lo = plan.lower if lo is None else lo
            hi = plan.upper if hi is None else hi
    return lo, hi


_Trial = Callable[[float], Generator[Step, bool, bool]]
"""One trial at a load (of the phase's duration): whether it passed."""


def _phase(plan: SearchPlan, phase: int, duration: float, lo_hint: float | None,
           hi_hint: float | None) -> Verdicts:
    """One phase: confirm or move the hinted bounds at ``duration``, then bisect to the goal."""

    def trial(load: float) -> Generator[Step, bool, bool]:
        return (yield Step(load, duration, phase))

    lo_hint = plan.lower if lo_hint is None else lo_hint
    hi_hint = plan.upper if hi_hint is None else hi_hint
    width = max(hi_hint / lo_hint, plan.goal_ratio(phase))
    # Upper side: the hinted failure must fail at this duration too, or move up.
    if (yield from trial(hi_hint)):
        lo, hi = yield from _move_up(plan, trial, hi_hint, width)
        if hi is None:
            return lo, None
    # Lower side: the hinted pass must pass at this duration too, or move down.
    # lo_hint >= hi_hint only when an earlier phase found even the lower bound failing.
    elif lo_hint < hi_hint and (yield from trial(lo_hint)):
        lo, hi = lo_hint, hi_hint
    else:
        low, hi = yield from _move_down(plan, trial, min(hi_hint, lo_hint), width)
        if low is None:
            return None, hi
        lo = low
    return (yield from _bisect(plan, trial, lo, hi, plan.goal_ratio(phase)))


def _move_up(plan: SearchPlan, trial: _Trial, lo: float, width: float
             ) -> Generator[Step, bool, tuple[float, float | None]]:
    """From a passing ``lo``, outward (the step squared each time) until a load fails; that
    pass and failure, or (the last pass, None) at the plan's upper bound."""
    while lo < plan.upper:
        width *= width
        load = _outward(plan, lo, lo * width)
        if not (yield from trial(load)):
            return lo, load
        lo = load
    return lo, None


def _move_down(plan: SearchPlan, trial: _Trial, hi: float, width: float
               ) -> Generator[Step, bool, tuple[float | None, float]]:
    """From a failing ``hi``, outward (the step squared each time) until a load passes; that
    pass and failure, or (None, the last failure) at the plan's lower bound."""
    while hi > plan.lower:
        width *= width
        load = _outward(plan, hi, hi / width)
        if (yield from trial(load)):
            return load, hi
        hi = load
    return None, hi


def _bisect(plan: SearchPlan, trial: _Trial, lo: float, hi: float,
            goal: float) -> Verdicts:
    """Halve [lo, hi] (geometrically) until hi / lo is within the goal."""
    while hi / lo > goal:
        load = _round(plan, math.sqrt(lo * hi))
        if not lo < load < hi:  # whole-number loads: nothing left between them
            break
        if (yield from trial(load)):
            lo = load
        else:
            hi = load
    return lo, hi


def _outward(plan: SearchPlan, bound: float, load: float) -> float:
    """The next load of a bound moving out: within the plan's bounds, and for whole-number
    loads at least one unit away (rounding must not offer the same load again)."""
    moved = _round(plan, load)
    if moved == bound:
        moved = bound + (1.0 if load > bound else -1.0)
    return min(max(moved, plan.lower), plan.upper)


def _round(plan: SearchPlan, load: float) -> float:
    return float(round(load)) if plan.integer else load
