"""Outlier flagging by the modified z-score (median and MAD). Flags only; never drops."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from virtbench.stats._sample import SampleLike, as_sample

__all__ = ["mad_outliers", "modified_z_scores"]

# 0.6745 = Φ⁻¹(0.75): makes MAD a consistent estimator of σ for normal data.
_MAD_CONSTANT = 0.6745
# 0.7979 = √(2/π) = E|Z| for a standard normal: the mean absolute deviation's constant.
_MEANAD_CONSTANT = 0.7979


def modified_z_scores(values: SampleLike) -> npt.NDArray[np.float64]:
    """Modified z-scores M_i = 0.6745 (x_i - median) / MAD (Iglewicz & Hoaglin 1993).

    When MAD == 0 (more than half the values are identical) the mean absolute deviation from the
    median, MeanAD, is used instead: M_i = 0.7979 (x_i - median) / MeanAD. When MeanAD is also 0
    every value equals the median and every score is 0.
    """
    x = as_sample(values)
    if x.size == 0:
        return np.zeros(0, dtype=np.float64)
    med = float(np.median(x))
    dev = x - med
    mad = float(np.median(np.abs(dev)))
    if mad > 0.0:
        return _MAD_CONSTANT * dev / mad
    mean_ad = float(np.mean(np.abs(dev)))
    if mean_ad > 0.0:
        return _MEANAD_CONSTANT * dev / mean_ad
    return np.zeros(x.size, dtype=np.float64)


def mad_outliers(values: SampleLike, threshold: float = 3.5) -> npt.NDArray[np.bool_]:
    """Boolean mask: True where |modified z-score| > ``threshold`` (3.5 as recommended by
    Iglewicz & Hoaglin). See :func:`modified_z_scores` for the MAD == 0 rule."""
    if threshold <= 0:
        raise ValueError(f"threshold: must be positive, got {threshold!r}")
    return np.asarray(np.abs(modified_z_scores(values)) > threshold, dtype=np.bool_)
