"""Normal, Student t, chi-square and binomial distribution functions, without scipy.

Why this module exists: importing scipy.special costs about 0.35 CPU-s and scipy.stats about
0.9 s, and those imports set the floor of the command line's start-up even for commands that
evaluate a single quantile. The package needs only the handful of functions below, so they are
written here from published algorithms, on the standard library alone (numpy is imported only by
the two array functions, which callers use with numpy arrays in hand). Each is checked against
the scipy function it stands for in tests/unit/stats/test_distributions.py, to a relative error
of 1e-9 asserted (1e-13 or better against exact values) from the centre out to tails of 1e-300.

Methods (see the docstrings for the details):

* normal: ``math.erfc`` and ``statistics.NormalDist.inv_cdf`` (Wichura's AS 241);
* Student t: the regularized incomplete beta function I_x(ν/2, ½) by its continued fraction
  (DLMF 8.17.22, modified Lentz), with the symmetry swap so that whichever of the tail and the
  centre is small is computed directly; from ν = 30 on, the tail comes from the expansion of
  DiDonato & Morris (1992, eq. 9, "BGRAT") instead, except far out, because near the mean the
  continued fraction loses about ν·ε; quantiles by Halley steps in ln t on the log
  probability, inside a bracket;
* chi-square: the regularized incomplete gamma function (its power series below the mean, the
  Legendre continued fraction above), inverted the same way from a Wilson–Hilferty start;
* binomial: Loader's (2000) saddle-point form of the probability mass, summed outwards from k
  over the smaller tail; the quantile by a search over k from a Cornish–Fisher start.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from statistics import NormalDist

    import numpy as np
    import numpy.typing as npt

__all__ = [
    "binom_cdf",
    "binom_ppf",
    "chi2_isf",
    "norm_cdf",
    "norm_ppf",
    "norm_sf",
    "t_cdf",
    "t_ppf",
    "t_ppf_array",
    "t_sf",
    "t_sf_array",
]

_EPS = 2.0**-52
_TINY = 1e-300  # stands in for a zero denominator in Lentz's method
_MIN_NORMAL = sys.float_info.min
_HALF_LN_2PI = 0.5 * math.log(2.0 * math.pi)
_LN_SQRT_PI = 0.5 * math.log(math.pi)
_LN_2 = math.log(2.0)
_SQRT_PI = math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)
# Near the mean, the continued fraction's error grows as ν·ε (1e-13 at ν = 1e3, 1e-10 at 1e6):
# from this many degrees of freedom on, the t tail comes from the large-a expansion instead,
# which needs s0 = ln(1 + t²/ν) well inside its radius 2π (term n shrinks as (s0/2π)^2n) and
# T = ν/2 − ¼ large (its error beyond the radius is ~e^(−T·(2π − s0)) < 1e-27 here). Farther
# out, where s0 > 2, the fraction is fast and accurate again.
_T_SERIES_DF = 30.0
_T_SERIES_MAX_S0 = 2.0
# e^-u underflows for u above ~745: a tail whose exponent is past this is 0 in double precision.
_UNDERFLOW_EXPONENT = 760.0
_MAX_TERMS = 100_000
# The binomial quantile treats a cdf this close (relatively) to q as equal to it: the error of
# the summed cdf for small n, so that a tie that is exact in real numbers is not lost to rounding.
_TIE_SLACK = 32.0 * _EPS
_MAX_SOLVER_STEPS = 200


# --- normal ------------------------------------------------------------------------------------


def _split(a: float) -> tuple[float, float]:
    """a as hi + lo with 26-bit halves (Veltkamp), whose products are exact."""
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


_SQRT1_2_HI, _SQRT1_2_LO = _split(_SQRT1_2)
_SQRT1_2_REST = -4.833646656726457e-17  # √½ − _SQRT1_2, the constant's own rounding


def _normal_upper(w: float) -> float:
    """P(Z > w) = ½·erfc(w/√2), keeping the rounding of w/√2 out of the tail.

    erfc(z) changes by 2z·δ relatively when z moves by δ, so the half-ulp rounding of z = w/√2
    alone would cost ~z²·ε (1e-13 at a tail of 1e-286); the rounding is recovered exactly
    (Dekker's product, plus the constant's own error) and applied as a first-order correction."""
    z = w * _SQRT1_2
    tail = 0.5 * math.erfc(z)
    if not 1.0 < z < 40.0:  # a correction below ε, or a tail that underflows anyway
        return tail
    w_hi, w_lo = _split(w)
    rounding = (((w_hi * _SQRT1_2_HI - z) + w_hi * _SQRT1_2_LO + w_lo * _SQRT1_2_HI)
                + w_lo * _SQRT1_2_LO)
    delta = rounding + w * _SQRT1_2_REST  # w/√2 − z, exactly enough
    return tail - delta * math.exp(-z * z) / _SQRT_PI


def norm_cdf(x: float) -> float:
    """P(Z ≤ x) for a standard normal Z: scipy.special.ndtr (scipy.stats.norm.cdf)."""
    return _normal_upper(-x)


def norm_sf(x: float) -> float:
    """P(Z > x) for a standard normal Z, computed directly in the upper tail:
    scipy.stats.norm.sf (1 − scipy.special.ndtr without the cancellation)."""
    return _normal_upper(x)


@cache
def _std_normal() -> NormalDist:
    # statistics is imported on the first quantile, not with this module (~10 ms of imports).
    from statistics import NormalDist

    return NormalDist()


def norm_ppf(p: float) -> float:
    """The standard normal quantile: scipy.special.ndtri (scipy.stats.norm.ppf); −inf at 0,
    +inf at 1, nan outside [0, 1] or for nan."""
    if not 0.0 < p < 1.0:
        if p == 0.0:
            return -math.inf
        if p == 1.0:
            return math.inf
        return math.nan
    return _std_normal().inv_cdf(p)


# --- shared special-function pieces ----------------------------------------------------------


def _stirling_err(x: float) -> float:
    """δ(x) = lnΓ(x) − ((x − ½)·ln x − x + ½·ln 2π), x > 0: what Stirling's formula leaves out.

    Kept apart so that differences of log-gammas of large, close arguments are taken between
    the small δs rather than between lgammas of 1e13 that agree in all their digits."""
    if x >= 10.0:
        # Stirling's series through x^-15; the next term is below 1e-18 from x = 10 on
        r = 1.0 / x
        r2 = r * r
        return r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 * (
            1.0 / 1680.0 - r2 * (1.0 / 1188.0 - r2 * (691.0 / 360360.0 - r2 * (
                1.0 / 156.0 - r2 * 3617.0 / 122400.0)))))))
    return math.lgamma(x) - ((x - 0.5) * math.log(x) - x + _HALF_LN_2PI)


def _lgamma_half_excess(a: float) -> float:
    """lnΓ(a + ½) − lnΓ(a) − ½·ln a (→ −1/(8a) as a grows), for every a > 0.

    Kept apart from ½·ln a, 345 at a = 5e299, so that what multiplies the tiny y^½ of the t
    density's prefactor is not a large exponent carrying its own rounding; and for large a
    without lgamma's cancellation (at a = 5e11 each lgamma is 1.3e13)."""
    if a >= 10.0:
        return (a * math.log1p(0.5 / a) - 0.5) + _stirling_err(a + 0.5) - _stirling_err(a)
    return math.lgamma(a + 0.5) - math.lgamma(a) - 0.5 * math.log(a)


