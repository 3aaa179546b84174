"""Is a search trace consistent with its result? (A check for tests and for the report.)"""

from __future__ import annotations

from collections.abc import Sequence

from virtbench.search.algorithm import SearchResult, TraceEntry
from virtbench.search.search_limits import SearchPlan

__all__ = ["trace_problems"]


def trace_problems(plan: SearchPlan, trace: Sequence[TraceEntry],
                   result: SearchResult) -> list[str]:
    """What contradicts the result among the final-duration trials (empty: consistent).

    Every final trial at or below the found load passed; every one above it failed; the load
    just above the result failed within the precision, or a bound was reached.
    """
    final = plan.durations_s[-1]
    decisive = [t for t in trace if t.duration_s == final]
    problems: list[str] = []
    found = result.load
    for t in decisive:
        below = found is not None and t.load <= found
        if below and not t.passed:
            problems.append(f"{t.load:g} is at or below the result {found:g} but failed")
        if not below and t.passed:
            problems.append(f"{t.load:g} passed but the result is {found}")
    if found is not None and result.upper is not None:
        if not any(t.load == result.upper and not t.passed for t in decisive):
            problems.append(f"the upper end {result.upper:g} was not a failed final trial")
        if (result.upper - found) / found > plan.precision + 1e-12 and not plan.integer:
            problems.append(f"interval {found:g}..{result.upper:g} is wider than the "
                            f"precision {plan.precision:.2%}")
    if found is None and not any(t.load == plan.lower and not t.passed for t in decisive):
        problems.append("no load passed, yet the lower bound did not fail at the final duration")
    if result.upper is None and not any(t.load == plan.upper and t.passed for t in decisive):
        problems.append("the upper bound was reported reached but never passed at the final "
                        "duration")
    return problems
