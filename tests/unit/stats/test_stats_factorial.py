"""Main effects and best configuration on synthetic factorial data with known effects."""

import math

import numpy as np
import pytest

from virtbench.model import Better
from virtbench.stats import best_configuration, main_effects


def _sweep(rng: np.random.Generator, n: int = 20) -> dict[frozenset[str], np.ndarray]:
    # time = 10 s, halved when flag "a" is enabled; flag "b" does nothing
    groups = {}
    for flags in ([], ["a"], ["b"], ["a", "b"]):
        mean = 10.0 * (0.5 if "a" in flags else 1.0)
        groups[frozenset(flags)] = rng.normal(mean, 0.05 * mean, n)
    return groups


def test_known_multiplicative_effects_time() -> None:
    effects = main_effects(_sweep(np.random.default_rng(31)), Better.LOWER)
    by = {e.factor: e for e in effects}
    assert [e.factor for e in effects] == ["a", "b"]
    assert by["a"].pairs == by["b"].pairs == 2
    assert by["a"].speedup == pytest.approx(2.0, rel=0.03)
    assert by["a"].ci_low <= 2.0 <= by["a"].ci_high
    assert by["b"].ci_low <= 1.0 <= by["b"].ci_high
    assert by["a"].ci_low > 1.5  # clearly an effect


def test_higher_is_better_direction() -> None:
    times = _sweep(np.random.default_rng(32))
    throughput = {k: 1.0 / v for k, v in times.items()}
    by = {e.factor: e for e in main_effects(throughput, Better.HIGHER)}
    assert by["a"].speedup == pytest.approx(2.0, rel=0.03)
    assert by["a"].ci_low <= 2.0 <= by["a"].ci_high


def test_effect_is_geometric_mean_of_pair_ratios() -> None:
    groups = {
        frozenset(): [8.0, 8.0],
        frozenset({"x"}): [4.0, 4.0],  # pair 1: 2.0
        frozenset({"y"}): [9.0, 9.0],
        frozenset({"x", "y"}): [1.0, 1.0],  # pair 2: 9.0
    }
    by = {e.factor: e for e in main_effects(groups, Better.LOWER)}
    assert by["x"].speedup == pytest.approx(math.sqrt(2.0 * 9.0))
    assert by["x"].ci_low == pytest.approx(by["x"].speedup)  # no spread, no CI width


def test_unpaired_factor_gives_nan() -> None:
    groups = {frozenset(): [1.0, 1.1], frozenset({"a"}): [0.5, 0.6], frozenset({"b", "c"}): [2.0]}
    by = {e.factor: e for e in main_effects(groups, Better.LOWER)}
    assert by["a"].pairs == 1 and not math.isnan(by["a"].speedup)
    assert by["b"].pairs == 0 and math.isnan(by["b"].speedup) and math.isnan(by["b"].ci_low)


def test_seeded_reproducibility() -> None:
    g = _sweep(np.random.default_rng(1), n=8)
    assert main_effects(g, Better.LOWER, seed=3) == main_effects(g, Better.LOWER, seed=3)


def test_best_configuration() -> None:
    g = _sweep(np.random.default_rng(33))
    best, mean = best_configuration(g, Better.LOWER)
    assert "a" in best and mean == pytest.approx(float(np.mean(g[best])))
    worst, _ = best_configuration(g, Better.HIGHER)
    assert "a" not in worst
    tie = {frozenset({"z"}): [1.0], frozenset(): [1.0]}
    assert best_configuration(tie, Better.LOWER) == (frozenset(), 1.0)
    with pytest.raises(ValueError, match="groups"):
        best_configuration({}, Better.LOWER)
    with pytest.raises(ValueError, match=r"groups\[\{a\}\]: no samples"):
        main_effects({frozenset({"a"}): []}, Better.LOWER)