def _log1pmx(e: float) -> float:
    """ln(1 + e) − e for e > −1, without the cancellation of the two for small |e|.

    On −½ ≤ e ≤ 1, with w = e/(2 + e) (|w| ≤ ⅓) and ln(1 + e) = 2·atanh(w):
    ln(1 + e) − e = −2w²/(1 − w) + 2w³·(1/3 + w²/5 + w⁴/7 + …), whose leading term dominates."""
    if not -0.5 <= e <= 1.0:
        return math.log1p(e) - e
    w = e / (2.0 + e)
    w2 = w * w
    total = 0.0
    power = 1.0
    for k in range(40):
        contribution = power / (2 * k + 3)
        total += contribution
        if contribution <= _EPS * 0.125 * total:
            break
        power *= w2
    return -2.0 * w2 / (1.0 - w) + 2.0 * w * w2 * total


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (DLMF 8.17.22):
    I_x(a, b) = x^a (1 − x)^b / (a·B(a, b)) · _beta_cf(a, b, x), evaluated by the modified
    Lentz method. It converges quickly for x < (a + 1)/(a + b + 2) (callers swap otherwise)."""
    # 1/(1 + d1/(1 + d2/(1 + …))): Lentz on the denominator, f = 1 + d1/(1 + …)
    f = 1.0
    c = 1.0
    d = 0.0
    apb = a + b
    for m in range(_MAX_TERMS):
        # d_{2m+1} then d_{2m+2}; convergence is judged on the pair, since for large a the
        # even coefficients are tiny and a single even step would look converged
        # (as ratios: a product of two factors of a = 5e299 would overflow)
        odd = -((a + m) / (a + 2 * m)) * ((apb + m) / (a + 2 * m + 1)) * x
        d = 1.0 + odd * d
        d = 1.0 / (d if d != 0.0 else _TINY)
        c = 1.0 + odd / c
        if c == 0.0:
            c = _TINY
        delta = c * d
        m1 = m + 1
        even = (m1 / (a + 2 * m1 - 1)) * ((b - m1) / (a + 2 * m1)) * x
        d = 1.0 + even * d
        d = 1.0 / (d if d != 0.0 else _TINY)
        c = 1.0 + even / c
        if c == 0.0:
            c = _TINY
        delta *= c * d
        f *= delta
        if abs(delta - 1.0) <= _EPS:
            break
    return 1.0 / f


def _solve_increasing(fn: Callable[[float], tuple[float, float, float]], x: float) -> float:
    """The positive root of h, an increasing function of w = ln x given as
    fn(x) = (h, dh/dw, d²h/dw²), by Halley steps in w kept inside a bracket.

    The distribution functions inverted here are log-concave in w, where Newton's method
    converges from any start (at most one overshoot, then monotonically) and a power-law tail is
    a straight line; the bracket and the bisection only guard against a misbehaving step."""
    lo = 0.0  # h(lo) < 0 (0: not yet known)
    hi = math.inf  # h(hi) > 0 (inf: not yet known)
    for _ in range(_MAX_SOLVER_STEPS):
        h, h1, h2 = fn(x)
        if h == 0.0:
            return x
        if h < 0.0:
            lo = x
        else:
            hi = x
        step = math.nan
        if math.isfinite(h) and math.isfinite(h1) and h1 > 0.0:
            step = -h / h1
            correction = 0.5 * (h / h1) * (h2 / h1)
            if math.isfinite(correction) and abs(correction) < 0.5:
                step /= 1.0 - correction
        if abs(step) <= 1e-12:
            # the error left after a step this small (~|step|³ for Halley's, ~|step|² for
            # Newton's) is below the rounding of x itself
            return x * math.exp(step)
        x_next = x * math.exp(step) if abs(step) < 30.0 else math.nan
        if not lo < x_next < hi:
            if lo > 0.0 and hi < math.inf:
                x_next = math.sqrt(lo) * math.sqrt(hi)  # bisection in ln x
            else:
                x_next = x * 1e-3 if h > 0.0 else x * 1e3
            # the bracket down to two neighbouring doubles, or the root beyond their range
            if x_next in (lo, hi, 0.0, math.inf):
                return x_next
        x = x_next
    return x


# --- Student t --------------------------------------------------------------------------------


def _series_coefficients(count: int) -> tuple[float, ...]:
    """p_n, the coefficients of s^(2n) in (sinh(s/2)/(s/2))^(−½), by J. C. P. Miller's recurrence
    for the power of a series (g = f^α, g_k = Σ_j ((α + 1)·j − k)·f_j·g_(k−j) / k)."""
    f = [1.0 / (4**k * math.factorial(2 * k + 1)) for k in range(count)]  # sinh(z)/z, z = s/2
    alpha = -0.5
    g = [1.0]
    for k in range(1, count):
        g.append(sum(((alpha + 1.0) * j - k) * f[j] * g[k - j] for j in range(1, k + 1)) / k)
    return tuple(g)


_P_SERIES = _series_coefficients(40)


def _t_tail_large_df(a: float, s0: float) -> float:
    """I_x(a, ½) for large a, with s0 = −ln x: the expansion of DiDonato & Morris (1992, eq. 9).

    With s = −ln v for the beta integral's variable v and T = a − ¼, the integrand is
    e^(−T·s)·s^(−½)·(sinh(s/2)/(s/2))^(−½); expanding the last factor in powers of s² gives
    I_x(a, ½) = R·Σ p_n·Γ(½ + 2n, u)/(√π·T^(2n)) with u = T·s0 and R = Γ(a + ½)/(Γ(a)·√T).
    Term n is about p_n·s0^(2n) (p_n ~ (2π)^(−2n)): for s0 ≤ 2 and T ≥ 15 about twenty terms
    reach ε, without the continued fraction's cancellation near the mean. The leading term
    alone, erfc(√u), is Hill's (1970) normal approximation to the t tail."""
    t_big = a - 0.25
    u = t_big * s0
    if u > _UNDERFLOW_EXPONENT:
        return 0.0
    ln_r = _lgamma_half_excess(a) - 0.5 * math.log1p(-0.25 / a)  # ½·ln a − ½·ln T cancelled
    root_u = math.sqrt(u)
    gamma_m = math.erfc(root_u)  # Γ(½ + m, u)/√π at m = 0
    edge = root_u * math.exp(-u) / _SQRT_PI  # u^(½ + m)·e^(−u)/√π at m = 0
    inv_t2 = 1.0 / (t_big * t_big)
    scale = 1.0
    total = gamma_m
    m = 0
    for p_n in _P_SERIES[1:]:
        for _ in range(2):  # Γ(s + 1, u) = s·Γ(s, u) + u^s·e^(−u): all terms positive, stable
            gamma_m = (0.5 + m) * gamma_m + edge
            edge *= u
            m += 1
        scale *= inv_t2
        term = p_n * gamma_m * scale
        total += term
        if abs(term) <= 1e-17 * total:
            break
    return math.exp(ln_r) * total


