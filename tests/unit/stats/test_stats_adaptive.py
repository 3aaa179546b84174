"""Stopping rules for adaptive repetitions."""

import numpy as np

from virtbench.model import Better
from virtbench.stats import ci_converged, speedup_converged, speedup_half_width_rel, summarize


def test_ci_converged_follows_summary_half_width() -> None:
    rng = np.random.default_rng(5)
    tight = rng.normal(100.0, 1.0, 10)  # half-width ≈ 0.7 %
    wide = rng.normal(100.0, 20.0, 10)  # half-width ≈ 14 %
    assert ci_converged(tight)
    assert not ci_converged(wide)
    assert ci_converged(wide, target_rel=summarize(wide).ci_half_width_rel + 1e-12)
    assert not ci_converged(tight[:2])  # below min_n = 3
    assert ci_converged(tight[:2], min_n=2) == (summarize(tight[:2]).ci_half_width_rel <= 0.02)
    assert not ci_converged([5.0])
    assert not ci_converged([-1.0, 1.0], target_rel=1e9)  # mean 0: undefined, never converged


def test_speedup_converged() -> None:
    rng = np.random.default_rng(6)
    base, var = rng.normal(2.0, 0.02, 8), rng.normal(1.0, 0.01, 8)
    assert speedup_converged(base, var, Better.LOWER)
    noisy = rng.normal(1.0, 0.3, 8)
    assert not speedup_converged(base, noisy, Better.LOWER)
    assert not speedup_converged(base[:1], var, Better.LOWER)
    # swapping roles and direction describes the same ratio
    lo = speedup_half_width_rel(base, noisy, Better.LOWER)
    hi = speedup_half_width_rel(noisy, base, Better.HIGHER)
    assert lo == hi
