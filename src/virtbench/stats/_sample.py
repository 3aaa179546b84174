"""Input validation and resampling helpers shared by the statistics modules (private)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
SampleLike = Sequence[float] | npt.NDArray[np.floating] | npt.NDArray[np.integer]

# Above this many samples in one group the bootstrap distribution of its mean is replaced by its
# normal limit N(mean, sd0²/n) (central limit theorem); resampling 10⁶ values thousands of times
# would cost minutes for an answer that differs only in the third significant digit.
NORMAL_MEAN_ABOVE = 2_000

# Upper bound on resample-matrix cells held in memory at once (8 bytes each -> ~16 MB).
_MAX_CELLS = 2_000_000


def as_sample(values: SampleLike, name: str = "values") -> FloatArray:
    """Return ``values`` as a 1-D float64 array; raise ValueError naming ``name`` if unusable."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D sequence of numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name}: {bad} value(s) are NaN or infinite; drop them before analysis")
    return arr


def check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: must be in (0, 1), got {confidence!r}")


def sample_var_of_mean(x: FloatArray) -> float:
    """Estimated variance of the mean, s²/n with the unbiased (n-1) sample variance."""
    return float(np.var(x, ddof=1)) / x.size


def t_quantile(confidence: float, df: float) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom:
    scipy.stats.t.ppf(½ + confidence/2, df), or norm.ppf for infinite df (nan for df ≤ 0 or
    nan, as t.ppf). From scipy.special (stdtrit, ndtri: what scipy.stats.t and norm call),
    imported on the first quantile: scipy.stats' import costs a second, scipy.special's a
    third, which a command that computes no interval never pays."""
    from scipy import special

    q = 0.5 + confidence / 2.0
    return float(special.ndtri(q)) if math.isinf(df) else float(special.stdtrit(df, q))


def welch_df(parts: Sequence[tuple[float, int]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variance parts ``(v_i, n_i)``.

    df = (Σ v_i)² / Σ (v_i² / (n_i - 1)); infinite when every part is zero.
    """
    total = sum(v for v, _ in parts)
    denom = sum(v * v / (n - 1) for v, n in parts if n > 1)
    if denom == 0.0:
        return math.inf
    return total * total / denom


def resampled_means(x: FloatArray, resamples: int, rng: np.random.Generator) -> FloatArray:
    """Means of ``resamples`` bootstrap resamples (with replacement, same size) of ``x``.

    Vectorised in chunks so memory stays bounded; for groups larger than NORMAL_MEAN_ABOVE the
    normal limit of the bootstrap mean, N(mean, sd0²/n) with the n-divisor sd, is drawn instead.
    """
    n = x.size
    if n > NORMAL_MEAN_ABOVE:
        scale = float(np.std(x)) / math.sqrt(n)
        return rng.normal(float(np.mean(x)), scale, size=resamples)
    out = np.empty(resamples, dtype=np.float64)
    chunk = max(1, _MAX_CELLS // n)
    for start in range(0, resamples, chunk):
        k = min(chunk, resamples - start)
        idx = rng.integers(0, n, size=(k, n))
        out[start : start + k] = x[idx].mean(axis=1)
    return out