def _t_parts(nu: float, t: float) -> tuple[float, float, float, float]:
    """(P(|T| > t), P(|T| < t), t·f(t), y) for 0 < t < inf and 0 < ν < inf, f the density and
    y = t²/(ν + t²). Whichever of the two probabilities is small is computed directly, the other
    as its complement, so both are accurate where they matter."""
    a = 0.5 * nu
    t2 = t * t
    q = t2 / nu
    # ln q, ln x = ln(ν/(ν + t²)) and ln y = ln(t²/(ν + t²)), each without cancellation and
    # without overflow for t² beyond the double range, and y itself directly where it can be
    in_range = _MIN_NORMAL <= t2 < math.inf and _MIN_NORMAL <= q <= 1e300
    if in_range:
        ln_q = math.log(q)
    else:
        ln_q = 2.0 * math.log(t) - math.log(nu)
        q = math.exp(min(ln_q, 700.0))
    if ln_q <= 0.0:
        ln_x = -math.log1p(q)
        ln_y = ln_q + ln_x
        y = q / (1.0 + q)
    else:
        ln_y = -math.log1p(1.0 / q)
        ln_x = ln_y - ln_q
        y = 1.0 / (1.0 + 1.0 / q)
    x = 1.0 / (1.0 + q)
    # t·f(t) = x^a·y^½/B(a, ½), as t·√(x/2)·x^a·Γ(a + ½)/(Γ(a)·√a·√π) since a·y = t²·x/2
    excess = _lgamma_half_excess(a)
    if in_range:
        pref = t * math.sqrt(0.5 * x) * math.exp(a * ln_x + excess) / _SQRT_PI
    else:
        x = math.exp(ln_x)
        y = math.exp(ln_y)
        pref = math.exp(math.log(t) + 0.5 * (ln_x - _LN_2) + a * ln_x + excess - _LN_SQRT_PI)
    if nu >= _T_SERIES_DF and t2 >= 0.5 and -ln_x <= _T_SERIES_MAX_S0:
        # the tail, less than ½ from t² = ½ on, by the expansion that stays accurate near the
        # mean where the continued fraction would lose ~ν·ε
        tail = min(_t_tail_large_df(a, -ln_x), 1.0)
        return tail, 1.0 - tail, pref, y
    if y > 1.5 / (a + 2.5):  # x below the mean of Beta(a, ½): the fraction converges fast
        tail = min(pref / a * _beta_cf(a, 0.5, x), 1.0)
        return tail, 1.0 - tail, pref, y
    center = min(2.0 * pref * _beta_cf(0.5, a, y), 1.0)  # I_y(½, a)
    return 1.0 - center, center, pref, y


