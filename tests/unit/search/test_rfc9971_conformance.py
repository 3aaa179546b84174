"""RFC 9971 conformance of the multi-goal search, against the RFC authors' MLRsearch 1.2.1:
the load classification and conditional throughput are the reference's on any trials; the
relevant bounds are the RFC's definitions applied to the search's own trials; on simulated
devices (threshold, growing loss, inversion, random flips, a buffer hiding loss from short
trials) the results agree with the reference search's within the goal's width."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench.search.goals import (
    Bound,
    Goal,
    Target,
    Trial,
    by_load,
    classify,
    conditional_loss_ratio,
    relevant_bounds,
)
from virtbench.search.multi import MultiPlan

from .duts import (
    Dut,
    buffer,
    flips,
    growing,
    inversion,
    reference_class,
    reference_conditional_loss,
    run_ours,
    run_reference,
    threshold,
)

CSIT = (Goal("ndr", 0.0, 0.5, 1.0, 21.0, 0.005, 1.0),
        Goal("pdr", 0.005, 0.5, 1.0, 21.0, 0.005, 1.0))
LONGER = (Goal("ndr", 0.0, 0.5, 4.0, 8.0, 0.005, 1.0),
          Goal("pdr", 0.005, 0.5, 4.0, 8.0, 0.005, 1.0))
RFC2544 = (Goal("ndr", 0.0, 0.0, 2.0, 2.0, 0.005, 2.0),
           Goal("pdr", 0.005, 0.0, 2.0, 2.0, 0.005, 2.0))

targets = st.builds(
    lambda lr, er, d, extra, w: Target(lr, er, d, d + extra, w),
    st.sampled_from([0.0, 0.005, 0.1]), st.sampled_from([0.0, 0.25, 0.5, 0.9]),
    st.sampled_from([1.0, 4.0, 60.0]), st.sampled_from([0.0, 1.0, 20.0, 60.0]),
    st.just(0.005))


@settings(max_examples=300, deadline=None)
@given(target=targets, trials=st.lists(st.tuples(
    st.sampled_from([0.5, 1.0, 4.0, 60.0]), st.sampled_from([0.0, 0.001, 0.005, 0.05, 1.0])),
    max_size=30))
def test_classification_and_conditional_loss_are_the_references(
        target: Target, trials: list[tuple[float, float]]) -> None:
    at_load = [Trial(1000.0, d, lr) for d, lr in trials]
    optimistic, pessimistic = reference_class(at_load, target)
    expected = (Bound.UPPER if not optimistic else Bound.LOWER if pessimistic
                else Bound.UNDECIDED)
    assert classify(at_load, target) is expected
    assert conditional_loss_ratio(at_load, target) == reference_conditional_loss(at_load, target)


def _rfc_bounds(trials: list[Trial], target: Target) -> tuple[float | None, float | None]:
    """RFC 9971's definitions, on the reference's classification of each load."""
    classes = {load: reference_class(group, target) for load, group in by_load(trials).items()}
    uppers = [load for load, (optimistic, _p) in classes.items() if not optimistic]
    upper = min(uppers) if uppers else None
    lowers = [load for load, (_o, pessimistic) in classes.items()
              if pessimistic and (upper is None or load < upper)]
    return (max(lowers) if lowers else None), upper


def _check_rfc_definitions(plan: MultiPlan, dut: Dut) -> None:
    search, results = run_ours(plan, dut)
    for result in results:
        goal = result.goal
        assert (result.lower, result.upper) == _rfc_bounds(search.trace, goal.final_target())
        if result.regular:
            assert result.lower is not None and result.upper is not None
            assert result.upper - result.lower <= goal.width * result.upper * (1 + 1e-9) \
                or (plan.integer and result.upper - result.lower <= 1)
            assert result.conditional_throughput is not None
            assert result.conditional_throughput <= result.lower
        truth = dut.truth(goal)
        if truth is not None and result.regular and "flips" not in dut.name:
            assert result.lower is not None and result.upper is not None
            assert result.lower <= truth < result.upper, (dut.name, goal.name)


DUTS: list[Callable[[], Dut]] = [
    lambda: threshold(52_345.0), lambda: growing(48_000.0, 0.05),
    lambda: inversion(30_000.0), lambda: flips(61_000.0, 0.05, seed=3),
    lambda: buffer(40_000.0, 4000.0)]
"""Each call a fresh device (the flips' random stream starts again for the reference)."""


@pytest.mark.parametrize("make", DUTS, ids=lambda m: m().name)
@pytest.mark.parametrize("goals", [CSIT, LONGER, RFC2544], ids=["csit", "longer", "rfc2544"])
def test_each_dut_gets_the_rfc_bounds_and_the_references_within_width(
        make: Callable[[], Dut], goals: tuple[Goal, ...]) -> None:
    plan = MultiPlan(1000.0, 200_000.0, goals)
    _check_rfc_definitions(plan, make())
    _search, ours = run_ours(plan, make())
    _trials, _seconds, reference = run_reference(plan, make())
    for result, (ref_lower, ref_upper) in zip(ours, reference, strict=True):
        assert (result.lower is None) == (ref_lower is None)
        assert (result.upper is None) == (ref_upper is None)
        if make().name.startswith("flips") and goals is not CSIT:
            # 1 or 2 trials decide a load there: a flipped trial misleads either search.
            continue
        if make().name.startswith("inversion"):
            # Under loss inversion the RFC's bounds depend on the loads tried: the reference
            # happened to try the lossy band above 30 000, this search the lossless one above
            # 36 000 (both are the RFC's bounds of their own trials, checked above).
            continue
        if result.lower is not None and ref_lower is not None:
            top = max(result.upper or result.lower, ref_upper or ref_lower)
            assert abs(result.lower - ref_lower) <= result.goal.width * top * (1 + 1e-9), \
                (result.goal.name, result.lower, ref_lower)


kinds = st.one_of(
    st.builds(threshold, st.floats(2000, 190_000)),
    st.builds(growing, st.floats(2000, 150_000), st.sampled_from([0.01, 0.05, 0.5])),
    st.builds(inversion, st.floats(2000, 120_000)),
    st.builds(flips, st.floats(2000, 190_000), st.sampled_from([0.01, 0.1]),
              st.integers(0, 10 ** 6)),
    st.builds(buffer, st.floats(2000, 150_000), st.sampled_from([100.0, 5000.0])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dut=kinds, goals=st.sampled_from([CSIT, LONGER, RFC2544]), integer=st.booleans())
def test_random_duts_get_the_rfc_bounds(dut: Dut, goals: tuple[Goal, ...],
                                        integer: bool) -> None:
    _check_rfc_definitions(MultiPlan(1000.0, 200_000.0, goals, integer), dut)


def test_the_reference_and_ours_cost_about_the_same() -> None:
    plan = MultiPlan(1000.0, 200_000.0, CSIT)
    search, _results = run_ours(plan, growing(50_000.0, 0.05))
    trials, _seconds, _ref = run_reference(plan, growing(50_000.0, 0.05))
    assert math.isclose(len(search.trace), trials, rel_tol=0.5)


@pytest.mark.parametrize("goals", [CSIT, RFC2544], ids=["csit", "rfc2544"])
def test_loss_inversion_disagreement_is_the_loads_tried(goals: tuple[Goal, ...]) -> None:
    """Under loss inversion this search and the reference report different bounds, and both
    follow RFC 9971's definitions: the relevant bounds are defined on the loads a search
    tried, not on the device. inversion(30 000) loses 2 % only in (30 000, 36 000): the
    reference tried that band and reports its onset; this search bisected past it (every
    load it tried below 45 000 was lossless) and reports the lossless band's top. Given the
    reference's trials as well, the same definitions give the reference's bounds: the lower
    upper bound wins and the lower bounds above it no longer count (docs/capacity.md,
    "Loss inversion")."""
    plan = MultiPlan(1000.0, 200_000.0, goals)
    search, ours = run_ours(plan, inversion(30_000.0))
    tried: list[Trial] = []
    _trials, _seconds, reference = run_reference(plan, inversion(30_000.0), tried)
    assert not any(30_000.0 < t.load < 36_000.0 for t in search.trace)
    assert any(30_000.0 < t.load < 36_000.0 for t in tried)
    for result, (ref_lower, ref_upper) in zip(ours, reference, strict=True):
        target = result.goal.final_target()
        assert (result.lower, result.upper) == _rfc_bounds(search.trace, target)
        assert (ref_lower, ref_upper) == _rfc_bounds(tried, target)
        assert result.lower is not None and ref_lower is not None and ref_upper is not None
        assert 36_000.0 <= result.lower < 45_000.0 and ref_upper <= 36_000.0
        assert ref_lower <= 30_000.0 < ref_upper
        assert relevant_bounds([*search.trace, *tried], target)[:2] == _rfc_bounds(tried, target)
