"""What a capacity search may do: its load bounds, precision, trial durations and trial budget."""

from __future__ import annotations

import math
from dataclasses import dataclass

from virtbench.model import VirtbenchError

__all__ = ["SearchPlan"]


@dataclass(frozen=True)
class SearchPlan:
    """Bounds and precision of one search; loads in the workload's own unit (pps, req/s, IOPS).

    The search runs one phase per entry of ``durations_s`` (short first, the last is the final
    trial duration). Only trials of a phase's own duration decide its interval; shorter trials
    only say where to look. Each phase halves the (logarithmic) width the one before reached,
    so the last phase ends at ``precision``: the found load ``lo`` and the lowest failing load
    ``hi`` satisfy ``(hi - lo) / lo <= precision``.
    """

    lower: float
    upper: float
    precision: float = 0.01
    durations_s: tuple[float, ...] = (1.0, 5.0)
    integer: bool = False
    """Offer whole-number loads only (a packet rate in pps, a worker count)."""

    def __post_init__(self) -> None:
        if not 0 < self.lower < self.upper:
            raise VirtbenchError(f"search bounds must satisfy 0 < lower < upper; got lower "
                                 f"{self.lower:g}, upper {self.upper:g}")
        if not 0 < self.precision < 1:
            raise VirtbenchError(f"search precision must be between 0 and 1 (relative width "
                                 f"of the final interval); got {self.precision:g}")
        if not self.durations_s or any(d <= 0 for d in self.durations_s):
            raise VirtbenchError("search durations_s must be one or more positive durations")
        if list(self.durations_s) != sorted(self.durations_s):
            raise VirtbenchError("search durations_s must go from short to long (the last is "
                                 "the final trial duration)")
        if self.integer and not (self.lower.is_integer() and self.upper.is_integer()):
            raise VirtbenchError(f"an integer search needs whole-number bounds; got lower "
                                 f"{self.lower:g}, upper {self.upper:g}")

    @property
    def phases(self) -> int:
        return len(self.durations_s)

    def goal_ratio(self, phase: int) -> float:
        """Largest hi/lo at which ``phase`` stops: (1 + precision) ** 2 ** (phases - 1 - phase)."""
        return float((1.0 + self.precision) ** (2 ** (self.phases - 1 - phase)))

    def predicted_trials(self) -> int:
        """Trials the search takes at most on a path whose verdict does not depend on the trial
        duration and never contradicts itself (each lower load passes if a higher one does).

        Phase 0: both bounds, then geometric bisection from upper/lower to its goal ratio; each
        later phase: both inherited bounds at its own duration and one more bisection.
        """
        first = math.log(self.upper / self.lower) / math.log(self.goal_ratio(0))
        bisections = max(0, math.ceil(math.log2(first) - 1e-9)) if first > 1 else 0
        return 2 + bisections + 3 * (self.phases - 1)

    def trial_budget(self, shift: float) -> int:
        """Trials the search takes at most when the load at which verdicts change may differ by
        up to a factor ``shift`` from one phase's trial duration to the next (a buffer in the
        path hides loss from short trials; a queue builds up only in long ones), and verdicts
        within one phase never contradict each other.

        A later phase starts from an interval between ``goal`` and ``goal**2`` wide (``goal``
        its own goal ratio). A bound the new duration contradicts moves out in steps of
        ``width**2``, ``width**4``, ... so after ``k`` steps it has covered
        ``width**(2**(k+1) - 2)``; the interval it lands in is at most ``goal**(2**(k+1))``
        wide and takes ``k + 1`` bisections. Against the predicted three trials of a phase
        (both inherited bounds and one bisection), ``k`` moves cost ``2k`` more.

        Whole-number loads (``integer``) round each midpoint by up to half a unit, which can
        leave an interval just wider than half the one before: one more trial per phase, as
        long as every load is at least ``2 / precision`` (smaller loads end on neighbouring
        whole numbers instead).
        """
        if not math.isfinite(shift) or shift < 1:
            raise VirtbenchError(f"a verdict shift is a factor of at least 1; got {shift:g}")
        total = self.predicted_trials()
        for phase in range(1, self.phases):
            covered = math.log(shift) / math.log(self.goal_ratio(phase))
            steps = 0
            while 2 ** (steps + 1) - 2 < covered - 1e-9:
                steps += 1
            total += 2 * steps
        if self.integer:
            total += self.phases
        return total

    def predicted_duration_s(self) -> float:
        """Trial time of the predicted trials (setup and lab time not included)."""
        first = self.predicted_trials() - 3 * (self.phases - 1)
        return first * self.durations_s[0] + 3 * sum(self.durations_s[1:])
