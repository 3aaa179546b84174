"""Adaptive stopping: which (variant, workload) pairs still need repetitions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from virtbench.model import Metric
from virtbench.runner.schedule import Pair
from virtbench.spec.models import Adaptive

__all__ = ["unconverged_pairs"]


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
                                         m.better, rule.target_rel_ci) for m in metrics)
        if not done:
            remaining.append((variant, workload_id))
    if rule.criterion == "speedup":
        needy = {w for v, w in remaining if v != baseline}
        for variant, workload_id in pairs:
            if variant == baseline and workload_id in needy:
                remaining.append((variant, workload_id))
    return remaining
