"""Shapiro–Wilk and Mann–Whitney U without scipy.

Why this module exists: importing scipy.stats costs about 0.9 CPU-s, more than `virtbench report`
may spend starting up, and the report's significance test needs only these two tests from it.
They are rebuilt here from the published algorithms on the standard library and numpy (scipy is
not imported, not even lazily), and tests/unit/stats/test_rank_tests.py checks them against
scipy.stats.shapiro and scipy.stats.mannwhitneyu(alternative="two-sided") over many samples.

shapiro_wilk is Royston's AS R94 (Applied Statistics 44, 1995), the algorithm scipy's swilk
implements: W from approximate expected normal order statistics (AS 111's normal quantile, as
R94 specifies) corrected by Royston's polynomials for the two extreme coefficients; the p-value
exact for n = 3 and from Royston's normalising transformations of W for 4 ≤ n ≤ 11 and n ≥ 12.
Only the normal tail area differs from scipy's (distributions.norm_sf instead of AS 66: they
agree to 2e-8 relative).

mann_whitney_u is scipy's method="auto" with use_continuity=True: the exact null distribution
of U when there are no ties and a sample has at most 8 values, the normal approximation with
the tie-corrected variance and the continuity correction otherwise.
"""

from __future__ import annotations

import math
from itertools import accumulate

import numpy as np
import numpy.typing as npt

from virtbench.stats.distributions import norm_sf

__all__ = ["mann_whitney_u", "shapiro_wilk"]

FloatArray = npt.NDArray[np.float64]

# AS 111 (Beasley & Springer 1977), the normal quantile R94 places its scores with. An exact
# quantile (statistics.NormalDist) moves W by up to 7e-10 relative: not scipy's W.
_PPND_SPLIT = 0.42
_PPND_A = (2.50662823884, -18.61500062529, 41.39119773534, -25.44106049637)
_PPND_B = (-8.47351093090, 23.08336743743, -21.06224101826, 3.13082909833)
_PPND_C = (-2.78718931138, -2.29796479134, 4.85014127135, 2.32121276858)
_PPND_D = (3.54388924762, 1.63706781897)

# Royston's polynomials (R94), ascending powers: the two extreme coefficients in 1/√n ...
_C1 = (0.0, 0.221157, -0.147981, -2.07119, 4.434685, -2.706056)
_C2 = (0.0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633)
# ... mean and log sd of the normalised W: in n for 4 ≤ n ≤ 11 (after -log(γ - log(1 - W)),
# γ linear in n) ...
_C3 = (0.544, -0.39978, 0.025054, -6.714e-4)
_C4 = (1.3822, -0.77857, 0.062767, -0.0020322)
_GAMMA = (-2.273, 0.459)
# ... and in log n for n ≥ 12 (of log(1 - W)).
_C5 = (-1.5861, -0.31082, -0.083751, 0.0038915)
_C6 = (-0.4803, -0.082676, 0.0030302)

# R94 gives this p when log(1 - W) reaches γ (n ≤ 11), where its transformation is undefined;
# kept for fidelity, though W's minimum, n·a₁²/(n - 1), keeps real samples below γ.
_P_BEYOND_GAMMA = 1e-19
# AS 66, scipy's tail area, returns 0 beyond 38 sd; kept so that p == 0 agrees with scipy.
_Z_UPPER_ZERO = 38.0

# scipy's method="auto" takes the exact distribution when a sample is this small (and no ties).
_EXACT_MAX_SIZE = 8


