"""Trial order: randomised and interleaved (or blocked by variant), reproducible from a seed.

Interleaving spreads slow drifts of the machine (thermal, background jobs) over every variant
instead of letting them land on whichever variant happened to run last.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Pair", "TrialKey", "blocked_variant_order", "round_order"]

Pair = tuple[str, str]
"""(variant, workload_id)"""


@dataclass(frozen=True)
class TrialKey:
    variant: str
    workload_id: str
    repetition: int
    warmup: bool = False


def _rng(seed: int, *parts: object) -> random.Random:
    return random.Random(f"{seed}:" + ":".join(map(str, parts)))


def round_order(pairs: Sequence[Pair], repetition: int, seed: int) -> list[TrialKey]:
    """One repetition of every pair, in a seeded random order (a fresh shuffle per round)."""
    shuffled = list(pairs)
    _rng(seed, "round", repetition).shuffle(shuffled)
    return [TrialKey(v, w, repetition) for v, w in shuffled]


def blocked_variant_order(variants: Sequence[str], seed: int) -> list[str]:
    """Variants in a seeded random block order (for variants that are expensive to switch)."""
    order = list(variants)
    _rng(seed, "blocks").shuffle(order)
    return order
