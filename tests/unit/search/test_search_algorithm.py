"""The capacity search on simulated paths: precision, predicted trial count, resume, bounds."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from virtbench.model import VirtbenchError
from virtbench.search import Search, SearchPlan, SearchResult, TraceEntry, trace_problems


def run(plan: SearchPlan, passes: Callable[[float, float], bool]) -> Search:
    search = Search(plan)
    for _ in range(200):
        step = search.next()
        if isinstance(step, SearchResult):
            return search
        search.record(passes(step.load, step.duration_s))
    raise AssertionError("search did not end")


def result_of(search: Search) -> SearchResult:
    result = search.next()
    assert isinstance(result, SearchResult)
    return result


@pytest.mark.parametrize("capacity", [1_234.0, 55_555.0, 99_000.0, 10_100.0])
@pytest.mark.parametrize("durations", [(1.0,), (1.0, 5.0), (0.5, 1.0, 5.0)])
def test_threshold_path_found_to_precision_in_predicted_trials(
        capacity: float, durations: tuple[float, ...]) -> None:
    plan = SearchPlan(1_000.0, 100_000.0, 0.01, durations)
    search = run(plan, lambda load, _d: load <= capacity)
    result = result_of(search)
    assert result.load is not None and result.upper is not None
    assert result.load <= capacity < result.upper
    assert (result.upper - result.load) / result.load <= 0.01
    assert result.trials <= plan.predicted_trials()
    assert trace_problems(plan, search.trace, result) == []


def test_default_plan_to_one_percent_within_fifteen_trials() -> None:
    # The floor: a 100:1 range to 1 % precision in at most 15 trials.
    assert SearchPlan(10_000.0, 1_000_000.0, 0.01, (1.0, 5.0)).predicted_trials() <= 15


def test_short_trials_only_hint_a_longer_trial_decides() -> None:
    # Short trials pass up to 60 k (a buffer hides loss); final trials only up to 50 k.
    plan = SearchPlan(1_000.0, 100_000.0, 0.01, (1.0, 10.0))
    search = run(plan, lambda load, d: load <= (60_000.0 if d < 10 else 50_000.0))
    result = result_of(search)
    assert result.load is not None and result.upper is not None
    assert result.load <= 50_000.0 < result.upper
    assert trace_problems(plan, search.trace, result) == []


def test_upper_bound_reached_is_reported() -> None:
    plan = SearchPlan(10.0, 100.0, 0.05, (1.0, 2.0))
    search = run(plan, lambda _load, _d: True)
    result = result_of(search)
    assert (result.load, result.upper, result.bound_reached) == (100.0, None, True)
    assert "upper bound reached" in result.reason
    assert result.trials == 2  # the bound, once per phase
    assert trace_problems(plan, search.trace, result) == []


def test_lower_bound_failing_is_reported() -> None:
    plan = SearchPlan(10.0, 100.0, 0.05, (1.0, 2.0))
    search = run(plan, lambda _load, _d: False)
    result = result_of(search)
    assert result.load is None and result.upper == 10.0
    assert "lower bound reached" in result.reason
    assert trace_problems(plan, search.trace, result) == []


def test_replaying_a_stored_trace_continues_where_it_stopped() -> None:
    plan = SearchPlan(1_000.0, 100_000.0, 0.01, (1.0, 5.0))
    full = run(plan, lambda load, _d: load <= 42_000.0)
    resumed = Search(plan)
    resumed.replay(full.trace[:6])
    rest = run_from(resumed, lambda load, _d: load <= 42_000.0)
    assert rest.trace == full.trace
    assert result_of(rest) == result_of(full)


def run_from(search: Search, passes: Callable[[float, float], bool]) -> Search:
    while not isinstance(step := search.next(), SearchResult):
        search.record(passes(step.load, step.duration_s))
    return search


def test_a_trace_from_another_plan_is_refused() -> None:
    plan = SearchPlan(1_000.0, 100_000.0, 0.01, (1.0, 5.0))
    other = [TraceEntry(50_000.0, 1.0, 0, False)]
    with pytest.raises(VirtbenchError, match="search block changed"):
        Search(plan).replay(other)


def test_whole_number_loads_stop_when_nothing_is_left_between() -> None:
    plan = SearchPlan(1.0, 40.0, 0.001, (1.0,), integer=True)
    result = result_of(run(plan, lambda load, _d: load <= 7))
    assert (result.load, result.upper) == (7.0, 8.0)


def test_inconsistent_trace_is_caught() -> None:
    plan = SearchPlan(10.0, 100.0, 0.05, (1.0,))
    trace = [TraceEntry(100.0, 1.0, 0, False), TraceEntry(40.0, 1.0, 0, False),
             TraceEntry(50.0, 1.0, 0, True)]
    problems = trace_problems(plan, trace, SearchResult(50.0, 52.0, "", 3))
    assert any("40 is at or below" in p for p in problems)
    assert any("52 was not a failed" in p for p in problems)


@pytest.mark.parametrize(("lower", "upper", "precision", "durations", "message"), [
    (0.0, 10.0, 0.01, (1.0,), "0 < lower < upper"),
    (5.0, 4.0, 0.01, (1.0,), "0 < lower < upper"),
    (1.0, 4.0, 1.5, (1.0,), "precision"),
    (1.0, 4.0, 0.01, (5.0, 1.0), "short to long"),
])
def test_bad_plans_are_refused(lower: float, upper: float, precision: float,
                               durations: tuple[float, ...], message: str) -> None:
    with pytest.raises(VirtbenchError, match=message):
        SearchPlan(lower, upper, precision, durations)


@settings(max_examples=400, deadline=None)
@given(lower=st.floats(1.0, 1e6), span=st.floats(1.5, 1e4), precision=st.floats(0.002, 0.2),
       phases=st.integers(1, 4), integer=st.booleans(), at=st.floats(0.0, 1.0),
       shift=st.floats(1.0, 3.0), moves=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3))
def test_trial_budget_holds_whenever_the_verdict_moves_at_most_shift_between_phases(
        lower: float, span: float, precision: float, phases: int, integer: bool, at: float,
        shift: float, moves: list[float]) -> None:
    # Each phase's trials pass up to its own threshold; from one phase to the next the
    # threshold moves by a factor of at most `shift`, either way.
    upper = lower * span
    if integer:
        # The budget's premise for whole-number loads: none below 2 / precision.
        lower = float(max(round(lower), math.ceil(2 / precision)))
        upper = float(round(lower * span))
    plan = SearchPlan(lower, upper, precision,
                      tuple(float(2 ** p) for p in range(phases)), integer)
    thresholds = [lower * span ** (0.05 + 0.9 * at)]
    for move in moves[:phases - 1]:
        thresholds.append(thresholds[-1] * shift ** move)
    phase_of = {d: p for p, d in enumerate(plan.durations_s)}
    search = run(plan, lambda load, d: load <= thresholds[phase_of[d]])
    result = result_of(search)
    assert result.trials <= plan.trial_budget(shift)
    assert trace_problems(plan, search.trace, result) == []


def test_trial_budget_counts_two_trials_per_move_step() -> None:
    plan = SearchPlan(100.0, 10_000.0, 0.01, (1.0, 4.0))
    assert plan.trial_budget(1.0) == plan.predicted_trials() == 13
    assert plan.trial_budget(1.01 ** 2) == 15   # one step of width**2 reaches it
    assert plan.trial_budget(1.05) == 17        # two steps: width**2, then width**4
    with pytest.raises(VirtbenchError, match="at least 1"):
        plan.trial_budget(0.9)
