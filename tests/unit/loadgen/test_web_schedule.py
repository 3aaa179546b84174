"""Arrival times and per-worker URL streams (pure, seeded)."""

from __future__ import annotations

import pytest

from virtbench.loadgen.arrivals import arrival_times, url_stream


def test_constant_rate_is_the_studys_4800_samples() -> None:
    times = arrival_times(8, 600, "constant", seed=1)
    assert len(times) == 4800
    assert times[:3] == [0.0, 0.125, 0.25]
    assert times[-1] == pytest.approx(599.875)


def test_poisson_is_seeded_and_has_the_right_mean_rate() -> None:
    a = arrival_times(100, 50, "poisson", seed=3)
    b = arrival_times(100, 50, "poisson", seed=3)
    c = arrival_times(100, 50, "poisson", seed=4)
    assert a == b and a != c
    assert 4700 < len(a) < 5300  # 5000 expected; sd ≈ 71
    assert all(0 <= x < 50 for x in a) and a == sorted(a)


@pytest.mark.parametrize("args", [(0, 1, "constant"), (1, 0, "constant"), (1, 1, "bursty")])
def test_bad_schedule_arguments(args: tuple[float, float, str]) -> None:
    with pytest.raises(ValueError):
        arrival_times(*args, seed=1)


def test_workers_draw_different_sequences_from_one_seed() -> None:
    w0 = url_stream(7, 0, 300, "uniform").take(200)
    w1 = url_stream(7, 1, 300, "uniform").take(200)
    assert w0 != w1
    assert w0 == url_stream(7, 0, 300, "uniform").take(200)
    assert all(0 <= i < 300 for i in w0 + w1)


def test_sequential_workers_start_spread_over_the_list() -> None:
    assert url_stream(1, 0, 10, "sequential", workers=2).take(3) == [0, 1, 2]
    assert url_stream(1, 1, 10, "sequential", workers=2).take(3) == [5, 6, 7]


def test_empty_url_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        url_stream(1, 0, 0, "uniform")
