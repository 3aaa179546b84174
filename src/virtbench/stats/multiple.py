"""Multiple-comparison correction (pure numpy: cheap to import for the decide commands)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["holm"]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (Holm 1979), in the input order.

    With the m non-nan p-values sorted ascending p_(1) ≤ … ≤ p_(m):
    p̃_(i) = min(1, max_{j ≤ i} (m - j + 1) p_(j)). nan inputs stay nan and do not count in m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, math.nan)
    valid = np.flatnonzero(~np.isnan(p))
    if valid.size == 0:
        return [math.nan] * int(p.size)
    if np.any((p[valid] < 0.0) | (p[valid] > 1.0)):
        raise ValueError("p_values: every p-value must be in [0, 1] (or nan)")
    m = valid.size
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = p[order] * np.arange(m, 0, -1)
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return [float(v) for v in out]
