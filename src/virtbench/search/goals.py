"""RFC 9971 (Multiple Loss Ratio Search) Search Goals and the classification of loads.

A Search Goal is (Goal Loss Ratio, Goal Exceed Ratio, Goal Final Trial Duration, Goal Duration
Sum, Goal Width, Goal Initial Trial Duration). For one goal, a load is an Upper Bound, a Lower
Bound or Undecided from the durations of its trials: a bound must hold whatever the trials still
missing up to the duration sum could show (RFC 9971 section 4 and its Appendix A). Everything
here is pure: it reads trials, it runs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

__all__ = ["Bound", "Goal", "Target", "Trial", "classify", "conditional_loss_ratio",
           "relevant_bounds"]


class Bound(Enum):
    UPPER = "upper"
    LOWER = "lower"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Trial:
    """One trial of a search: the load offered, its intended duration and its loss ratio."""

    load: float
    duration_s: float
    loss_ratio: float


@dataclass(frozen=True)
class Target:
    """What one load classification is judged against (a goal, or a coarser step before it).

    Trials at least ``trial_duration`` long are full-length; shorter ones count as RFC 9971
    Appendix A says (a short high-loss trial counts only beyond what short low-loss trials
    balance at the exceed ratio; a short low-loss trial never makes a lower bound).
    """

    loss_ratio: float
    exceed_ratio: float
    trial_duration: float
    duration_sum: float
    width: float


@dataclass(frozen=True)
class Goal:
    """One RFC 9971 Search Goal, with a name for its results (``ndr``, ``pdr``)."""

    name: str
    loss_ratio: float = 0.0
    exceed_ratio: float = 0.5
    final_trial_duration: float = 1.0
    duration_sum: float = 21.0
    width: float = 0.005
    initial_trial_duration: float = 1.0

    def problems(self) -> list[tuple[str, str]]:
        """(field, why) for every RFC 9971 constraint this goal breaks (empty: valid)."""
        found: list[tuple[str, str]] = []
        if not 0 <= self.loss_ratio < 1:
            found.append(("loss_ratio", f"must be in [0, 1); got {self.loss_ratio:g}"))
        if not 0 <= self.exceed_ratio < 1:
            found.append(("exceed_ratio", f"must be in [0, 1); got {self.exceed_ratio:g}"))
        if not self.final_trial_duration > 0:
            found.append(("final_trial_duration", "must be positive; got "
                          f"{self.final_trial_duration:g}"))
        if not self.initial_trial_duration > 0:
            found.append(("initial_trial_duration", "must be positive; got "
                          f"{self.initial_trial_duration:g}"))
        elif self.initial_trial_duration > self.final_trial_duration:
            found.append(("initial_trial_duration", f"{self.initial_trial_duration:g} s is "
                          f"longer than final_trial_duration {self.final_trial_duration:g} s"))
        if self.duration_sum < self.final_trial_duration:
            found.append(("duration_sum", f"{self.duration_sum:g} s is shorter than "
                          f"final_trial_duration {self.final_trial_duration:g} s"))
        if not 0 < self.width < 1:
            found.append(("width", f"must be in (0, 1) (relative to the upper bound); got "
                          f"{self.width:g}"))
        elif self.width < self.loss_ratio:
            found.append(("width", f"{self.width:g} is below the goal's loss_ratio "
                          f"{self.loss_ratio:g}"))
        return found

    def final_target(self) -> Target:
        return Target(self.loss_ratio, self.exceed_ratio, self.final_trial_duration,
                      self.duration_sum, self.width)

    def targets(self) -> tuple[Target, ...]:
        """The targets searched in turn, coarsest first, the goal itself last.

        As the RFC's authors' implementation does, two coarser targets come first: each with
        twice the width of the next and a duration sum shrinking geometrically from the goal's
        down to the initial trial duration (trials no longer than that sum).
        """
        steps = 2
        multiplier = (self.initial_trial_duration / self.duration_sum) ** (1.0 / steps)
        targets = [self.final_target()]
        width = self.width
        for count in range(steps):
            duration_sum = (self.initial_trial_duration if count + 1 >= steps
                            else self.duration_sum * multiplier ** (count + 1))
            width = min(0.5, 2 * width)
            targets.append(Target(self.loss_ratio, self.exceed_ratio,
                                  min(self.final_trial_duration, duration_sum), duration_sum,
                                  width))
        return tuple(reversed(targets))

    def equivalence(self) -> str | None:
        """The RFC 9971 equivalence this goal's settings are, if any (section 5 of the RFC)."""
        key = (self.final_trial_duration, self.duration_sum, self.loss_ratio, self.exceed_ratio)
        if key == (60.0, 60.0, 0.0, 0.0):
            return "RFC 2544 throughput (60 s trials, 60 s sum, 0 % loss, 0 % exceed)"
        if key == (60.0, 120.0, 0.0, 0.5):
            return ("ETSI TST009 binary search with up to 2 tries per load (60 s trials, "
                    "120 s sum, 0 % loss, 50 % exceed)")
        return None