def t_cdf(df: float, t: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` degrees of freedom: scipy.special.stdtr(df, t)
    (scipy.stats.t.cdf). df is any real > 0; df = inf gives the normal. nan for df ≤ 0 or nan
    arguments; t = ±inf gives 1 or 0. The lower tail (t < 0) is computed directly, relatively
    accurate far out (1e-13 at 1e-200, about ε·ln(1/P))."""
    if not df > 0.0 or math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 1.0 if t > 0.0 else 0.0
    if math.isinf(df):
        return norm_cdf(t)
    if t == 0.0:
        return 0.5
    tail, center, _, _ = _t_parts(df, abs(t))
    if t < 0.0:
        return 0.5 * tail
    return 1.0 - 0.5 * tail if tail <= center else 0.5 + 0.5 * center


def t_sf(df: float, t: float) -> float:
    """P(T > t) for Student's t: 1 − scipy.special.stdtr(df, t), i.e. stdtr(df, −t)
    (scipy.stats.t.sf), with the upper tail computed directly rather than as 1 − cdf."""
    return t_cdf(df, -t)


def _t_upper_quantile(nu: float, p: float) -> float:
    """The t > 0 with P(T > t) = p, for 0 < p < ½ and finite ν > 0."""
    alpha = 2.0 * p  # P(|T| > t)
    a = 0.5 * nu
    z = -norm_ppf(p)
    # Cornish–Fisher expansion of t in powers of 1/ν (Abramowitz & Stegun 26.7.5)
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    r = 1.0 / nu
    t_normal = z + r * (g1 + r * (g2 + r * (g3 + r * g4)))
    if alpha <= 0.5:
        ln_target = math.log(alpha)
        # far out, P(|T| > t) ≈ 2·ν^(ν/2 − 1)·t^(−ν)/B(a, ½): a power law, exact in ln t
        ln_beta = _LN_SQRT_PI - _lgamma_half_excess(a) - 0.5 * math.log(a)
        ln_t_power = (_LN_2 + (a - 1.0) * math.log(nu) - ln_beta - ln_target) / nu
        # Starts good to ~1e-2 or better: the expansion in 1/ν while t² ≪ ν, the power law
        # once t² ≫ ν², and between them Hill's (1970) normal transformation, inverted:
        # z² = (ν − ½)·ln(1 + t²/ν)
        if 0.0 < t_normal < math.inf and t_normal * t_normal < 0.25 * nu:
            start = t_normal
        elif ln_t_power > math.log(nu) or nu <= 1.0:
            start = math.exp(min(ln_t_power, 700.0))
        else:
            start = math.sqrt(nu * math.expm1(min(z2 / (nu - 0.5), 700.0)))

        def tail_gap(t: float) -> tuple[float, float, float]:
            tail, _, pref, y = _t_parts(nu, t)
            if tail <= 0.0:
                return math.inf, math.nan, math.nan
            d1 = -2.0 * pref / tail  # d ln P(|T| > t) / d ln t
            d2 = d1 * (1.0 - (nu + 1.0) * y) - d1 * d1
            return ln_target - math.log(tail), -d1, -d2

        return _solve_increasing(tail_gap, start)
    ln_target = math.log(1.0 - alpha)  # exact: alpha is in (½, 1)
    start = t_normal
    if not (math.isfinite(t_normal) and 0.0 < t_normal < 5.0):
        # near 0, P(|T| < t) ≈ 2·f(0)·t
        start = (1.0 - alpha) * 0.5 * math.sqrt(nu) * math.exp(
            min(_LN_SQRT_PI - _lgamma_half_excess(a) - 0.5 * math.log(a), 700.0))

    def center_gap(t: float) -> tuple[float, float, float]:
        _, center, pref, y = _t_parts(nu, t)
        if center <= 0.0:
            return -math.inf, math.nan, math.nan
        d1 = 2.0 * pref / center  # d ln P(|T| < t) / d ln t
        return math.log(center) - ln_target, d1, d1 * (1.0 - (nu + 1.0) * y) - d1 * d1

    return _solve_increasing(center_gap, start)


def t_ppf(df: float, q: float) -> float:
    """The q-quantile of Student's t with ``df`` degrees of freedom:
    scipy.special.stdtrit(df, q) (scipy.stats.t.ppf). df is any real > 0 (inf: the normal
    quantile). nan for df ≤ 0, q outside [0, 1] or nan arguments; −inf at q = 0 and +inf at
    q = 1 (as scipy.stats.t.ppf; stdtrit itself returns +inf at q = 0). For q > ½ the tail
    1 − q is formed exactly, so quantiles near 1 are as accurate as those near 0."""
    if not df > 0.0 or not 0.0 <= q <= 1.0:
        return math.nan
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    if math.isinf(df):
        return norm_ppf(q)
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -_t_upper_quantile(df, q)
    return _t_upper_quantile(df, 1.0 - q)


def t_sf_array(df: npt.ArrayLike, t: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """P(T > t) elementwise over broadcast ``df`` and ``t``: scipy.special.stdtr(df, −t)
    (scipy.stats.t.sf), with df = inf giving the normal (scipy.special.ndtr(−t)). A loop over
    t_sf: meant for the small arrays of a report, not for millions of values."""
    import numpy as np

    d, x = np.broadcast_arrays(np.asarray(df, dtype=np.float64), np.asarray(t, dtype=np.float64))
    values = [t_sf(dv, xv) for dv, xv in zip(d.ravel().tolist(), x.ravel().tolist(), strict=True)]
    return np.array(values, dtype=np.float64).reshape(d.shape)


def t_ppf_array(df: npt.ArrayLike, q: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Student's t quantiles elementwise over broadcast ``df`` and ``q`` (typically an array of
    df and one q): scipy.special.stdtrit(df, q) (scipy.stats.t.ppf), df = inf giving the normal
    quantile. A loop over t_ppf."""
    import numpy as np

    d, p = np.broadcast_arrays(np.asarray(df, dtype=np.float64), np.asarray(q, dtype=np.float64))
    values = [t_ppf(dv, pv) for dv, pv in zip(d.ravel().tolist(), p.ravel().tolist(), strict=True)]
    return np.array(values, dtype=np.float64).reshape(d.shape)


# --- chi-square -------------------------------------------------------------------------------


def _gamma_parts(a: float, y: float) -> tuple[float, float, float]:
    """(P(a, y), Q(a, y), y^a·e^(−y)/Γ(a)) for a > 0 and 0 < y < inf: the regularized
    incomplete gamma functions, the smaller computed directly (its power series below a + 1,
    the Legendre continued fraction above), and y times the gamma density."""
    if a >= 10.0:
        # a·ln y − y − lnΓ(a) as a·(ln(1 + e) − e) + …, e = y/a − 1: no cancellation between
        # terms of thousands when y ≈ a
        ln_pref = (a * _log1pmx((y - a) / a) + 0.5 * math.log(a) - _HALF_LN_2PI
                   - _stirling_err(a))
    else:
        ln_pref = a * math.log(y) - y - math.lgamma(a)
    pref = math.exp(ln_pref)
    if y < a + 1.0:
        term = 1.0 / a
        total = term
        for n in range(1, _MAX_TERMS):
            term *= y / (a + n)
            total += term
            if term <= total * _EPS * 0.25:
                break
        lower = min(pref * total, 1.0)
        return lower, 1.0 - lower, pref
    # Q = pref / (y + 1 − a − 1·(1 − a)/(y + 3 − a − 2·(2 − a)/(y + 5 − a − …))), Lentz
    b = y + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    f = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if d != 0.0 else _TINY)
        c = b + an / c
        if c == 0.0:
            c = _TINY
        delta = c * d
        f *= delta
        if abs(delta - 1.0) <= _EPS:
            break
    upper = min(pref * f, 1.0)
    return 1.0 - upper, upper, pref


def chi2_isf(df: float, p: float) -> float:
    """The x with P(χ²_df > x) = p: scipy.special.chdtri(df, p) (scipy.stats.chi2.isf).

    df is any real > 0. +inf at p = 0, 0 at p = 1; nan for df ≤ 0, infinite or nan df, and p
    outside [0, 1] or nan (as chdtri). For p > ½ the lower tail 1 − p is formed exactly and
    inverted instead, so small quantiles keep their relative accuracy."""
    if not 0.0 < df < math.inf or not 0.0 <= p <= 1.0:
        return math.nan
    if p == 0.0:
        return math.inf
    if p == 1.0:
        return 0.0
    a = 0.5 * df
    z = -norm_ppf(p)
    # Wilson–Hilferty: (χ²/df)^(1/3) is nearly normal
    base = 1.0 - 2.0 / (9.0 * df) + z * math.sqrt(2.0 / (9.0 * df))
    if p <= 0.5:
        ln_target = math.log(p)

        def upper_gap(y: float) -> tuple[float, float, float]:
            _, upper, pref = _gamma_parts(a, y)
            if upper <= 0.0:
                return math.inf, math.nan, math.nan
            d1 = -pref / upper  # d ln Q / d ln y
            d2 = d1 * (a - y) - d1 * d1
            return ln_target - math.log(upper), -d1, -d2

        # (base ≤ 0 only for df below ~1e-4, whose quantiles are all but 0)
        start = max(0.5 * df * base**3, 1e-300) if base > 0.0 else 1e-300
        return 2.0 * _solve_increasing(upper_gap, start)
    lower_p = 1.0 - p  # exact: p is in (½, 1)
    ln_target = math.log(lower_p)
    # near 0, P(a, y) ≈ y^a/Γ(a + 1)
    ln_y_power = (ln_target + math.lgamma(a + 1.0)) / a
    start = 0.5 * df * base**3 if base > 0.0 and df > 2.0 else math.exp(max(ln_y_power, -700.0))

    def lower_gap(y: float) -> tuple[float, float, float]:
        lower, _, pref = _gamma_parts(a, y)
        if lower <= 0.0:
            return -math.inf, math.nan, math.nan
        d1 = pref / lower  # d ln P / d ln y
        return math.log(lower) - ln_target, d1, d1 * (a - y) - d1 * d1

    return 2.0 * _solve_increasing(lower_gap, max(start, 1e-300))


# --- binomial ---------------------------------------------------------------------------------


def _bd0(x: float, m: float) -> float:
    """x·ln(x/m) + m − x for x, m > 0 (the deviance term of Loader's binomial), written as
    −x·(ln(1 + d) − d) with d = (m − x)/x: computed directly, the terms of thousands cancel to a
    few hundred and take ~x·ε of error with them (3e-12 of a tail probability at n = 1e5)."""
    return -x * _log1pmx((m - x) / x)


def _binom_pmf(k: int, n: int, p: float, q: float) -> float:
    """P(X = k) for X ~ Binomial(n, p), 0 ≤ k ≤ n, 0 < p < 1, q = 1 − p: Loader's (2000)
    saddle-point form, accurate to a few ε where ln C(n, k) by lgamma would lose up to 1e-10
    (n = 1e5)."""
    if k == 0:
        return math.exp(n * math.log1p(-p))
    if k == n:
        return math.exp(n * math.log(p))
    ln_core = (_stirling_err(n) - _stirling_err(k) - _stirling_err(n - k)
               - _bd0(k, n * p) - _bd0(n - k, n * q))
    return math.exp(ln_core) * math.sqrt(n / (2.0 * math.pi * k * (n - k)))


def _binom_cdf_sf(k: int, n: int, p: float) -> tuple[float, float]:
    """(P(X ≤ k), P(X > k)) for 0 ≤ k < n and 0 < p < 1, summing the tail on k's side of the
    mean outwards from k (its terms shrink geometrically: about 9 standard deviations of them
    reach ε), the other as the complement."""
    q = 1.0 - p
    if k < n * p:
        term = _binom_pmf(k, n, p, q)
        total = term
        j = k
        while j > 0:
            ratio = j * q / ((n - j + 1) * p)  # P(X = j − 1)/P(X = j), < 1 below the mean
            term *= ratio
            total += term
            j -= 1
            if term * ratio <= (1.0 - ratio) * total * _EPS * 0.125:
                break
        lower = min(total, 1.0)
        return lower, 1.0 - lower
    term = _binom_pmf(k + 1, n, p, q)
    total = term
    j = k + 1
    while j < n:
        ratio = (n - j) * p / ((j + 1) * q)  # P(X = j + 1)/P(X = j), < 1 above the mean
        term *= ratio
        total += term
        j += 1
        if term * ratio <= (1.0 - ratio) * total * _EPS * 0.125:
            break
    upper = min(total, 1.0)
    return 1.0 - upper, upper


def _binom_valid(n: float, p: float) -> bool:
    return n >= 0.0 and math.isfinite(n) and n == math.floor(n) and 0.0 <= p <= 1.0


def binom_cdf(k: float, n: float, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p): scipy.stats.binom.cdf(k, n, p).

    k is floored; 0 below 0, 1 from n on (±inf included). nan for nan arguments, n negative or
    not an integer, p outside [0, 1]. The cost grows as √(n·p·(1 − p)) (a sum of about nine
    standard deviations of terms near the mean; 0.1 ms at n = 1e5)."""
    if math.isnan(k) or not _binom_valid(n, p):
        return math.nan
    k = math.floor(k) if math.isfinite(k) else k
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    return _binom_cdf_sf(int(k), int(n), p)[0]


def binom_ppf(q: float, n: float, p: float) -> float:
    """The smallest k with P(X ≤ k) ≥ q for X ~ Binomial(n, p): scipy.stats.binom.ppf(q, n, p),
    with its conventions at the edges: −1 at q = 0 and n at q = 1 (whatever p), 0 for p = 0 and
    n for p = 1 in between; nan for nan arguments, q outside [0, 1], n negative or not an
    integer, p outside [0, 1]. A float, as scipy's (for the −1 and nan)."""
    if not 0.0 <= q <= 1.0 or not _binom_valid(n, p):
        return math.nan
    if q == 0.0:
        return -1.0
    if q == 1.0 or p == 1.0:
        return float(n)
    if p == 0.0 or n == 0.0:
        return 0.0
    count = int(n)
    upper_q = 1.0 - q  # exact for q ≥ ½

    def covers(k: int) -> bool:
        # P(X ≤ k) ≥ q, compared on the side of ½ that q is on (the tail, computed directly),
        # with ties to working precision counted as reached: q = binom_cdf(k) gives back k, and
        # so does a q a few ulps above a cdf value, as with scipy
        if k >= count:
            return True
        lower, upper = _binom_cdf_sf(k, count, p)
        if q > 0.5:
            return upper <= upper_q * (1.0 + _TIE_SLACK) or 1.0 - upper >= q
        return lower >= q * (1.0 - _TIE_SLACK)

    # Cornish–Fisher start with the continuity correction: usually within one of the answer
    mean = count * p
    sd = math.sqrt(mean * (1.0 - p))
    z = norm_ppf(q)
    guess = mean + sd * z + (1.0 - 2.0 * p) * (z * z - 1.0) / 6.0 - 0.5
    k = min(max(math.ceil(guess), 0), count)
    # gallop away from the start until the answer is bracketed, then bisect
    step = 1
    if covers(k):
        hi, lo = k, -1
        while hi > 0:
            candidate = max(hi - step, 0)
            if covers(candidate):
                hi = candidate
                step *= 2
            else:
                lo = candidate
                break
    else:
        lo, hi = k, count
        while lo < count:
            candidate = min(lo + step, count)
            if covers(candidate):
                hi = candidate
                break
            lo = candidate
            step *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if covers(mid):
            hi = mid
        else:
            lo = mid
    return float(hi)
