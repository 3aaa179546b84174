"""The schedule: which trial runs next, and when the run stops.

Trials run in rounds: one repetition of every (variant, workload) pair per round, in a seeded
random order shuffled afresh each round (interleaving spreads slow drifts of the machine —
thermal, background jobs — over every variant instead of letting them land on whichever ran
last), or variant by variant in a seeded random block order when the lab is expensive to
switch. Warm-up rounds come first; capacity searches run whole, before the rounds. A fixed
rule stops after its repetitions; an adaptive one once every primary metric is precise
enough (after ``min``), when its time budget is spent, or after ``max``. Everything is
reproducible from the experiment's seed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from virtbench.model import Metric
from virtbench.runner.search import (
    SearchedWorkload,
    after_from_trials,
    goal_trace_from_trials,
    run_goal_search,
    run_search,
    trace_from_trials,
)
from virtbench.spec.models import Adaptive

if TYPE_CHECKING:
    from virtbench.labs.lab_contract import LabState
    from virtbench.runner.outcome import RunOutcome
    from virtbench.runner.plan import Plan
    from virtbench.runner.record import RunRecord
    from virtbench.runner.trial import Trials

__all__ = ["Pair", "Schedule", "TrialKey", "blocked_variant_order", "round_order",
           "unconverged_pairs"]

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


def unconverged_pairs(
    pairs: Sequence[Pair],
    values: Mapping[tuple[str, str, str], list[float]],
    primaries: Mapping[str, list[Metric]],
    rule: Adaptive,
    baseline: str,
) -> list[Pair]:
    """Pairs whose primary metrics are not yet precise enough under ``rule``.

    criterion "mean": the 95 % CI half-width of each primary metric's mean ≤ target × mean.
    criterion "speedup": the CI of the speedup over the baseline ≤ target × speedup; the
    baseline keeps running while any variant of the same workload still needs it.
    """
    # Only an adaptive run gets here: a fixed one never pays for the stopping rule's SciPy.
    from virtbench.stats import ci_converged, speedup_converged

    remaining: list[Pair] = []
    for variant, workload_id in pairs:
        metrics = primaries[workload_id]
        if rule.criterion == "speedup" and variant == baseline:
            continue  # decided below, by whether any variant still needs it
        if rule.criterion == "mean":
            done = all(ci_converged(values.get((variant, workload_id, m.name), []),
                                    rule.target_rel_ci) for m in metrics)
        else:
            done = all(speedup_converged(values.get((baseline, workload_id, m.name), []),
                                         values.get((variant, workload_id, m.name), []),
                                         m.better, rule.target_rel_ci)
                       # a primary metric always has a direction (model.Metric refuses one
                       # without); the condition only tells the type checker so
                       for m in metrics if m.better is not None)
        if not done:
            remaining.append((variant, workload_id))
    if rule.criterion == "speedup":
        needy = {w for v, w in remaining if v != baseline}
        for variant, workload_id in pairs:
            if variant == baseline and workload_id in needy:
                remaining.append((variant, workload_id))
    return remaining


class Schedule:
    """Asks ``trials`` for each trial of one call of a run, in order, and says why it stopped.

    ``done``: the trials stored already (a resumed run skips them); ``rounds``: stop after
    this many repetition rounds that measure something, leaving the run paused;
    ``between(label)``: the noise checks between blocks, and between rounds when ``round_due()``
    says they are due."""

    def __init__(self, plan: Plan, trials: Trials, record: RunRecord, *, blocked: bool,
                 done: set[tuple[str, str, int]], rounds: int | None,
                 between: Callable[[str], None], round_due: Callable[[], bool]) -> None:
        self.plan, self.trials, self.record, self.blocked = plan, trials, record, blocked
        self.done, self.between, self.round_due = done, between, round_due
        self._round_limit, self._rounds_measured = rounds, 0  # blocked: over every block
        self._primaries = {w: wl.primary_metrics() for w, wl in plan.workloads.items()}

    def run(self, outcome: RunOutcome) -> str:
        """Every trial still to run; returns the stop reason."""
        pairs = [(v, w) for v in self.plan.variants for w in self.plan.workloads]
        per_pair = self.plan.max_repetitions + self.plan.experiment.warmup
        self.trials.progress.start(len(pairs) * per_pair - len(self.done))
        if not self.blocked:
            return self._rounds(pairs, None, outcome)
        reasons: list[str] = []
        for variant in blocked_variant_order(list(self.plan.variants), self.plan.experiment.seed):
            if reasons:  # the first block follows the start's checks directly
                self.between(f"before block {variant}")
            with self.trials.entered(variant) as state:
                reasons.append(self._rounds([p for p in pairs if p[0] == variant], state,
                                            outcome))
            if outcome.paused:
                return reasons[-1]
        return "; ".join(sorted(set(reasons)))

    def _rounds(self, pairs: list[Pair], state: LabState | None, outcome: RunOutcome) -> str:
        """The searches, warm-ups and repetition rounds of ``pairs`` (one block, or all)."""
        started = time.monotonic()
        searches = [p for p in pairs if isinstance(self.plan.workloads[p[1]], SearchedWorkload)]
        if searches:
            self._searches(searches, state)
            pairs = [p for p in pairs if p not in searches]
            if not pairs:
                return "capacity searches done"
        self._warm_up(pairs, state)
        active = list(pairs)
        seed = self.plan.experiment.seed
        for repetition in range(self.plan.max_repetitions):
            active, reason = self._stop_early(active, repetition, started, outcome)
            if reason:
                return reason
            keys = [key for key in round_order(active, repetition, seed)
                    if (key.variant, key.workload_id, key.repetition) not in self.done]
            if keys and self._pause():
                outcome.paused = True
                return (f"paused after {self._rounds_measured} repetition round(s), as "
                        "asked; resuming continues it")
            if state is None and repetition > 0 and self.round_due():  # interleaved
                self.between(f"before round {repetition + 1}")
            for key in keys:
                self.trials.run(key, state)
                outcome.repetitions[(key.variant, key.workload_id)] = repetition + 1
        if self.plan.adaptive:
            return f"repetition budget ({self.plan.max_repetitions}) spent before convergence"
        return f"fixed repetitions ({self.plan.max_repetitions})"

    def _warm_up(self, pairs: list[Pair], state: LabState | None) -> None:
        """The warm-up rounds of every pair that has no trial stored yet."""
        started = {(d[0], d[1]) for d in self.done}
        for warm in range(self.plan.experiment.warmup):
            for key in round_order(pairs, -1 - warm, self.plan.experiment.seed):
                if (key.variant, key.workload_id) not in started:
                    self.trials.run(TrialKey(key.variant, key.workload_id, -1 - warm, True),
                                    state)

    def _stop_early(self, active: list[Pair], repetition: int, started: float,
                    outcome: RunOutcome) -> tuple[list[Pair], str]:
        """The pairs an adaptive rule still needs before round ``repetition``, and the reason
        to stop now ('' to go on)."""
        rule = self.plan.adaptive
        if rule is None or repetition < rule.min:
            return active, ""
        active = unconverged_pairs(active, self.trials.values, self._primaries, rule,
                                   self.plan.baseline)
        if not active:
            self.trials.progress.set_total(outcome.trials)
            return active, f"converged: every primary metric within ±{rule.target_rel_ci:.1%}"
        if rule.budget_s and time.monotonic() - started > rule.budget_s:
            return active, f"time budget of {rule.budget_s:g} s spent before convergence"
        return active, ""

    def _pause(self) -> bool:
        """True when the round limit is reached; else the next round counts towards it."""
        if self._round_limit is None:
            return False
        if self._rounds_measured >= self._round_limit:
            return True
        self._rounds_measured += 1
        return False

    def _searches(self, pairs: list[Pair], state: LabState | None) -> None:
        """Each searched (variant, workload) to its result, continuing a stored trace."""
        stored = self.record.store.trials(self.record.run_id)
        for key in round_order(pairs, 0, self.plan.experiment.seed):
            workload = self.plan.workloads[key.workload_id]
            assert isinstance(workload, SearchedWorkload)

            def step(index: int, key: TrialKey = key) -> None:
                self.trials.run(TrialKey(key.variant, key.workload_id, index), state)

            if workload.spec.goals:
                run_goal_search(workload, key.variant,
                                goal_trace_from_trials(stored, key.variant, key.workload_id),
                                step)
                continue
            run_search(workload, key.variant,
                       trace_from_trials(stored, key.variant, key.workload_id), step,
                       after_from_trials(stored, key.variant, key.workload_id))