def _sums(trials: Iterable[Trial], target: Target) -> tuple[float, float, float, float]:
    good_long = bad_long = good_short = bad_short = 0.0
    for t in trials:
        bad = t.loss_ratio > target.loss_ratio
        if t.duration_s >= target.trial_duration * (1 - 1e-9):
            if bad:
                bad_long += t.duration_s
            else:
                good_long += t.duration_s
        elif bad:
            bad_short += t.duration_s
        else:
            good_short += t.duration_s
    return good_long, bad_long, good_short, bad_short


def classify(trials: Iterable[Trial], target: Target) -> Bound:
    """The load's classification for ``target`` from the trials at that load (RFC 9971 A.1)."""
    good_long, bad_long, good_short, bad_short = _sums(trials, target)
    exceed = target.exceed_ratio
    balancing = good_short * exceed / (1.0 - exceed)
    effective_bad = bad_long + max(0.0, bad_short - balancing)
    effective_whole = max(good_long + effective_bad, target.duration_sum)
    quantile_sum = effective_whole * exceed
    optimistic_lower = effective_bad <= quantile_sum
    pessimistic_lower = (effective_whole - good_long) <= quantile_sum
    if not optimistic_lower:
        return Bound.UPPER
    if pessimistic_lower:
        return Bound.LOWER
    return Bound.UNDECIDED


def conditional_loss_ratio(trials: Iterable[Trial], target: Target) -> float:
    """The loss ratio of the conditional throughput (RFC 9971 A.2): the exceed-ratio quantile
    of the full-length trials' loss ratios, the missing duration sum counted as full loss,
    the lower value on a tie."""
    long_trials = sorted((t.loss_ratio, t.duration_s) for t in trials
                         if t.duration_s >= target.trial_duration * (1 - 1e-9))
    whole = max(target.duration_sum, sum(d for _, d in long_trials))
    remaining = whole * (1.0 - target.exceed_ratio)
    found: float | None = None
    for ratio, duration in long_trials:
        if found is not None and remaining <= 0.0:
            break
        found = ratio
        remaining -= duration
    else:
        if remaining > 0.0:
            found = 1.0
    return 1.0 if found is None else found


def by_load(trials: Sequence[Trial]) -> dict[float, list[Trial]]:
    """Trials grouped by load, in load order (a stored load is its ``repr``, which reads back
    as the same float, so equal loads are equal floats)."""
    groups: dict[float, list[Trial]] = {}
    for t in trials:
        groups.setdefault(t.load, []).append(t)
    return dict(sorted(groups.items()))


def relevant_bounds(trials: Sequence[Trial], target: Target
                    ) -> tuple[float | None, float | None, dict[float, Bound]]:
    """(Relevant Lower Bound, Relevant Upper Bound, every load's class) for ``target``.

    The Relevant Upper Bound is the smallest upper bound; the Relevant Lower Bound the largest
    lower bound below it (so a lower bound above an upper one, loss inversion, is ignored).
    """
    classes = {load: classify(group, target) for load, group in by_load(trials).items()}
    uppers = [load for load, c in classes.items() if c is Bound.UPPER]
    upper = min(uppers) if uppers else None
    lowers = [load for load, c in classes.items()
              if c is Bound.LOWER and (upper is None or load < upper)]
    return (max(lowers) if lowers else None), upper, classes
