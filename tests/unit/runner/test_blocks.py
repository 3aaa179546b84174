"""Interleaved blocks of several runs (runner/blocks.py): the order is a seeded shuffle per
block, every run gets every step it needs, and the blocks interleave the runs."""

from __future__ import annotations

from collections.abc import Callable

from virtbench.runner.blocks import block_order, run_in_blocks

RUNS = ["r1", "r2", "r3", "r4", "r5"]


def test_the_order_is_seeded_fresh_per_block_and_salted() -> None:
    orders = [block_order(RUNS, 7, "cal-a", block) for block in range(1, 21)]
    assert all(sorted(order) == RUNS for order in orders)  # each a permutation
    assert orders == [block_order(RUNS, 7, "cal-a", block) for block in range(1, 21)]
    assert len({tuple(order) for order in orders}) > 5  # shuffled afresh, not one order
    assert orders != [block_order(RUNS, 8, "cal-a", b) for b in range(1, 21)]  # the seed
    assert orders != [block_order(RUNS, 7, "cal-b", b) for b in range(1, 21)]  # the salt


def _steps(needs: dict[str, int]) -> tuple[list[str], Callable[[str], bool]]:
    calls: list[str] = []
    left = dict(needs)

    def step(run: str) -> bool:
        calls.append(run)
        left[run] -= 1
        assert left[run] >= 0, f"{run} stepped after it finished"
        return left[run] == 0
    return calls, step


def test_every_run_gets_its_steps_and_blocks_interleave() -> None:
    needs = {"r1": 3, "r2": 5, "r3": 1, "r4": 5, "r5": 2}  # adaptive runs finish apart
    calls, step = _steps(needs)
    outcome = run_in_blocks(RUNS, step, seed=3, salt="cal-x")
    assert {run: calls.count(run) for run in RUNS} == needs
    assert sorted(outcome.finished) == RUNS and outcome.stopped == ""
    assert [number for number, _order in outcome.blocks] == [1, 2, 3, 4, 5]
    position = 0
    for number, order in outcome.blocks:  # each block: every unfinished run exactly once
        unfinished = [r for r in RUNS if calls[:position].count(r) < needs[r]]
        assert sorted(order) == unfinished
        assert order == block_order(unfinished, 3, "cal-x", number)  # the recorded order
        assert calls[position:position + len(order)] == order
        position += len(order)
    assert position == len(calls)


def test_same_seed_same_calls_and_a_stop_before_a_block() -> None:
    runs = []
    for _ in range(2):
        calls, step = _steps(dict.fromkeys(RUNS, 4))
        run_in_blocks(RUNS, step, seed=11, salt="cal-y")
        runs.append(calls)
    assert runs[0] == runs[1]
    calls, step = _steps(dict.fromkeys(RUNS, 4))
    outcome = run_in_blocks(RUNS, step, seed=11, salt="cal-y",
                            before_block=lambda number, _order: "budget" if number == 3 else "")
    assert outcome.stopped == "budget" and len(calls) == 2 * len(RUNS)
    assert outcome.finished == [] and [n for n, _o in outcome.blocks] == [1, 2]


def test_resumed_blocks_continue_the_numbering() -> None:
    _calls, step = _steps({"r1": 1, "r2": 2})
    outcome = run_in_blocks(["r1", "r2"], step, seed=1, salt="c",
                            first_block=4)
    assert [n for n, _o in outcome.blocks] == [4, 5]
    assert outcome.blocks[0][1] == block_order(["r1", "r2"], 1, "c", 4)
