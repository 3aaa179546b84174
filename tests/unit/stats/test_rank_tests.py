"""The scipy-free Shapiro–Wilk and Mann–Whitney U (importing scipy.stats costs the CLI about a
second of start-up) give scipy.stats.shapiro's and scipy.stats.mannwhitneyu(alternative=
"two-sided")'s statistic and p-value on seeded samples of many shapes and sizes: continuous,
with ties, integers with many ties, far from 0 and tiny in scale; Shapiro–Wilk for n = 3 to 5000
(each of Royston's p-value regimes and both sides of each switch), Mann–Whitney for every pair of
sizes up to 30 with a sample of at most 9
(both sides of the exact/asymptotic switch), a grid of the larger ones and some large ones.

W and U agree to 1e-10 relative and p to 1e-6 (in practice W is scipy's to the bit and p agrees
to ~1e-10: scipy's normal tail area for Shapiro–Wilk is AS 66, ours math.erfc)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats as sps

from virtbench.stats.rank_tests import _u_counts, mann_whitney_u, shapiro_wilk

STAT_REL = 1e-10
P_REL = 1e-6

Sampler = Callable[[np.random.Generator, int], np.ndarray]

SAMPLERS: dict[str, Sampler] = {
    "normal": lambda rng, n: rng.normal(3.0, 2.0, n),
    "exponential": lambda rng, n: rng.exponential(1.0, n),
    "uniform": lambda rng, n: rng.uniform(-1.0, 1.0, n),
    "lognormal": lambda rng, n: rng.lognormal(0.0, 1.5, n),
    "rounded normal (ties)": lambda rng, n: np.round(rng.normal(0.0, 1.0, n), 1),
    "integers (many ties)": lambda rng, n: rng.integers(0, 4, n).astype(np.float64),
    "far from 0": lambda rng, n: 1e9 + rng.normal(0.0, 1.0, n),
    "tiny scale": lambda rng, n: 1e-9 * rng.normal(0.0, 1.0, n),
    "one outlier": lambda rng, n: np.append(rng.normal(0.0, 1.0, n - 1), 1e6),
}
SW_SIZES = [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20, 50, 100, 1000, 5000]


def _differs(got: float, expected: float, rel: float) -> bool:
    if math.isnan(expected) or math.isnan(got):
        return not (math.isnan(expected) and math.isnan(got))
    return got != pytest.approx(expected, rel=rel, abs=0.0)


def _sw_mismatch(x: np.ndarray, label: str) -> str | None:
    expected = sps.shapiro(x)
    w, p = shapiro_wilk(x)
    ew, ep = float(expected.statistic), float(expected.pvalue)
    if _differs(w, ew, STAT_REL) or _differs(p, ep, P_REL):
        return f"{label} n={x.size}: got W={w!r} p={p!r}, scipy W={ew!r} p={ep!r}"
    return None


def _mw_mismatch(x: np.ndarray, y: np.ndarray, label: str) -> str | None:
    expected = sps.mannwhitneyu(x, y, alternative="two-sided")
    u, p = mann_whitney_u(x, y)
    eu, ep = float(expected.statistic), float(expected.pvalue)
    if _differs(u, eu, STAT_REL) or _differs(p, ep, P_REL):
        return (f"{label} sizes={x.size},{y.size}: got U={u!r} p={p!r}, "
                f"scipy U={eu!r} p={ep!r}")
    return None


def _report(mismatches: list[str | None]) -> None:
    found = [m for m in mismatches if m is not None]
    assert not found, f"{len(found)} of {len(mismatches)} differ from scipy:\n" + "\n".join(
        found[:10])


# ----------------------------------------------------------------------------------------------
# Shapiro–Wilk


def _sw_samples(name: str) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(sorted(SAMPLERS).index(name))
    sizes = SW_SIZES + [int(n) for n in rng.integers(3, 5001, 6)]
    for n in sizes:
        for _ in range(4 if n <= 100 else 1):
            x = SAMPLERS[name](rng, n)
            if np.ptp(x) > 0.0:  # constant data is outside the test (see the edge cases)
                yield x


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_shapiro_wilk_is_scipys(name: str) -> None:
    _report([_sw_mismatch(x, name) for x in _sw_samples(name)])


def test_shapiro_wilk_of_three_values_is_scipys() -> None:
    # n = 3 has its own exact p; ties put W at its floor 3/4, where p is all cancellation
    rng = np.random.default_rng(101)
    triples = [rng.normal(0.0, 1.0, 3) for _ in range(60)]
    triples += [rng.integers(0, 3, 3).astype(np.float64) for _ in range(30)]
    triples += [np.array(t) for t in ([0.0, 0.0, 1.0], [5.0, 7.0, 7.0], [1.0, 2.0, 3.0],
                                      [0.0, 1e-3, 1.0], [-1e6, 1e6, 1e6 + 1.0])]
    _report([_sw_mismatch(x, "triple") for x in triples if np.ptp(x) > 0.0])


def test_shapiro_wilk_takes_any_real_sequence() -> None:
    for x in ([3, 1, 4, 1, 5, 9, 2, 6], [True, False, True, True, False],
              np.array([0.5, 2.5, 1.0, 7.0], dtype=np.float32), (2.0, 8.0, 1.0, 1.0, 3.0)):
        _report([_sw_mismatch(np.asarray(x), "sequence")])
        assert shapiro_wilk(x) == shapiro_wilk(np.asarray(x, dtype=np.float64))


def test_shapiro_wilk_above_5000_is_scipys() -> None:
    # p is an extrapolation of Royston's fit there (scipy warns), but both compute the same
    x = np.random.default_rng(5).normal(0.0, 1.0, 6000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _report([_sw_mismatch(x, "n > 5000")])


@pytest.mark.parametrize("x", [[], [1.0], [1.0, 2.0], [2.0] * 10, [1.0, 2.0, math.nan, 4.0],
                               [1.0, 2.0, math.inf, 4.0], [-math.inf, 0.0, 1.0, 2.0]])
def test_shapiro_wilk_is_nan_where_undefined(x: list[float]) -> None:
    # too few values, a nan or an infinity, no spread
    w, p = shapiro_wilk(x)
    assert math.isnan(w)
    assert math.isnan(p)


def test_shapiro_wilk_is_scale_invariant_where_scipy_is_not() -> None:
    rng = np.random.default_rng(9)
    for n in (4, 12, 200):
        x = rng.normal(0.0, 1.0, n)
        # a range that overflows float64: scipy gives nan there, the test its value at 1/4 scale
        huge = x / np.max(np.abs(x)) * 1.7e308
        assert math.isinf(float(huge.max()) - float(huge.min()))
        assert shapiro_wilk(huge) == shapiro_wilk(huge * 0.25)
        _report([_sw_mismatch(huge * 0.25, "quarter of an overflowing range")])
        # a range below 1e-19: scipy counts it as zero, the test as 2⁸⁰ times larger (exact)
        tiny = x * 1e-21
        assert shapiro_wilk(tiny) == shapiro_wilk(tiny * 2.0**80)
        _report([_sw_mismatch(tiny * 2.0**80, "tiny range, scaled")])


@pytest.mark.parametrize("bad", [[[1.0, 2.0], [3.0, 4.0]], 3.0, [1j, 2.0, 3.0], ["a", "b", "c"]])
def test_shapiro_wilk_rejects_what_is_not_a_real_sample(bad: Any) -> None:
    with pytest.raises(ValueError):
        shapiro_wilk(bad)


# ----------------------------------------------------------------------------------------------
# Mann–Whitney U


def test_mann_whitney_without_ties_is_scipys_for_sizes_to_30() -> None:
    # every pair of sizes with a sample of at most 9, where the exact distribution (a sample ≤ 8)
    # meets the normal one, on both sides; a grid of the pairs beyond, all normal
    rng = np.random.default_rng(21)
    beyond = [10, 11, 13, 16, 20, 25, 29, 30]
    pairs = [(n1, n2) for n1 in range(1, 31) for n2 in range(1, 31)
             if min(n1, n2) <= 9 or (n1 in beyond and n2 in beyond)]
    mismatches = []
    for n1, n2 in pairs:
        x, y = rng.normal(0.0, 1.0, n1), rng.normal(0.7, 1.0, n2)
        mismatches.append(_mw_mismatch(x, y, "continuous"))
    _report(mismatches)


def test_mann_whitney_with_ties_is_scipys() -> None:
    # ties send even small samples to the normal approximation, with the tie-corrected variance
    rng = np.random.default_rng(22)
    sizes = [1, 2, 3, 5, 8, 9, 12, 20, 30]
    mismatches = []
    for n1 in sizes:
        for n2 in sizes:
            x, y = rng.integers(0, 5, n1), rng.integers(1, 6, n2)
            mismatches.append(_mw_mismatch(x, y, "integers"))
            x, y = np.round(rng.normal(0.0, 1.0, n1), 1), np.round(rng.normal(0.3, 1.0, n2), 1)
            mismatches.append(_mw_mismatch(x, y, "rounded"))
            tied_across = rng.normal(0.0, 1.0, n1)  # no tie within x, one with y
            y = np.append(rng.normal(0.0, 1.0, n2 - 1), tied_across[0])
            mismatches.append(_mw_mismatch(tied_across, y, "one tie across"))
    _report(mismatches)


def test_mann_whitney_at_the_extremes_is_scipys() -> None:
    # identical samples (U at the centre: p clipped to 1), one sample wholly above the other
    # (the smallest p), everything tied, infinities
    rng = np.random.default_rng(23)
    mismatches = []
    for n1, n2 in [(1, 1), (1, 2), (2, 2), (3, 3), (4, 7), (8, 8), (9, 9), (8, 30), (30, 30)]:
        x, y = rng.normal(0.0, 1.0, n1), rng.normal(0.0, 1.0, n2)
        mismatches.append(_mw_mismatch(x, x.copy(), "identical") if n1 == n2 else None)
        mismatches.append(_mw_mismatch(x + 100.0, y, "x above"))
        mismatches.append(_mw_mismatch(x, y + 100.0, "y above"))
        mismatches.append(_mw_mismatch(np.full(n1, 2.0), np.full(n2, 2.0), "all tied"))
        mismatches.append(_mw_mismatch(np.append(x, math.inf), np.append(y, -math.inf), "infs"))
    _report(mismatches)


def test_mann_whitney_on_large_samples_is_scipys() -> None:
    rng = np.random.default_rng(24)
    mismatches = []
    # exact (a sample of ≤ 8, no ties) with a large other sample, then the normal approximation
    for n1, n2 in [(1, 5000), (3, 1000), (8, 300), (300, 8), (1000, 2000), (5000, 5000)]:
        x, y = rng.normal(0.0, 1.0, n1), rng.normal(0.1, 1.0, n2)
        mismatches.append(_mw_mismatch(x, y, "large"))
        mismatches.append(_mw_mismatch(x + 10.0, y, "large, x above"))
        mismatches.append(_mw_mismatch(np.round(x, 1), np.round(y, 1), "large, ties"))
    _report(mismatches)


def test_mann_whitney_takes_any_real_sequence() -> None:
    pairs: list[tuple[npt.ArrayLike, npt.ArrayLike]] = [
        ([1, 5, 3], [2, 4, 6, 8]), ([True, False], [True, True, True]),
        (np.array([0.5, 2.0], dtype=np.float32), (1.0, 3.0, 4.0))]
    for x, y in pairs:
        _report([_mw_mismatch(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                              "sequence")])
        assert mann_whitney_u(x, y) == mann_whitney_u(np.asarray(x, dtype=np.float64),
                                                      np.asarray(y, dtype=np.float64))


@pytest.mark.parametrize(("x", "y"), [([], [1.0]), ([1.0], []), ([1.0, math.nan], [2.0, 3.0]),
                                      ([1.0, 2.0], [math.nan])])
def test_mann_whitney_is_nan_for_an_empty_sample_or_a_nan(x: list[float], y: list[float]
                                                          ) -> None:
    u, p = mann_whitney_u(x, y)
    assert math.isnan(u)
    assert math.isnan(p)


@pytest.mark.parametrize("bad", [[[1.0, 2.0]], 3.0, [1j, 2.0]])
def test_mann_whitney_rejects_what_is_not_a_real_sample(bad: Any) -> None:
    with pytest.raises(ValueError):
        mann_whitney_u(bad, [1.0, 2.0])
    with pytest.raises(ValueError):
        mann_whitney_u([1.0, 2.0], bad)


@pytest.mark.parametrize(("m", "n"), [(1, 1), (1, 6), (2, 5), (3, 3), (4, 6), (5, 7)])
def test_the_exact_null_counts_are_those_of_every_arrangement(m: int, n: int) -> None:
    # by enumeration, independently of scipy: U of x is the number of y's below each x
    counts = [0] * (m * n + 1)
    for x_places in combinations(range(m + n), m):
        counts[sum(place - i for i, place in enumerate(x_places))] += 1
    assert _u_counts(m, n, m * n) == counts
    assert _u_counts(n, m, m * n) == counts
    for k in (0, 1, m * n // 2):
        assert _u_counts(m, n, k) == counts[: k + 1]
