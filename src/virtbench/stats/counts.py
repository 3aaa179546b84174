"""Counts that start from zero: failures, lost frames, drops. A ratio of means needs a BASE mean
above zero, so a count that is 0 in every BASE trial and 50 per trial in NEW has no ratio; it
is judged here instead, by an exact test on the counts.

Under "NEW has the same event rate as BASE" (each trial a Poisson count of one rate), the total
K of both sides splits between them as Binomial(K, n_new / (n_base + n_new)): conditioning on K
removes the unknown rate (the conditional test for two Poisson rates; Przyborowski & Wilenski,
1940). With BASE at 0, all K events fell in NEW, and the one-sided p of "NEW's rate is higher"
is (n_new / (n_base + n_new)) ** K. Definitions: docs/statistics.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["is_count_sample", "zero_baseline_increase_p"]


def is_count_sample(values: Sequence[float]) -> bool:
    """Every value a non-negative whole number (a count per trial)."""
    return all(math.isfinite(v) and v >= 0 and float(v).is_integer() for v in values)


def zero_baseline_increase_p(base: Sequence[float], new: Sequence[float]) -> float | None:
    """One-sided p of "NEW's count rate is higher than BASE's" when BASE counted 0 in every
    trial; None when this test does not apply (not counts, or BASE not all zero, or a side
    empty). 1.0 when NEW counted 0 too: no increase to speak of."""
    if not base or not new or not is_count_sample(base) or not is_count_sample(new):
        return None
    if any(base):
        return None
    total = sum(new)
    if total == 0:
        return 1.0
    return float((len(new) / (len(base) + len(new))) ** total)