def shapiro_wilk(x: npt.ArrayLike) -> tuple[float, float]:
    """(W, p) of the Shapiro–Wilk test of normality: scipy.stats.shapiro's for 3 ≤ n ≤ 5000.

    ``x`` is a one-dimensional sequence or array of real numbers (bool, int or float; computed in
    float64); another shape or a complex or object dtype raises ValueError.

    Never raises for such a sample; where the test is undefined both values are nan:
    fewer than 3 values, a nan or an infinity in ``x`` (scipy: nan, nan for the first two, but
    nan, 1.0 for an infinity), all values equal (scipy: 1.0, 1.0 with a "range zero" warning).
    Unlike scipy, a sample whose range is below 1e-19 but not 0 is tested (the test is scale
    invariant; scipy counts it as "range zero"), and one whose range overflows float64 is scaled
    by 1/4 first (scipy: nan, 1.0). Above 5000 values W is still accurate but p is an
    extrapolation of Royston's fit (scipy computes the same and warns).
    """
    data = _real_1d(x, "x")
    n = data.size
    if n < 3 or not np.all(np.isfinite(data)):
        return math.nan, math.nan
    ordered = np.sort(data)
    if not math.isfinite(float(ordered[-1]) - float(ordered[0])):
        # a power of two: exact, so W is what the unscaled data would give without overflow
        data, ordered = data * 0.25, ordered * 0.25
    # Centred on a middle value (of the unsorted input, as scipy does: gh-15777), so that data
    # far from 0 lose no digits in the sums; W is location invariant.
    centred = ordered - data[n // 2]
    spread = float(centred[-1] - centred[0])
    if spread == 0.0:
        return math.nan, math.nan
    w, w1 = _w_statistic(centred / spread, _coefficients(n))
    if n == 3 and w < 0.75:
        # W of 3 values is at least 3/4 (two of them equal); below it only by rounding, where
        # scipy answers (0.75, 0.0)
        return 0.75, 0.0
    return w, _shapiro_p(n, w, w1)


def mann_whitney_u(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[float, float]:
    """(U of x, two-sided p) of the Mann–Whitney U test: scipy.stats.mannwhitneyu(x, y,
    alternative="two-sided") with its defaults (method="auto", use_continuity=True).

    U counts the pairs (xᵢ, yⱼ) with xᵢ > yⱼ, ties counting 1/2. The p-value is exact (no ties and
    a sample of at most 8 values) or from the normal approximation with the tie correction and
    the continuity correction; it is clipped to 1 (U at the centre of its distribution).

    ``x`` and ``y`` are one-dimensional sequences or arrays of real numbers (bool, int or float;
    computed in float64, where scipy keeps float32 in float32); another shape or a complex or
    object dtype raises ValueError. Infinities are ranked like any value. An empty sample or a
    nan anywhere gives nan, nan (as scipy does, with a warning for the empty sample).
    """
    xs, ys = _real_1d(x, "x"), _real_1d(y, "y")
    n1, n2 = xs.size, ys.size
    if n1 == 0 or n2 == 0 or np.isnan(xs).any() or np.isnan(ys).any():
        return math.nan, math.nan
    ranks, tie_sizes = _average_ranks(np.concatenate((xs, ys)))
    u1 = float(np.sum(ranks[:n1])) - n1 * (n1 + 1) / 2
    # The two-sided p is twice the upper tail at the larger of U1 and U2 = n1·n2 - U1.
    u = max(u1, n1 * n2 - u1)
    if min(n1, n2) <= _EXACT_MAX_SIZE and tie_sizes.max() == 1:
        p = _exact_two_sided_p(n1, n2, u)
    else:
        p = _normal_two_sided_p(n1, n2, u, tie_sizes)
    return u1, min(max(p, 0.0), 1.0)


def _real_1d(values: npt.ArrayLike, name: str) -> FloatArray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers, not {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, not of shape {arr.shape}")
    return arr.astype(np.float64)


# ----------------------------------------------------------------------------------------------
# Shapiro–Wilk


def _poly(coefs: tuple[float, ...], x: float) -> float:
    # Horner's scheme in R94's order of operations, so that the results are scipy's to the bit.
    acc = coefs[-1] * x
    for c in reversed(coefs[1:-1]):
        acc = (acc + c) * x
    return coefs[0] + acc


def _ppnd_lower(p: FloatArray) -> FloatArray:
    """AS 111's normal quantile of probabilities in (0, 0.5]."""
    q = p - 0.5
    r = q * q
    a0, a1, a2, a3 = _PPND_A
    b1, b2, b3, b4 = _PPND_B
    central = q * (((a3 * r + a2) * r + a1) * r + a0)
    central = central / ((((b4 * r + b3) * r + b2) * r + b1) * r + 1.0)
    out: FloatArray = central.copy()
    c0, c1, c2, c3 = _PPND_C
    d1, d2 = _PPND_D
    # The few tail points take libm's log (math.log), which is what the compiled swilk calls;
    # numpy's vectorised log may differ from it in the last bit.
    for i in np.flatnonzero(np.abs(q) > _PPND_SPLIT):
        s = math.sqrt(-math.log(float(p[i])))
        out[i] = -((((c3 * s + c2) * s + c1) * s + c0) / ((d2 * s + d1) * s + 1.0))
    return out


def _coefficients(n: int) -> FloatArray:
    """Royston's a-coefficients of the ordered sample, a[i] weighing x₍ₙ₋ᵢ₎ - x₍ᵢ₊₁₎ (i < n/2).

    The expected normal order statistics are approximated by Blom-type scores Φ⁻¹((i - 3/8) /
    (n + 1/4)); the two most extreme (one when n ≤ 5) are replaced by Royston's polynomials and
    the rest rescaled so that Σa² = 1/2 over the half (1 over the whole antisymmetric vector).
    """
    if n == 3:
        return np.array([math.sqrt(2.0) / 2.0])
    half = n // 2
    ranks = np.arange(1, half + 1, dtype=np.float64)
    m = _ppnd_lower((ranks - 0.375) / (n + 0.25))
    # Sums run in order (cumsum, not numpy's pairwise sum), as R94's loops add, to the bit.
    summ2 = float(np.cumsum(m * m)[-1]) * 2.0
    root = math.sqrt(summ2)
    rsn = 1.0 / math.sqrt(n)
    m0, m1 = float(m[0]), float(m[1])
    a1 = _poly(_C1, rsn) - m0 / root
    if n > 5:
        a2 = -m1 / root + _poly(_C2, rsn)
        fac = math.sqrt((summ2 - 2.0 * m0**2 - 2.0 * m1**2) / (1.0 - 2.0 * a1**2 - 2.0 * a2**2))
        a = m * (-1.0 / fac)
        a[1] = a2
    else:
        fac = math.sqrt((summ2 - 2.0 * m0**2) / (1.0 - 2.0 * a1**2))
        a = m * (-1.0 / fac)
    a[0] = a1
    return a


def _w_statistic(scaled: FloatArray, a: FloatArray) -> tuple[float, float]:
    """(W, 1 - W) of a sorted sample scaled to range 1: the squared correlation of the sample
    with the antisymmetric coefficient vector (-a₁, …, -aₖ, [0,] aₖ, …, a₁).

    1 - W is computed as (√(SSA·SSX) - SAX)(√(SSA·SSX) + SAX) / (SSA·SSX), not by subtracting
    W from 1, so that log(1 - W), on which the p-value rests, keeps its digits when W ≈ 1.
    """
    n = scaled.size
    half = a.size
    weights = np.zeros(n)
    weights[:half] = -a
    weights[n - half:] = a[::-1]
    da = weights - float(np.cumsum(weights)[-1]) / n
    dx = scaled - float(np.cumsum(scaled)[-1]) / n
    ssa = float(np.cumsum(da * da)[-1])
    ssx = float(np.cumsum(dx * dx)[-1])
    sax = float(np.cumsum(da * dx)[-1])
    root = math.sqrt(ssa * ssx)
    w1 = (root - sax) * (root + sax) / (ssa * ssx)
    return 1.0 - w1, w1


def _shapiro_p(n: int, w: float, w1: float) -> float:
    if n == 3:
        # exact: W of 3 normal values is distributed as cos² of a uniform angle on [0, π/6]
        return 1.0 - (6.0 / math.pi) * math.acos(math.sqrt(min(w, 1.0)))
    if not w1 > 0.0:
        return 1.0  # W = 1 (or above, by rounding): a perfect fit
    y = math.log(w1)
    if n <= 11:
        gamma = _poly(_GAMMA, n)
        if y >= gamma:
            return _P_BEYOND_GAMMA
        y = -math.log(gamma - y)
        mean, sd = _poly(_C3, n), math.exp(_poly(_C4, n))
    else:
        log_n = math.log(n)
        mean, sd = _poly(_C5, log_n), math.exp(_poly(_C6, log_n))
    z = (y - mean) / sd
    return 0.0 if z > _Z_UPPER_ZERO else norm_sf(z)


# ----------------------------------------------------------------------------------------------
# Mann–Whitney U


def _average_ranks(values: FloatArray) -> tuple[FloatArray, npt.NDArray[np.intp]]:
    """(1-based ranks with ties given their mean rank, the size of each group of equal values)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    ends = np.append(starts[1:], values.size)
    sizes = ends - starts
    ranks = np.empty(values.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, sizes)
    return ranks, sizes


def _normal_two_sided_p(n1: int, n2: int, u: float, tie_sizes: npt.NDArray[np.intp]) -> float:
    n = n1 + n2
    t = tie_sizes.astype(np.float64)
    tie_term = float(np.sum(t**3 - t))
    # Each group of t tied values takes (t³ - t)/12 off Σ of squared rank deviations.
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if not var > 0.0:
        return 1.0  # all values equal: U = n1·n2/2 exactly, no evidence either way
    # U is the larger statistic, so the continuity correction moves it half a step inwards.
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return 2.0 * norm_sf(z)


def _exact_two_sided_p(n1: int, n2: int, u: float) -> float:
    """2·P(U ≥ u) under the null hypothesis, from the exact counts of U (no ties, so u is whole).

    By symmetry P(U ≥ u) = P(U ≤ n1·n2 - u), the shorter sum when u ≥ n1·n2/2.
    """
    k = round(n1 * n2 - u)
    below = sum(_u_counts(min(n1, n2), max(n1, n2), k))
    return 2 * below / math.comb(n1 + n2, n1)  # int / int: correctly rounded, however large


def _u_counts(m: int, n: int, k: int) -> list[int]:
    """How many of the C(m+n, m) orderings of m x's among n y's give U = 0, 1, …, k.

    Their generating function is the Gaussian binomial coefficient ∏ᵢ₌₁ᵐ (1 - q^(n+i)) / (1 - q^i).
    It is built one factor pair at a time, truncated after q^k (both steps only look back, so
    truncation is exact), in Python integers (the counts outgrow int64 and float64's 53 bits):
    O(m·k) operations, where the textbook recurrence over (m, n) is O(m·n·k).
    """
    counts = [1] + [0] * k
    for i in range(1, m + 1):
        step = n + i
        if step <= k:
            counts[step:] = [c - lower for c, lower in zip(counts[step:], counts[: k + 1 - step],
                                                           strict=True)]
        # dividing by (1 - q^i): running sums within each residue class mod i
        for r in range(min(i, k + 1)):
            counts[r::i] = list(accumulate(counts[r::i]))
    return counts
