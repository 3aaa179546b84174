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

    def trial_budget(self) -> int:
        """Trials the search takes at most when, besides, each later phase has to move one
        inherited bound once (a short trial passed a load its longer trial fails: a buffer
        in the path hid the loss): the move and the extra bisection it costs, two trials."""
        return self.predicted_trials() + 2 * (self.phases - 1)

    def predicted_duration_s(self) -> float:
        """Trial time of the predicted trials (setup and lab time not included)."""
        first = self.predicted_trials() - 3 * (self.phases - 1)
        return first * self.durations_s[0] + 3 * sum(self.durations_s[1:])
