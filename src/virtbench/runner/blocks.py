"""Several stored runs measured in interleaved blocks (`virtbench calibrate`'s A/A runs).

Run one after another, K runs of one configuration confound the machine's slow drift
(temperature, background jobs, page cache) with the run index: the first run gets the cool
machine, the last the warm one. In blocks, each block runs the next round(s) of every
unfinished run, in an order shuffled afresh per block from the seed, so drift is spread over
every run instead of lining up with one. Each run stays a normal stored run: a block resumes
it (a Runner of ``RunRecord.resume(...)``, ``run(rounds=N)``) and leaves it resumable, the last
completes it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["BlocksOutcome", "block_order", "run_in_blocks"]


def block_order(runs: Sequence[str], seed: int, salt: str, block: int) -> list[str]:
    """The runs in block ``block``'s order: a seeded shuffle, fresh per block. ``salt`` (the
    calibration's id) keeps two calibrations of one experiment from sharing their orders."""
    order = list(runs)
    random.Random(f"{seed}:blocks:{salt}:{block}").shuffle(order)
    return order


@dataclass
class BlocksOutcome:
    blocks: list[tuple[int, list[str]]] = field(default_factory=list)
    """(block number, the runs in the order they ran) of every block that started"""
    finished: list[str] = field(default_factory=list)
    """runs complete, in the order they completed"""
    stopped: str = ""
    """why no further block started while runs were unfinished ('' when all finished)"""


def run_in_blocks(runs: Sequence[str], step: Callable[[str], bool], *, seed: int, salt: str,
                  first_block: int = 1,
                  before_block: Callable[[int, list[str]], str] | None = None
                  ) -> BlocksOutcome:
    """Blocks until every run finished: each block calls ``step(run)`` for every unfinished
    run in :func:`block_order`; ``step`` measures the run's next round(s) and returns True
    once the run is complete. ``before_block(number, order)`` is asked before each block:
    a non-empty answer (e.g. a spent time budget) is the reason to stop there. An exception
    from ``step`` (Ctrl-C, a failed run) ends the blocks and propagates."""
    outcome = BlocksOutcome()
    pending = list(runs)
    block = first_block
    while pending:
        order = block_order(pending, seed, salt, block)
        reason = before_block(block, order) if before_block is not None else ""
        if reason:
            outcome.stopped = reason
            break
        outcome.blocks.append((block, order))
        for run in order:
            if step(run):
                pending.remove(run)
                outcome.finished.append(run)
        block += 1
    return outcome
